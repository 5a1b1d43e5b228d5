/**
 * Pure `loop` domain: input validation, strict event decoding, the fold and
 * the delivery rule (the heartbeat format itself is `heartbeat.ts`). No clock,
 * timer or host access: every
 * function takes `now`, limits and plain values. Occurrence arithmetic lives in
 * `timing.ts`, shared with the dock.
 * @module dsh-plugin-loop/domain
 */
import { LoopError } from './errors.ts'
import { isRecord } from './shared/guards.ts'
import { LATEST_DATE_MS, longestIntervalSeconds } from './shared/timing.ts'
import type { LoopChange, LoopRecord, LoopView, StoredLoopChange } from './types.ts'

/** Session event type of every durable loop mutation. */
export const LOOP_CHANGE_EVENT = 'loop/change'

/** Durable protocol version written and read by this build. */
const LOOP_CHANGE_VERSION = 1

/** Prefix of every loop id. */
const LOOP_ID_PREFIX = 'loop_'

/**
 * The one loop-id rule, shared by decoding, `loop_delete`, `/loop delete` and the dock:
 * the prefix and 1–64 ASCII letters, digits, `_` or `-` (generated ids add 8 hex digits).
 * No whitespace, so the command's one-token id is always the whole id.
 */
const LOOP_ID_PATTERN = /^loop_[A-Za-z0-9_-]{1,64}$/

/**
 * Whether a value is a loop id under the one rule.
 * @param value - candidate.
 * @returns true for `loop_` plus 1–64 of `[A-Za-z0-9_-]`.
 */
export function isLoopId(value: unknown): value is string {
  return typeof value === 'string' && LOOP_ID_PATTERN.test(value)
}

/**
 * Active loops by id, in creation order (insertion order of string keys), and
 * every id the session ever used. {@link applyLoopChange} updates both in
 * place, so one change costs O(1) whatever the history. `loops` is plain JSON
 * (the projection caches it); `usedIds` is kept only where ids are allocated
 * (the runtime): the projection, which only displays, leaves it out, so a long
 * create/delete history costs it nothing.
 */
export interface LoopFoldState {
  readonly loops: Record<string, LoopRecord>
  readonly usedIds?: Set<string>
}

/** The runtime's fold: it allocates ids, so it keeps every id the session used. */
export interface TrackedLoopFold extends LoopFoldState {
  readonly usedIds: Set<string>
}

/**
 * A fresh, empty fold that tracks used ids.
 * @returns a state no one else holds.
 */
export function emptyLoopFold(): TrackedLoopFold {
  return { loops: emptyLoopTable(), usedIds: new Set() }
}

/**
 * An empty table of active loops by id. Null-prototype, which V8 keeps as a hash table from the
 * start: a plain `{}` takes a new hidden class for every new key, and a long session adds a key
 * per loop ever created, which makes a cold fold of a long log slow.
 * @returns a fresh table.
 */
export function emptyLoopTable(): Record<string, LoopRecord> {
  return Object.create(null) as Record<string, LoopRecord>
}

/**
 * The active loops in creation order.
 * @param state - a fold.
 * @returns a new array of the active records.
 */
export function activeLoops(state: LoopFoldState): LoopRecord[] {
  return Object.values(state.loops)
}

/** Limits a create is checked against; the plugin config supplies them. */
export interface LoopCreateLimits {
  /** Longest stored prompt, in characters (UTF-16 code units). */
  readonly maxPromptLength: number
}

/** Validated `loop_create` input. */
export interface LoopCreateInput {
  readonly prompt: string
  readonly time_in_seconds: number
}

/** Reject any key outside `allowed`, naming the first offender. */
function assertOnlyKeys(tool: string, args: Record<string, unknown>, allowed: readonly string[]): void {
  const unknown = Object.keys(args).find((key) => !allowed.includes(key))
  if (unknown === undefined) return
  const accepted = allowed.length === 0 ? 'no arguments' : `only ${allowed.join(' and ')}`
  throw new LoopError('invalid_arguments', `${tool} does not accept "${unknown}"; it takes ${accepted}.`)
}

/**
 * Characters a prompt may not hold, because the heartbeat must stay well-formed
 * XML 1.0 that reads back as stored: C0 controls other than TAB and LF (a lone
 * CR included: XML readers turn it into LF), DEL and C1 controls, unpaired
 * surrogates, and the noncharacters U+FFFE/U+FFFF.
 */
const FORBIDDEN_PROMPT_CHARACTER =
  /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** A visible character: anything but whitespace and invisible format characters (U+200B, U+2060, U+FEFF, …). */
const VISIBLE_CHARACTER = /[^\s\p{Cf}]/u

/** `U+0007`-style name of the code unit at `index`. */
function codeUnitName(text: string, index: number): string {
  return `U+${text.charCodeAt(index).toString(16).toUpperCase().padStart(4, '0')}`
}

/**
 * Normalize and check a prompt: CRLF becomes LF (what an XML reader of the
 * heartbeat makes of it anyway), surrounding whitespace is trimmed, forbidden
 * characters are refused (never silently dropped), and it must hold a visible character.
 * @param value - the raw prompt argument.
 * @param limits - the configured maximum length.
 * @returns the prompt as it is stored and delivered.
 * @throws LoopError `invalid_prompt`.
 */
function validatePrompt(value: unknown, limits: LoopCreateLimits): string {
  if (typeof value !== 'string' || !VISIBLE_CHARACTER.test(value)) {
    throw new LoopError(
      'invalid_prompt',
      'prompt must be a string with visible content (whitespace and invisible characters alone do not count).',
    )
  }
  const prompt = value.replace(/\r\n/g, '\n').trim()
  const forbidden = FORBIDDEN_PROMPT_CHARACTER.exec(prompt)
  if (forbidden !== null) {
    throw new LoopError(
      'invalid_prompt',
      `prompt contains the control or non-text character ${codeUnitName(prompt, forbidden.index)} at position ${forbidden.index + 1}; only printable text, tabs and line breaks are allowed.`,
    )
  }
  if (prompt.length > limits.maxPromptLength) {
    throw new LoopError(
      'prompt_too_long',
      `prompt is ${prompt.length} characters; the limit is ${limits.maxPromptLength} (plugin setting maxPromptLength). Shorten it, or point to a file the agent can read.`,
    )
  }
  return prompt
}

/**
 * Refuse an interval whose first occurrence, for a loop created at `now`, would not be a representable date.
 * @param seconds - a positive whole number of seconds.
 * @param now - creation time in epoch milliseconds.
 * @throws LoopError `invalid_interval`.
 */
export function assertIntervalFits(seconds: number, now: number): void {
  const longest = longestIntervalSeconds(now)
  if (seconds <= longest) return
  throw new LoopError(
    'invalid_interval',
    `time_in_seconds is ${seconds}, so the first heartbeat would fall after ${new Date(LATEST_DATE_MS).toISOString()}, the last date a timestamp can hold; the longest interval accepted now is ${longest} seconds.`,
  )
}

/**
 * Check an interval (§3.1: a positive safe integer) whose first occurrence is a representable date.
 * @param value - the raw `time_in_seconds` argument.
 * @param now - creation time in epoch milliseconds.
 * @returns the interval in seconds.
 * @throws LoopError `invalid_interval`.
 */
function validateInterval(value: unknown, now: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new LoopError(
      'invalid_interval',
      'time_in_seconds must be a positive whole number of seconds, for example 30.',
    )
  }
  assertIntervalFits(value, now)
  return value
}

/**
 * Validate `loop_create` arguments: a prompt with visible content within the
 * length limit, and a positive whole number of seconds whose first occurrence
 * is a representable date.
 * @param args - raw tool arguments.
 * @param limits - configured limits.
 * @param now - creation time in epoch milliseconds.
 * @returns the trimmed prompt and the interval.
 * @throws LoopError before anything is appended.
 */
export function validateCreateInput(args: unknown, limits: LoopCreateLimits, now: number): LoopCreateInput {
  if (!isRecord(args)) {
    throw new LoopError('invalid_arguments', 'loop_create takes an object { prompt, time_in_seconds }.')
  }
  assertOnlyKeys('loop_create', args, ['prompt', 'time_in_seconds'])
  const prompt = validatePrompt(args.prompt, limits)
  return { prompt, time_in_seconds: validateInterval(args.time_in_seconds, now) }
}

/**
 * Refuse a create that would exceed the per-session loop limit.
 * @param state - current fold.
 * @param maxLoopsPerSession - configured limit.
 * @throws LoopError `too_many_loops`.
 */
export function assertRoomForLoop(state: LoopFoldState, maxLoopsPerSession: number): void {
  const active = activeLoops(state).length
  if (active < maxLoopsPerSession) return
  throw new LoopError(
    'too_many_loops',
    `This session already has ${active} active loop${active === 1 ? '' : 's'}; the limit is ${maxLoopsPerSession} (plugin setting maxLoopsPerSession). Delete one with loop_delete (or /loop delete <id>) first.`,
  )
}

/**
 * Validate `loop_delete` arguments.
 * @param args - raw tool arguments.
 * @returns the id to delete.
 * @throws LoopError before anything is appended.
 */
export function validateDeleteInput(args: unknown): string {
  if (!isRecord(args)) throw new LoopError('invalid_arguments', 'loop_delete takes an object { id }.')
  assertOnlyKeys('loop_delete', args, ['id'])
  const { id } = args
  if (!isLoopId(id)) {
    throw new LoopError(
      'invalid_id',
      'id must be a loop id such as loop_1a2b3c4d (loop_ then letters, digits, _ or -); run loop_list to see them.',
    )
  }
  return id
}

/**
 * Validate `loop_list` arguments: exactly an empty object.
 * @param args - raw tool arguments.
 * @throws LoopError for anything else.
 */
export function validateListInput(args: unknown): void {
  if (!isRecord(args)) throw new LoopError('invalid_arguments', 'loop_list takes an empty object {}.')
  assertOnlyKeys('loop_list', args, [])
}

/**
 * Find an active loop of this session or fail with an input error.
 * @param state - current fold.
 * @param id - requested id.
 * @returns the active record.
 */
export function requireActiveLoop(state: LoopFoldState, id: string): LoopRecord {
  const record = Object.hasOwn(state.loops, id) ? state.loops[id] : undefined
  if (record === undefined) {
    throw new LoopError(
      'loop_not_found',
      `No active loop "${id}" in this session; run loop_list (or /loop list) to see its loops.`,
    )
  }
  return record
}

/**
 * Build the record for a new loop.
 * @param input - validated create input.
 * @param id - fresh session-local id.
 * @param now - creation time in epoch milliseconds.
 * @returns the record whose first occurrence is one interval from now.
 */
export function createLoopRecord(input: LoopCreateInput, id: string, now: number): LoopRecord {
  return {
    id,
    prompt: input.prompt,
    time_in_seconds: input.time_in_seconds,
    next_at: now + input.time_in_seconds * 1000,
  }
}

/**
 * Pick an id that this session has never used.
 * @param state - current fold, whose `usedIds` must be avoided.
 * @param randomHex - source of candidate suffixes.
 * @returns a fresh `loop_…` id.
 */
export function allocateLoopId(state: TrackedLoopFold, randomHex: () => string): string {
  for (;;) {
    const id = `${LOOP_ID_PREFIX}${randomHex()}`
    if (!state.usedIds.has(id)) return id
  }
}

/** Fail a decode with the shared diagnostic prefix. */
function corrupt(detail: string): never {
  throw new LoopError('corrupt_loop_log', `corrupt loop/change record: ${detail}`)
}

/** Whether a value is a whole number of milliseconds a log may hold (legacy records may be far in the future). */
function isStoredInstant(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
}

/** Fields a stored record may hold: today's four, and the previous build's `title` and `allow_steer`, which decoding strips. */
const RECORD_FIELDS: ReadonlySet<string> = new Set([
  'id',
  'prompt',
  'time_in_seconds',
  'next_at',
  'title',
  'allow_steer',
])

/** Leading or trailing whitespace, by the same definition as `String.prototype.trim`. */
const PADDED = /^\s|\s$/

/**
 * Decode one stored record, also stripping the previous build's `title` and `allow_steer`.
 * A record without them is returned as it is, not copied: the host deep-freezes every
 * logged event, and a million-event resume decodes every create, so no copy and no key array.
 */
function decodeRecord(value: unknown): LoopRecord {
  if (!isRecord(value)) corrupt('loop is not an object')
  let legacy = false
  for (const key in value) {
    if (!RECORD_FIELDS.has(key)) corrupt(`unexpected field "${key}"`)
    if (key === 'title' || key === 'allow_steer') legacy = true
  }
  const { id, prompt, time_in_seconds: seconds, next_at: nextAt, title, allow_steer: allowSteer } = value
  if (!isLoopId(id)) corrupt('invalid id')
  if (typeof prompt !== 'string' || prompt === '' || PADDED.test(prompt)) corrupt(`invalid prompt for ${id}`)
  // Any positive safe integer (§3.1), also one whose next occurrence no longer fits a date: it stays deletable.
  if (typeof seconds !== 'number' || !Number.isSafeInteger(seconds) || seconds <= 0)
    corrupt(`invalid time_in_seconds for ${id}`)
  if (!isStoredInstant(nextAt)) corrupt(`invalid next_at for ${id}`)
  if (!legacy) return value as unknown as LoopRecord
  if (title !== undefined && typeof title !== 'string') corrupt(`invalid legacy title for ${id}`)
  if (allowSteer !== undefined && typeof allowSteer !== 'boolean') corrupt(`invalid legacy allow_steer for ${id}`)
  return { id, prompt, time_in_seconds: seconds, next_at: nextAt }
}

/** Require exactly these keys on a change envelope, without allocating (this runs once per logged change). */
function assertChangeKeys(value: Record<string, unknown>, keys: readonly string[]): void {
  let count = 0
  for (const key in value) {
    if (!keys.includes(key)) corrupt(`unexpected field "${key}" on ${String(value.operation)}`)
    count += 1
  }
  if (count === keys.length) return
  const missing = keys.find((key) => !Object.hasOwn(value, key))
  corrupt(`missing field "${missing}" on ${String(value.operation)}`)
}

/** Check an id-bearing change field. */
function assertStoredId(value: unknown): void {
  if (!isLoopId(value)) corrupt('invalid id')
}

/**
 * Strictly decode one `loop/change` payload; anything unexpected fails closed.
 * Legacy `update` records keep their shape but lose `title` and `allow_steer`.
 * @param data - the event's `data`.
 * @returns the decoded change.
 * @throws LoopError `corrupt_loop_log`.
 */
export function decodeLoopChange(data: unknown): StoredLoopChange {
  if (!isRecord(data)) corrupt('payload is not an object')
  if (data.version !== LOOP_CHANGE_VERSION) corrupt(`unsupported version ${JSON.stringify(data.version)}`)
  switch (data.operation) {
    case 'create':
    case 'update': {
      assertChangeKeys(data, ['version', 'operation', 'loop'])
      const loop = decodeRecord(data.loop)
      // A valid change is its own decoding (see decodeRecord); only a stripped legacy record needs a new envelope.
      return loop === data.loop
        ? (data as unknown as StoredLoopChange)
        : { version: 1, operation: data.operation, loop }
    }
    case 'delete':
      assertChangeKeys(data, ['version', 'operation', 'id'])
      assertStoredId(data.id)
      return data as unknown as StoredLoopChange
    case 'dispatch':
      assertChangeKeys(data, ['version', 'operation', 'id', 'next_at'])
      if (!isStoredInstant(data.next_at)) corrupt('invalid dispatch next_at')
      assertStoredId(data.id)
      return data as unknown as StoredLoopChange
    default:
      return corrupt(`unknown operation ${JSON.stringify(data.operation)}`)
  }
}

/** The active record a transition targets, failing closed when it is not active. */
function activeTarget(state: LoopFoldState, id: string, operation: string): LoopRecord {
  const record = Object.hasOwn(state.loops, id) ? state.loops[id] : undefined
  if (record === undefined) corrupt(`${operation} targets inactive loop ${id}`)
  return record
}

/**
 * Apply one decoded change in place. Every check runs before the first write, so
 * a refused change leaves the state untouched. Mutating keeps a create O(1)
 * however many ids the session has used; callers that need a new reference
 * (the projection) wrap the result.
 * @param state - fold so far; updated in place.
 * @param change - decoded change.
 * @throws LoopError `corrupt_loop_log` for a reused id (an active one always; a deleted one where `usedIds` is kept) or a transition on an inactive loop.
 */
export function applyLoopChange(state: LoopFoldState, change: StoredLoopChange): void {
  const loops = state.loops as Record<string, LoopRecord>
  switch (change.operation) {
    case 'create':
      if (Object.hasOwn(loops, change.loop.id) || state.usedIds?.has(change.loop.id))
        corrupt(`loop id ${change.loop.id} was reused`)
      loops[change.loop.id] = change.loop
      state.usedIds?.add(change.loop.id)
      return
    case 'update':
      activeTarget(state, change.loop.id, 'update')
      loops[change.loop.id] = change.loop
      return
    case 'delete':
      activeTarget(state, change.id, 'delete')
      delete loops[change.id]
      return
    case 'dispatch':
      loops[change.id] = { ...activeTarget(state, change.id, 'dispatch'), next_at: change.next_at }
      return
  }
}

/** The minimal event shape the fold reads. */
export interface FoldableEvent {
  readonly type: string
  readonly data: unknown
}

/**
 * Fold `loop/change` events into a state, ignoring every other event type.
 * @param state - fold so far; updated in place.
 * @param events - events to apply, in log order.
 * @returns the same state.
 * @throws LoopError `corrupt_loop_log` on the first malformed record (earlier events stay applied).
 */
export function foldLoopEvents<State extends LoopFoldState>(state: State, events: Iterable<FoldableEvent>): State {
  for (const event of events) {
    if (event.type === LOOP_CHANGE_EVENT) applyLoopChange(state, decodeLoopChange(event.data))
  }
  return state
}

/**
 * The model-facing view of one record.
 * @param loop - active record.
 * @param now - read time.
 * @returns the record plus derived state and delivery mode.
 */
export function toLoopView(loop: LoopRecord, now: number): LoopView {
  return { ...loop, state: loop.next_at <= now ? 'overdue' : 'scheduled', delivery_mode: 'session-local' }
}

/**
 * Build the durable change for a create.
 * @param loop - new record.
 * @returns the v1 create change.
 */
export function createChange(loop: LoopRecord): LoopChange {
  return { version: 1, operation: 'create', loop }
}

/**
 * Build the durable change for a delete.
 * @param id - active id.
 * @returns the v1 delete change.
 */
export function deleteChange(id: string): LoopChange {
  return { version: 1, operation: 'delete', id }
}

/**
 * Build the durable change that moves a loop's schedule: after a heartbeat was sent,
 * when the occurrence coalesced into one still waiting, or when a clock correction reschedules it.
 * @param id - the loop.
 * @param nextAt - the next future occurrence.
 * @returns the v1 dispatch change.
 */
export function dispatchChange(id: string, nextAt: number): LoopChange {
  return { version: 1, operation: 'dispatch', id, next_at: nextAt }
}

/**
 * Pure `loop` domain: input validation, strict event decoding, the fold,
 * occurrence arithmetic and heartbeat rendering. No clock, timer or host access:
 * every function takes `now` and plain values.
 * @module dsh-plugin-loop/domain
 */
import { LoopError } from './errors.ts'
import type { LoopChange, LoopRecord, LoopView, StoredLoopChange } from './types.ts'

/** Session event type of every durable loop mutation. */
export const LOOP_CHANGE_EVENT = 'loop/change'

/** Durable protocol version written and read by this build. */
const LOOP_CHANGE_VERSION = 1

/** Prefix of every loop id. */
const LOOP_ID_PREFIX = 'loop_'

/** A loop id as logs may hold it: the prefix and at least one more character (generated ids add 8 hex digits). */
function isLoopId(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(LOOP_ID_PREFIX) && value.length > LOOP_ID_PREFIX.length
}

/** Active loops in creation order plus every id the session ever used. */
export interface LoopFoldState {
  readonly loops: readonly LoopRecord[]
  readonly usedIds: readonly string[]
}

/** The fold of an empty log. */
export const EMPTY_LOOP_FOLD: LoopFoldState = Object.freeze({ loops: Object.freeze([]), usedIds: Object.freeze([]) })

/** Validated `loop_create` input. */
export interface LoopCreateInput {
  readonly prompt: string
  readonly time_in_seconds: number
}

/** Whether a value is a plain object (not null, not an array). */
function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Reject any key outside `allowed`, naming the first offender. */
function assertOnlyKeys(tool: string, args: Record<string, unknown>, allowed: readonly string[]): void {
  const unknown = Object.keys(args).find((key) => !allowed.includes(key))
  if (unknown === undefined) return
  const accepted = allowed.length === 0 ? 'no arguments' : `only ${allowed.join(' and ')}`
  throw new LoopError('invalid_arguments', `${tool} does not accept "${unknown}"; it takes ${accepted}.`)
}

/**
 * Validate `loop_create` arguments: a prompt with non-whitespace content and a
 * positive safe-integer number of seconds whose first occurrence is representable.
 * @param args - raw tool arguments.
 * @param now - creation time in epoch milliseconds.
 * @returns the trimmed prompt and the interval.
 * @throws LoopError before anything is appended.
 */
export function validateCreateInput(args: unknown, now: number): LoopCreateInput {
  if (!isRecord(args)) throw new LoopError('invalid_arguments', 'loop_create takes an object { prompt, time_in_seconds }.')
  assertOnlyKeys('loop_create', args, ['prompt', 'time_in_seconds'])
  const { prompt, time_in_seconds: seconds } = args
  if (typeof prompt !== 'string' || prompt.trim() === '') {
    throw new LoopError('invalid_prompt', 'prompt must be a string with non-whitespace content.')
  }
  if (typeof seconds !== 'number' || !Number.isSafeInteger(seconds) || seconds <= 0) {
    throw new LoopError('invalid_interval', 'time_in_seconds must be a positive whole number of seconds, for example 30.')
  }
  if (!Number.isSafeInteger(now + seconds * 1000)) {
    throw new LoopError('invalid_interval', `time_in_seconds ${seconds} is too large: the next occurrence would fall outside representable time.`)
  }
  return { prompt: prompt.trim(), time_in_seconds: seconds }
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
  if (typeof id !== 'string' || id.trim() === '') {
    throw new LoopError('invalid_id', 'id must be a non-empty loop id, for example loop_1a2b3c4d; run loop_list to see them.')
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
  const record = state.loops.find((loop) => loop.id === id)
  if (record === undefined) {
    throw new LoopError('loop_not_found', `No active loop "${id}" in this session; run loop_list (or /loop list) to see its loops.`)
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
  return { id, prompt: input.prompt, time_in_seconds: input.time_in_seconds, next_at: now + input.time_in_seconds * 1000 }
}

/**
 * Pick an id that this session has never used.
 * @param state - current fold, whose `usedIds` must be avoided.
 * @param randomHex - source of candidate suffixes.
 * @returns a fresh `loop_…` id.
 */
export function allocateLoopId(state: LoopFoldState, randomHex: () => string): string {
  for (;;) {
    const id = `${LOOP_ID_PREFIX}${randomHex()}`
    if (!state.usedIds.includes(id)) return id
  }
}

/** Fail a decode with the shared diagnostic prefix. */
function corrupt(detail: string): never {
  throw new LoopError('corrupt_loop_log', `corrupt loop/change record: ${detail}`)
}

/** Decode one stored record, also stripping the previous build's `title` and `allow_steer`. */
function decodeRecord(value: unknown): LoopRecord {
  if (!isRecord(value)) corrupt('loop is not an object')
  const allowed = ['id', 'prompt', 'time_in_seconds', 'next_at', 'title', 'allow_steer']
  const extra = Object.keys(value).find((key) => !allowed.includes(key))
  if (extra !== undefined) corrupt(`unexpected field "${extra}"`)
  const { id, prompt, time_in_seconds: seconds, next_at: nextAt, title, allow_steer: allowSteer } = value
  if (!isLoopId(id)) corrupt('invalid id')
  if (typeof prompt !== 'string' || prompt.trim() === '' || prompt !== prompt.trim()) corrupt(`invalid prompt for ${id}`)
  if (typeof seconds !== 'number' || !Number.isSafeInteger(seconds) || seconds <= 0) corrupt(`invalid time_in_seconds for ${id}`)
  if (typeof nextAt !== 'number' || !Number.isSafeInteger(nextAt) || nextAt < 0) corrupt(`invalid next_at for ${id}`)
  if (title !== undefined && typeof title !== 'string') corrupt(`invalid legacy title for ${id}`)
  if (allowSteer !== undefined && typeof allowSteer !== 'boolean') corrupt(`invalid legacy allow_steer for ${id}`)
  return { id, prompt, time_in_seconds: seconds, next_at: nextAt }
}

/** Require exactly these keys on a change envelope. */
function assertChangeKeys(value: Record<string, unknown>, keys: readonly string[]): void {
  const actual = Object.keys(value)
  const extra = actual.find((key) => !keys.includes(key))
  if (extra !== undefined) corrupt(`unexpected field "${extra}" on ${String(value.operation)}`)
  const missing = keys.find((key) => !actual.includes(key))
  if (missing !== undefined) corrupt(`missing field "${missing}" on ${String(value.operation)}`)
}

/** Decode an id-bearing change field. */
function decodeId(value: unknown): string {
  if (!isLoopId(value)) corrupt('invalid id')
  return value
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
      assertChangeKeys(data, ['version', 'operation', 'loop'])
      return { version: 1, operation: 'create', loop: decodeRecord(data.loop) }
    case 'update':
      assertChangeKeys(data, ['version', 'operation', 'loop'])
      return { version: 1, operation: 'update', loop: decodeRecord(data.loop) }
    case 'delete':
      assertChangeKeys(data, ['version', 'operation', 'id'])
      return { version: 1, operation: 'delete', id: decodeId(data.id) }
    case 'dispatch': {
      assertChangeKeys(data, ['version', 'operation', 'id', 'next_at'])
      const nextAt = data.next_at
      if (typeof nextAt !== 'number' || !Number.isSafeInteger(nextAt) || nextAt < 0) corrupt('invalid dispatch next_at')
      return { version: 1, operation: 'dispatch', id: decodeId(data.id), next_at: nextAt }
    }
    default:
      return corrupt(`unknown operation ${JSON.stringify(data.operation)}`)
  }
}

/** Index of an active id, failing closed when the transition targets an inactive one. */
function activeIndex(state: LoopFoldState, id: string, operation: string): number {
  const index = state.loops.findIndex((loop) => loop.id === id)
  if (index === -1) corrupt(`${operation} targets inactive loop ${id}`)
  return index
}

/** Copy of `loops` with one position replaced. */
function replaceAt(loops: readonly LoopRecord[], index: number, record: LoopRecord): LoopRecord[] {
  return loops.map((loop, position) => (position === index ? record : loop))
}

/**
 * Apply one decoded change. Returns a new state; the input is never mutated.
 * @param state - fold so far.
 * @param change - decoded change.
 * @returns the next fold.
 * @throws LoopError `corrupt_loop_log` for a reused id or a transition on an inactive loop.
 */
export function applyLoopChange(state: LoopFoldState, change: StoredLoopChange): LoopFoldState {
  switch (change.operation) {
    case 'create':
      if (state.usedIds.includes(change.loop.id)) corrupt(`loop id ${change.loop.id} was reused`)
      return { loops: [...state.loops, change.loop], usedIds: [...state.usedIds, change.loop.id] }
    case 'update': {
      const index = activeIndex(state, change.loop.id, 'update')
      return { loops: replaceAt(state.loops, index, change.loop), usedIds: state.usedIds }
    }
    case 'delete': {
      const index = activeIndex(state, change.id, 'delete')
      return { loops: state.loops.filter((_, position) => position !== index), usedIds: state.usedIds }
    }
    case 'dispatch': {
      const index = activeIndex(state, change.id, 'dispatch')
      return { loops: replaceAt(state.loops, index, { ...state.loops[index]!, next_at: change.next_at }), usedIds: state.usedIds }
    }
  }
}

/** The minimal event shape the fold reads. */
export interface FoldableEvent {
  readonly type: string
  readonly data: unknown
}

/**
 * Fold `loop/change` events onto a state, ignoring every other event type.
 * @param state - fold so far.
 * @param events - events to apply, in log order.
 * @returns the next fold.
 * @throws LoopError `corrupt_loop_log` on the first malformed record.
 */
export function foldLoopEvents(state: LoopFoldState, events: Iterable<FoldableEvent>): LoopFoldState {
  let next = state
  for (const event of events) {
    if (event.type === LOOP_CHANGE_EVENT) next = applyLoopChange(next, decodeLoopChange(event.data))
  }
  return next
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

const XML_ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' }

/**
 * Escape the five XML special characters.
 * @param text - raw text.
 * @returns text safe inside an XML element.
 */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => XML_ESCAPES[char]!)
}

/**
 * The heartbeat text delivered for one occurrence.
 * @param loop - the due loop.
 * @returns the `<heartbeat>` element with escaped id and prompt.
 */
export function renderHeartbeat(loop: LoopRecord): string {
  return [
    '<heartbeat>',
    `  <loop_id>${escapeXml(loop.id)}</loop_id>`,
    `  <prompt>${escapeXml(loop.prompt)}</prompt>`,
    '</heartbeat>',
  ].join('\n')
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
 * Build the durable change for a dispatch.
 * @param id - dispatched id.
 * @param nextAt - the next future occurrence.
 * @returns the v1 dispatch change.
 */
export function dispatchChange(id: string, nextAt: number): LoopChange {
  return { version: 1, operation: 'dispatch', id, next_at: nextAt }
}

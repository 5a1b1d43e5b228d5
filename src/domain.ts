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

/** Longest part of an id after its prefix. */
const LONGEST_ID_SUFFIX = 64

/**
 * Whether a value is a loop id under the one rule, shared by decoding,
 * `loop_delete`, `/loop delete` and the dock: the prefix and 1–64 ASCII
 * letters, digits, `_` or `-` (generated ids add 8 hex digits). No whitespace,
 * so the command's one-token id is always the whole id. Checked by hand, not by
 * a regular expression: a cold open checks every id of a long log.
 * @param value - candidate.
 * @returns true for `loop_` plus 1–64 of `[A-Za-z0-9_-]`.
 */
export function isLoopId(value: unknown): value is string {
  if (typeof value !== 'string' || !value.startsWith(LOOP_ID_PREFIX)) return false
  const length = value.length - LOOP_ID_PREFIX.length
  if (length < 1 || length > LONGEST_ID_SUFFIX) return false
  for (let index = LOOP_ID_PREFIX.length; index < value.length; index += 1) {
    const code = value.charCodeAt(index)
    const letter = (code >= 0x61 && code <= 0x7a) || (code >= 0x41 && code <= 0x5a)
    const digit = code >= 0x30 && code <= 0x39
    if (!letter && !digit && code !== 0x5f && code !== 0x2d) return false
  }
  return true
}

/** Up to this many active loops a table finds an id by scanning; beyond it, by an index it builds then. */
const SCAN_LIMIT = 32

/**
 * Active loops in creation order. {@link records} is the plain array the
 * projection state holds (plain JSON, as projection caches require). An id is
 * found by scanning the few records a session has (a loop limit of 20 by
 * default), or, past {@link SCAN_LIMIT}, through a `Map` index. Never an object
 * keyed by id: V8 interns every property key, so an object table interned one
 * string per loop ever created, and even a `Map` hashes every id it is given:
 * on a long log's cold fold, with one id per loop ever created, that was most
 * of the fold.
 */
export class LoopTable {
  /** The active records in creation order; only this table writes it. */
  readonly records: LoopRecord[]
  /** Each active id's position, kept while the table is past {@link SCAN_LIMIT}. */
  private positions: Map<string, number> | undefined

  /**
   * @param records - active records in creation order, taken over (not copied).
   */
  constructor(records: LoopRecord[] = []) {
    this.records = records
    if (records.length > SCAN_LIMIT) this.index()
  }

  /** How many loops are active. */
  get size(): number {
    return this.records.length
  }

  /**
   * The active record with this id.
   * @param id - any string.
   * @returns the record, or undefined when no active loop has the id.
   */
  get(id: string): LoopRecord | undefined {
    const position = this.positionOf(id)
    return position < 0 ? undefined : this.records[position]
  }

  /** Append a new record (its id is not active). */
  add(record: LoopRecord): void {
    this.positions?.set(record.id, this.records.length)
    this.records.push(record)
    if (this.positions === undefined && this.records.length > SCAN_LIMIT) this.index()
  }

  /** Replace the active record with the same id, keeping its place. */
  replace(record: LoopRecord): void {
    this.records[this.positionOf(record.id)] = record
  }

  /** Remove an active record; the later ones move up (O(active), and only on a delete). */
  remove(id: string): void {
    const position = this.positionOf(id)
    const records = this.records
    // A shift by hand: `splice` is a generic builtin, slow for the one element a delete removes.
    for (let later = position + 1; later < records.length; later += 1) records[later - 1] = records[later]!
    records.pop()
    const positions = this.positions
    if (positions === undefined) return
    // Dropped well below the limit, so a table at the limit does not build and drop it on every change.
    if (this.records.length <= SCAN_LIMIT / 2) {
      this.positions = undefined
      return
    }
    positions.delete(id)
    for (let later = position; later < this.records.length; later += 1) positions.set(this.records[later]!.id, later)
  }

  /**
   * A table no one else holds, with the same records.
   * @returns the copy.
   */
  copy(): LoopTable {
    return new LoopTable(this.records.slice())
  }

  /** The position of an active id, or -1. */
  private positionOf(id: string): number {
    if (this.positions !== undefined) return this.positions.get(id) ?? -1
    const records = this.records
    for (let position = 0; position < records.length; position += 1) if (records[position]!.id === id) return position
    return -1
  }

  /** Build the id index. */
  private index(): void {
    const positions = new Map<string, number>()
    for (let position = 0; position < this.records.length; position += 1)
      positions.set(this.records[position]!.id, position)
    this.positions = positions
  }
}

/** The number a generated id (`loop_` and 8 lowercase hex digits) stands for, or -1 for any other string. */
function generatedIdValue(id: string): number {
  if (id.length !== LOOP_ID_PREFIX.length + 8 || !id.startsWith(LOOP_ID_PREFIX)) return -1
  let value = 0
  for (let index = LOOP_ID_PREFIX.length; index < id.length; index += 1) {
    const code = id.charCodeAt(index)
    const digit = code >= 48 && code <= 57 ? code - 48 : code >= 97 && code <= 102 ? code - 87 : -1
    if (digit < 0) return -1
    value = value * 16 + digit
  }
  return value
}

/** Smallest table of {@link LoopIdSet} and first capacity of {@link UsedIdLog}; a power of two. */
const FIRST_ID_SLOTS = 64

/** The base of a set not made from a {@link UsedIdLog}: no numbers. */
const NO_BASE = new Uint32Array(0)

/**
 * Every id a session used. The ids this plugin generates are held as 32-bit
 * numbers, any other id in a `Set` of strings. A long session used one id per
 * loop it ever created: hashing and storing a string each was a third of a cold
 * fold. The numbers a set was made with ({@link UsedIdLog.toSet}) stay in their
 * sorted array, shared by every copy and found by bisection; the numbers added
 * later go to an open-addressing table.
 */
export class LoopIdSet implements UsedIds {
  /** Numbers added after the base; 0 marks an empty slot, so the number 0 is {@link hasZero}. */
  private slots = new Uint32Array(FIRST_ID_SLOTS)
  private filled = 0
  private hasZero = false

  /**
   * @param base - generated ids' numbers, sorted and distinct; never written, so copies share it.
   * @param others - every other id, taken over.
   */
  constructor(
    private readonly base: Uint32Array = NO_BASE,
    private readonly others = new Set<string>(),
  ) {}

  /** How many ids the set holds. */
  get size(): number {
    return this.base.length + this.filled + (this.hasZero ? 1 : 0) + this.others.size
  }

  /**
   * Whether the set holds this id.
   * @param id - any string.
   * @returns true when it was added.
   */
  has(id: string): boolean {
    const value = generatedIdValue(id)
    if (value < 0) return this.others.has(id)
    if (this.inBase(value)) return true
    if (value === 0) return this.hasZero
    return this.slots[this.probe(value)] === value
  }

  /**
   * Add an id, in one pass over it (a fold checks and adds every id it meets).
   * @param id - any string.
   * @returns false, changing nothing, when the set held it already.
   */
  add(id: string): boolean {
    const value = generatedIdValue(id)
    if (value < 0) {
      if (this.others.has(id)) return false
      this.others.add(id)
      return true
    }
    if (this.inBase(value)) return false
    if (value === 0) {
      if (this.hasZero) return false
      this.hasZero = true
      return true
    }
    if (!this.insert(value)) return false
    this.filled += 1
    // At most half full, so a probe stays short.
    if (this.filled * 2 > this.slots.length) this.grow()
    return true
  }

  /**
   * A set no one else holds, with the same ids.
   * @returns the copy.
   */
  copy(): LoopIdSet {
    const copy = new LoopIdSet(this.base, new Set(this.others))
    copy.slots = this.slots.slice()
    copy.filled = this.filled
    copy.hasZero = this.hasZero
    return copy
  }

  /** Whether the base holds a number, by bisection. */
  private inBase(value: number): boolean {
    const base = this.base
    let low = 0
    let high = base.length
    while (low < high) {
      const middle = (low + high) >>> 1
      if (base[middle]! < value) low = middle + 1
      else high = middle
    }
    return base[low] === value
  }

  /** The slot that holds a number, or the empty slot where it would go. */
  private probe(value: number): number {
    const slots = this.slots
    const mask = slots.length - 1
    let slot = slotOf(value, slots.length)
    while (slots[slot] !== 0 && slots[slot] !== value) slot = (slot + 1) & mask
    return slot
  }

  /** Put a number in its slot; returns false when it was there already. */
  private insert(value: number): boolean {
    const slot = this.probe(value)
    if (this.slots[slot] === value) return false
    this.slots[slot] = value
    return true
  }

  /** Double the table and put every number back. */
  private grow(): void {
    const old = this.slots
    this.slots = new Uint32Array(old.length * 2)
    for (const value of old) if (value !== 0) this.insert(value)
  }
}

/**
 * The ids a fold met, in the order it met them, checked for a reuse only when a
 * set is made of them ({@link toSet}). The projection's fold of a long log meets
 * one id per loop ever created and never asks about one: appending a number is
 * far cheaper than a probe into a table as large as the session's history, and
 * one sort at the end finds a reuse as surely.
 */
export class UsedIdLog implements UsedIds {
  private generated = new Uint32Array(FIRST_ID_SLOTS)
  private count = 0
  private readonly others: string[] = []

  /**
   * Record the id of a create.
   * @param id - the created loop's id.
   * @returns true: a reuse is found only when a set is made ({@link toSet}).
   */
  add(id: string): true {
    const value = generatedIdValue(id)
    if (value < 0) {
      this.others.push(id)
      return true
    }
    if (this.count === this.generated.length) {
      const grown = new Uint32Array(this.count * 2)
      grown.set(this.generated)
      this.generated = grown
    }
    this.generated[this.count] = value
    this.count += 1
    return true
  }

  /**
   * The recorded ids as a set no one else holds.
   * @returns the set, or undefined when an id was recorded twice (a deleted id created again).
   */
  toSet(): LoopIdSet | undefined {
    const sorted = this.generated.slice(0, this.count).sort()
    for (let index = 1; index < sorted.length; index += 1) if (sorted[index] === sorted[index - 1]) return undefined
    const others = new Set(this.others)
    return others.size === this.others.length ? new LoopIdSet(sorted, others) : undefined
  }
}

/**
 * The first slot to probe for a number: Fibonacci hashing, the top bits of the
 * product, which every bit of the number moves (the low bits depend only on the
 * number's low bits, so ids alike there would share one probe run).
 * @param value - a generated id's number, not 0.
 * @param slots - the table's length, a power of two.
 */
function slotOf(value: number, slots: number): number {
  return Math.imul(value, 0x9e3779b1) >>> (Math.clz32(slots) + 1)
}

/** Where a fold keeps the ids its creates used: a {@link LoopIdSet}, or a {@link UsedIdLog} that checks them later. */
export interface UsedIds {
  /**
   * Add the id of a create.
   * @returns false, changing nothing, when the id is known to have been used before.
   */
  add(id: string): boolean
}

/**
 * The fold of a session's `loop/change` records: its active loops, and every
 * id the session ever used. {@link applyStoredChange} updates both in place, so
 * one change costs O(1) whatever the history. `usedIds` is kept only where ids
 * are allocated or handed to the runtime: a projection state restored from a
 * cache row, which only displays, has none.
 */
export interface LoopFoldState {
  readonly active: LoopTable
  readonly usedIds?: UsedIds | undefined
}

/** The runtime's fold: it allocates ids, so it keeps every id the session used. */
export interface TrackedLoopFold extends LoopFoldState {
  readonly usedIds: LoopIdSet
}

/**
 * A fresh, empty fold that tracks used ids.
 * @returns a state no one else holds.
 */
export function emptyLoopFold(): TrackedLoopFold {
  return { active: new LoopTable(), usedIds: new LoopIdSet() }
}

/**
 * The active loops in creation order.
 * @param state - a fold.
 * @returns a new array of the active records.
 */
export function activeLoops(state: LoopFoldState): LoopRecord[] {
  return state.active.records.slice()
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
  const active = state.active.size
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
  const record = state.active.get(id)
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

/**
 * Whether a value is a prompt a log may hold: non-empty and stored trimmed. `trim`
 * looks only at the ends, where a regular expression for a trailing space scans the whole prompt.
 */
function isStoredPrompt(value: unknown): value is string {
  return typeof value === 'string' && value !== '' && value.trim().length === value.length
}

/** Whether a value is an interval a log may hold: any positive safe integer (§3.1), also one whose next occurrence no longer fits a date, so it stays deletable. */
function isStoredInterval(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0
}

/** A record's fields in the order {@link createLoopRecord} writes them. */
const RECORD_KEYS: readonly string[] = ['id', 'prompt', 'time_in_seconds', 'next_at']

/** Fields a stored record may hold: today's four, and the previous build's `title` and `allow_steer`, which decoding strips. */
const RECORD_FIELDS: ReadonlySet<string> = new Set([...RECORD_KEYS, 'title', 'allow_steer'])

/**
 * Decode one stored record, also stripping the previous build's `title` and `allow_steer`.
 * A record without them is returned as it is, not copied (the host deep-freezes every logged event).
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
  if (!isStoredPrompt(prompt)) corrupt(`invalid prompt for ${id}`)
  if (!isStoredInterval(seconds)) corrupt(`invalid time_in_seconds for ${id}`)
  if (!isStoredInstant(nextAt)) corrupt(`invalid next_at for ${id}`)
  if (!legacy) return value as unknown as LoopRecord
  if (title !== undefined && typeof title !== 'string') corrupt(`invalid legacy title for ${id}`)
  if (allowSteer !== undefined && typeof allowSteer !== 'boolean') corrupt(`invalid legacy allow_steer for ${id}`)
  return { id, prompt, time_in_seconds: seconds, next_at: nextAt }
}

/** The keys of each change envelope in the order the change builders below write them. */
const RECORD_CHANGE_KEYS: readonly string[] = ['version', 'operation', 'loop']
const DELETE_CHANGE_KEYS: readonly string[] = ['version', 'operation', 'id']
const DISPATCH_CHANGE_KEYS: readonly string[] = ['version', 'operation', 'id', 'next_at']

/** Require exactly these keys on a change envelope. */
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
      assertChangeKeys(data, RECORD_CHANGE_KEYS)
      const loop = decodeRecord(data.loop)
      // A valid change is its own decoding (see decodeRecord); only a stripped legacy record needs a new envelope.
      return loop === data.loop
        ? (data as unknown as StoredLoopChange)
        : { version: 1, operation: data.operation, loop }
    }
    case 'delete':
      assertChangeKeys(data, DELETE_CHANGE_KEYS)
      assertStoredId(data.id)
      return data as unknown as StoredLoopChange
    case 'dispatch':
      assertChangeKeys(data, DISPATCH_CHANGE_KEYS)
      if (!isStoredInstant(data.next_at)) corrupt('invalid dispatch next_at')
      assertStoredId(data.id)
      return data as unknown as StoredLoopChange
    default:
      return corrupt(`unknown operation ${JSON.stringify(data.operation)}`)
  }
}

/** The active record a transition targets, failing closed when it is not active. */
function activeTarget(state: LoopFoldState, id: string, operation: string): LoopRecord {
  const record = state.active.get(id)
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
  const active = state.active
  switch (change.operation) {
    case 'create':
      // The used-id check is the last one and adds the id only when it passes.
      if (active.get(change.loop.id) !== undefined || state.usedIds?.add(change.loop.id) === false)
        corrupt(`loop id ${change.loop.id} was reused`)
      active.add(change.loop)
      return
    case 'update':
      activeTarget(state, change.loop.id, 'update')
      active.replace(change.loop)
      return
    case 'delete':
      activeTarget(state, change.id, 'delete')
      active.remove(change.id)
      return
    case 'dispatch':
      active.replace({ ...activeTarget(state, change.id, 'dispatch'), next_at: change.next_at })
      return
  }
}

/**
 * Apply a create, delete or dispatch written exactly as this build writes it
 * (its keys in their order, valid values) that applies to the fold; anything
 * else is left to {@link decodeLoopChange} and {@link applyLoopChange}, which
 * read the other forms or name the defect. The same predicates as theirs, for
 * that one form, in one function that throws nothing: nearly every record of a
 * log is in it, and a cold open of a long log checks every one while V8 is
 * still compiling the check; the strict chain of helpers that throw, compiled
 * one by one, made the projection's cold first build of a long log about a
 * third dearer. `test/domain.test.ts` holds both paths to the same answers.
 * @param state - fold so far; updated in place only when it returns true.
 * @param data - the event's `data`.
 * @returns whether the change was applied.
 */
export function applyWrittenChange(state: LoopFoldState, data: unknown): boolean {
  if (typeof data !== 'object' || data === null) return false
  const change = data as Record<string, unknown>
  if (change.version !== LOOP_CHANGE_VERSION) return false
  const active = state.active
  const operation = change.operation
  if (operation === 'create') {
    if (!hasWrittenKeys(change, RECORD_CHANGE_KEYS)) return false
    const loop = change.loop
    if (typeof loop !== 'object' || loop === null) return false
    const record = loop as Record<string, unknown>
    if (!hasWrittenKeys(record, RECORD_KEYS)) return false
    const { id, prompt, time_in_seconds: seconds, next_at: nextAt } = record
    if (!isLoopId(id) || !isStoredPrompt(prompt) || !isStoredInterval(seconds) || !isStoredInstant(nextAt)) return false
    // The used-id check is the last one and adds the id only when it passes.
    if (active.get(id) !== undefined || state.usedIds?.add(id) === false) return false
    active.add(record as unknown as LoopRecord)
    return true
  }
  if (operation === 'delete') {
    if (!hasWrittenKeys(change, DELETE_CHANGE_KEYS)) return false
    const id = change.id
    // An id an active loop has is a valid one: no other check.
    if (typeof id !== 'string' || active.get(id) === undefined) return false
    active.remove(id)
    return true
  }
  if (operation === 'dispatch') {
    if (!hasWrittenKeys(change, DISPATCH_CHANGE_KEYS)) return false
    const { id, next_at: nextAt } = change
    if (typeof id !== 'string' || !isStoredInstant(nextAt)) return false
    const target = active.get(id)
    if (target === undefined) return false
    active.replace({ ...target, next_at: nextAt })
    return true
  }
  return false
}

/** Whether an object's keys are these, in this order; a key left out shows as a field that fails its check. */
function hasWrittenKeys(value: object, keys: readonly string[]): boolean {
  let count = 0
  for (const key in value) if (key !== keys[count++]) return false
  return true
}

/**
 * Apply one stored `loop/change` payload in place, failing closed on anything
 * unexpected: the one reading of a stored change, for the projection, the
 * runtime's catch-up and the changes the runtime appends.
 * @param state - fold so far; updated in place.
 * @param data - the event's `data`.
 * @throws LoopError `corrupt_loop_log`, leaving the fold as it was.
 */
export function applyStoredChange(state: LoopFoldState, data: unknown): void {
  if (!applyWrittenChange(state, data)) applyLoopChange(state, decodeLoopChange(data))
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
    if (event.type === LOOP_CHANGE_EVENT) applyStoredChange(state, event.data)
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

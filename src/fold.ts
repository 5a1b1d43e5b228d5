/**
 * The durable `loop/change` protocol: the rules a stored record obeys, the one
 * strict decoder, the one fold that the runtime and the projection both use,
 * id allocation, and the changes this build writes. Pure: plain values in,
 * plain values out, nothing changed in place.
 * @module dsh-plugin-loop/fold
 */
import { createHash } from 'node:crypto'
import { isCount, isRecord } from './shared/guards.ts'
import type {
  LoopCreateChange,
  LoopDeleteChange,
  LoopDispatchChange,
  LoopForkChange,
  LoopRecord,
  StoredLoopChange,
} from './types.ts'

/** Session event type of every durable loop mutation. */
export const LOOP_CHANGE_EVENT = 'loop/change'

/** A loop id: `loop_` and 1–64 ASCII letters, digits, `_` or `-`; no whitespace, so `/loop delete <id>` takes it whole. */
const LOOP_ID = /^loop_[A-Za-z0-9_-]{1,64}$/

/** Whether a value has the form of a loop id, the rule decoding and `loop_delete` share. */
export function isLoopId(value: unknown): value is string {
  return typeof value === 'string' && LOOP_ID.test(value)
}

/**
 * An id this build counts with: `loop_` and 8 to 13 lowercase hex digits (13
 * digits stay below 2^53, so the number is exact). Earlier builds' random ids
 * have the same form, so new ids count up past them too.
 */
const COUNTED_ID = /^loop_([0-9a-f]{8,13})$/

/** The first number past the counted ids. */
const COUNTED_ID_LIMIT = 16 ** 13

/** The number a counted id stands for; 0 for any other id. */
function idNumber(id: string): number {
  const digits = COUNTED_ID.exec(id)?.[1]
  return digits === undefined ? 0 : Number.parseInt(digits, 16)
}

/**
 * Characters a prompt may not hold: those XML 1.0 cannot carry even escaped (C0
 * controls other than TAB, LF and CR, unpaired surrogates, U+FFFE and U+FFFF),
 * since every heartbeat is an XML element that must stay well-formed.
 */
const NON_XML_CHARACTER =
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** The first character a prompt may not hold (its position and `U+0007`-style name): the one rule for the tool and the fold. */
export function firstNonXmlCharacter(prompt: string): { readonly index: number; readonly name: string } | undefined {
  const found = NON_XML_CHARACTER.exec(prompt)
  if (found === null) return undefined
  return { index: found.index, name: `U+${prompt.charCodeAt(found.index).toString(16).toUpperCase().padStart(4, '0')}` }
}

/**
 * The fold of one session's `loop/change` records. Plain JSON (the projection's
 * state is this value), and never changed in place: every change makes a new fold.
 */
export interface LoopFold {
  /** The active loops in creation order. */
  readonly loops: readonly LoopRecord[]
  /** The highest number a counted id of this session stood for; new ids count up from it, so none is used twice. */
  readonly lastIdNumber: number
  /** The diagnostic of the first record that failed to read; from then on the fold has no loops and stays so. */
  readonly corrupt?: string
}

/** The fold of a session without loop records. */
export const EMPTY_LOOP_FOLD: LoopFold = Object.freeze({ loops: Object.freeze([]), lastIdNumber: 0 })

/**
 * The id of a session's next loop: one past the highest it used and past a start drawn from
 * the session's id, so another session's ids (a sibling's, a fork's parent's) are not this
 * one's and deleting one here is an input error. `undefined` once the counted ids are used up
 * (only a hand-edited log gets there).
 */
export function nextLoopId(fold: LoopFold, sessionId: string): string | undefined {
  const start = Number.parseInt(createHash('sha256').update(sessionId).digest('hex').slice(0, 8), 16)
  const next = Math.max(fold.lastIdNumber, start) + 1
  return next < COUNTED_ID_LIMIT ? `loop_${next.toString(16).padStart(8, '0')}` : undefined
}

/**
 * A stored record that cannot be read. A plain error, not a `LoopError`: the fold is host-free,
 * so the release command (Node alone) reads records with it; the runtime reports a corrupt
 * fold as `LoopError` `corrupt_loop_log`.
 */
export class CorruptLoopRecord extends Error {}

/** Fail a decode or a fold step with the shared diagnostic prefix. */
function corrupt(detail: string): never {
  throw new CorruptLoopRecord(`corrupt loop/change record: ${detail}`)
}

/** Require exactly these keys on an object, naming the first that differs. */
function assertKeys(value: Record<string, unknown>, keys: readonly string[], where: string): void {
  const unexpected = Object.keys(value).find((key) => !keys.includes(key))
  if (unexpected !== undefined) corrupt(`unexpected field "${unexpected}" on ${where}`)
  const missing = keys.find((key) => !Object.hasOwn(value, key))
  if (missing !== undefined) corrupt(`missing field "${missing}" on ${where}`)
}

/** A record's fields, and the previous build's `title` and `allow_steer`, which decoding strips. */
const RECORD_KEYS = ['id', 'prompt', 'time_in_seconds', 'next_at'] as const
const LEGACY_RECORD_KEYS = [...RECORD_KEYS, 'title', 'allow_steer']

/** Decode one stored record under the rules a create obeys (a stored prompt may be longer than today's limit). */
function decodeRecord(value: unknown): LoopRecord {
  if (!isRecord(value)) corrupt('loop is not an object')
  const unexpected = Object.keys(value).find((key) => !LEGACY_RECORD_KEYS.includes(key))
  if (unexpected !== undefined) corrupt(`unexpected field "${unexpected}" on loop`)
  const { id, prompt, time_in_seconds: seconds, next_at: nextAt, title, allow_steer: allowSteer } = value
  if (!isLoopId(id)) corrupt('invalid id')
  const storedPrompt =
    typeof prompt === 'string' && prompt !== '' && prompt.trim() === prompt && !firstNonXmlCharacter(prompt)
  if (!storedPrompt) corrupt(`invalid prompt for ${id}`)
  if (typeof seconds !== 'number' || !Number.isSafeInteger(seconds) || seconds < 1)
    corrupt(`invalid time_in_seconds for ${id}`)
  if (!isCount(nextAt)) corrupt(`invalid next_at for ${id}`)
  if (title !== undefined && typeof title !== 'string') corrupt(`invalid legacy title for ${id}`)
  if (allowSteer !== undefined && typeof allowSteer !== 'boolean') corrupt(`invalid legacy allow_steer for ${id}`)
  return { id, prompt, time_in_seconds: seconds, next_at: nextAt }
}

/**
 * Strictly decode one `loop/change` payload, or throw {@link CorruptLoopRecord}. The previous
 * build's `update` is read (its `title` and `allow_steer` stripped); nothing writes it.
 */
export function decodeLoopChange(data: unknown): StoredLoopChange {
  if (!isRecord(data)) corrupt('payload is not an object')
  if (data.version !== 1) corrupt(`unsupported version ${JSON.stringify(data.version)}`)
  const operation = data.operation
  switch (operation) {
    case 'create':
    case 'update':
      assertKeys(data, ['version', 'operation', 'loop'], operation)
      return { version: 1, operation, loop: decodeRecord(data.loop) }
    case 'delete':
      assertKeys(data, ['version', 'operation', 'id'], operation)
      if (!isLoopId(data.id)) corrupt('invalid id')
      return { version: 1, operation, id: data.id }
    case 'dispatch':
      assertKeys(data, ['version', 'operation', 'id', 'next_at'], operation)
      if (!isLoopId(data.id)) corrupt('invalid id')
      if (!isCount(data.next_at)) corrupt('invalid dispatch next_at')
      return { version: 1, operation, id: data.id, next_at: data.next_at }
    case 'fork': {
      assertKeys(data, ['version', 'operation', 'ids'], operation)
      const { ids } = data
      if (!Array.isArray(ids) || ids.length === 0 || !ids.every(isLoopId)) corrupt('invalid fork ids')
      return { version: 1, operation, ids: [...ids] }
    }
    default:
      return corrupt(`unknown operation ${JSON.stringify(operation)}`)
  }
}

/** Where an active loop sits, failing closed when the change targets one that is not active. */
function activeIndex(loops: readonly LoopRecord[], id: string, operation: string): number {
  const index = loops.findIndex((loop) => loop.id === id)
  if (index < 0) corrupt(`${operation} targets inactive loop ${id}`)
  return index
}

/**
 * The fold after one decoded change. A create of an active id, or a change of an
 * inactive one, throws {@link CorruptLoopRecord}; a create of an id deleted earlier starts a
 * new loop under it (this build never writes one); a fork's change drops the loops it names.
 */
export function applyLoopChange(fold: LoopFold, change: StoredLoopChange): LoopFold {
  const { loops, lastIdNumber } = fold
  switch (change.operation) {
    case 'create': {
      const { loop } = change
      if (loops.some((active) => active.id === loop.id)) corrupt(`create of active loop ${loop.id}`)
      return { loops: [...loops, loop], lastIdNumber: Math.max(lastIdNumber, idNumber(loop.id)) }
    }
    case 'update':
      return { loops: loops.with(activeIndex(loops, change.loop.id, 'update'), change.loop), lastIdNumber }
    case 'delete':
      activeIndex(loops, change.id, 'delete')
      return { loops: loops.filter((loop) => loop.id !== change.id), lastIdNumber }
    case 'dispatch': {
      const index = activeIndex(loops, change.id, 'dispatch')
      return { loops: loops.with(index, { ...loops[index]!, next_at: change.next_at }), lastIdNumber }
    }
    case 'fork':
      return { loops: loops.filter((loop) => !change.ids.includes(loop.id)), lastIdNumber }
  }
}

/**
 * Fold one stored `loop/change` payload (untrusted): the one reading of a stored change, for the
 * projection, the runtime's read of the log and the changes it appends. A corrupt fold stays as
 * it is; a record that fails to read makes it corrupt.
 */
export function foldLoopChange(fold: LoopFold, data: unknown): LoopFold {
  if (fold.corrupt !== undefined) return fold
  try {
    return applyLoopChange(fold, decodeLoopChange(data))
  } catch (error) {
    return { loops: [], lastIdNumber: fold.lastIdNumber, corrupt: (error as CorruptLoopRecord).message }
  }
}

/** The event shape the fold reads. */
export interface FoldableEvent {
  readonly type: string
  readonly data: unknown
}

/** Fold the `loop/change` events of a log from `from` (a fork's seed boundary: before it, its inheritance). */
export function foldLoopEvents(events: readonly FoldableEvent[], from = 0): LoopFold {
  let fold = EMPTY_LOOP_FOLD
  for (let index = from; index < events.length; index += 1) {
    const event = events[index]!
    if (event.type === LOOP_CHANGE_EVENT) fold = foldLoopChange(fold, event.data)
  }
  return fold
}

/** The loops a reading of a fork's whole log shows that its own fold does not: inherited, retired by no change. */
export function inheritedLoopIds(events: readonly FoldableEvent[], own: LoopFold): string[] {
  return foldLoopEvents(events)
    .loops.filter((loop) => !own.loops.some((mine) => mine.id === loop.id))
    .map((loop) => loop.id)
}

/** The durable change of a fork that names the inherited loops a whole-log reading still shows. */
export function forkChange(ids: readonly string[]): LoopForkChange {
  return { version: 1, operation: 'fork', ids }
}

/** The durable change of a new loop. */
export function createChange(loop: LoopRecord): LoopCreateChange {
  return { version: 1, operation: 'create', loop }
}

/** The durable change that deletes an active loop. */
export function deleteChange(id: string): LoopDeleteChange {
  return { version: 1, operation: 'delete', id }
}

/** The durable change that moves a loop's schedule to `nextAt`. */
export function dispatchChange(id: string, nextAt: number): LoopDispatchChange {
  return { version: 1, operation: 'dispatch', id, next_at: nextAt }
}

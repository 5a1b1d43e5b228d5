/**
 * What an rc.8 session log (session format 0) is, as a release reads it: the header, how a row
 * begins, which rows are `loop` rows, and the one frozen table of every field that names an
 * event by its seq (SPEC.md §13 "Leaving loop"). Facts only: the stages that use them are
 * `modes.ts` and `renumbering.ts`.
 * @module dsh-plugin-loop/release/log-format
 */
import { LOOP_CHANGE_EVENT } from '../fold.ts'
import { isCount, isRecord } from '../shared/guards.ts'
import { LaterFormat, LogRefusal } from './refusals.ts'

/** The session format rc.8 writes; a log of a higher one a later DSH migrated. */
const RELEASED_FORMAT = 0

/**
 * How a field names events: one earlier event, a list of them, a `{ start, end }` range, a
 * surface marker (`'append'`, or the range it replaces), "every event through", or a count of
 * the first ones.
 */
export type SeqReference = 'seq' | 'seqs' | 'range' | 'surface' | 'through' | 'count'

/** The fields of one part of a row that name events, and how. */
export type SeqFields = Readonly<Record<string, SeqReference>>

/** The envelope fields of a surface event: the range it replaces and the events it was made from. */
const SURFACE_ENVELOPE: SeqFields = Object.freeze({ surfaceOp: 'surface', sourceEventSeqs: 'seqs' })

/**
 * Every format-0 field that names an event of the same log by its seq, besides a row's own
 * `seq` (a packed chunk run's `seq0`): a fork header's count of inherited events; per event
 * type, the envelope's (rc.8's `append` writes `surfaceOp` and `sourceEventSeqs` on the surface
 * types alone) and the data's. Read from rc.8's `dsh-session` and from DSH's v0→v1 migration's
 * payload and relationship checks.
 */
export const SEQ_REFERENCES: Readonly<{
  header: SeqFields
  events: Readonly<Record<string, EventSeqFields>>
}> = Object.freeze({
  header: Object.freeze({ seedLength: 'count' }),
  events: Object.freeze({
    'user/message': Object.freeze({ envelope: SURFACE_ENVELOPE }),
    'assistant/message': Object.freeze({ envelope: SURFACE_ENVELOPE }),
    'tool/result': Object.freeze({ envelope: SURFACE_ENVELOPE }),
    'command/done': Object.freeze({ data: Object.freeze({ sourceEventSeq: 'seq' }) }),
    'compaction/prune': Object.freeze({ data: Object.freeze({ shadowedRange: 'range', shadowedSeqs: 'seqs' }) }),
    'compaction/summary': Object.freeze({ data: Object.freeze({ shadowedRange: 'range', shadowedSeqs: 'seqs' }) }),
    'session/title': Object.freeze({ data: Object.freeze({ messageSeqs: 'seqs' }) }),
    'session/title-llm-request': Object.freeze({ data: Object.freeze({ messageSeqs: 'seqs' }) }),
    'session-log-deepseek/delivery-accepted': Object.freeze({ data: Object.freeze({ throughSeq: 'through' }) }),
  }),
})

/** A parsed JSON object. */
export type JsonObject = Record<string, unknown>

/**
 * Parse one row of the log.
 * @param line - the row's text, without its newline.
 * @param where - where the row is, for the refusal.
 * @returns the row as an object.
 */
export function parseRow(line: string, where: string): JsonObject {
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch {
    throw new LogRefusal(`${where} is not valid JSON`)
  }
  if (!isRecord(value)) throw new LogRefusal(`${where} is not a JSON object`)
  return value
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * A row's text, for a row the release must parse; one that is not UTF-8 refuses the log.
 * @param row - the row's bytes.
 * @param where - where the row is, for a refusal.
 * @returns its text.
 */
export function textOf(row: Buffer, where: string): string {
  try {
    return utf8.decode(row)
  } catch {
    throw new LogRefusal(`${where} holds bytes that are not UTF-8`)
  }
}

/** A format-0 header, read once per log. */
export interface LogHeader {
  /** The session id the header names. */
  readonly id: string
  /** A fork's count of inherited events, when the session is a fork. */
  readonly seedLength: number | undefined
  /** Every field, for a header the upgrade writes again. */
  readonly fields: JsonObject
}

/**
 * Read the header line, refusing anything but a format-0 session header.
 * @param row - the first row's bytes, without its line ending.
 * @returns the session id, the fork boundary and the fields.
 * @throws LaterFormat for a log a later DSH migrated; LogRefusal for anything else that is not a format-0 header.
 */
export function readHeader(row: Buffer): LogHeader {
  const where = 'the header line'
  const fields = parseRow(textOf(row, where), where)
  if (fields['type'] !== 'session' || typeof fields['id'] !== 'string')
    throw new LogRefusal('the first line is not a session header')
  const version = fields['version']
  if (isCount(version) && version > RELEASED_FORMAT) throw new LaterFormat(fields['id'], version)
  if (version !== RELEASED_FORMAT)
    throw new LogRefusal(
      `the log's session format is ${JSON.stringify(version)}, which no DSH writes (DSH 0.1.0-rc.8 writes ${RELEASED_FORMAT})`,
    )
  const seedLength = fields['seedLength']
  if (seedLength !== undefined && !isCount(seedLength)) throw new LogRefusal('the header seedLength is not a count')
  return { id: fields['id'], seedLength, fields }
}

const QUOTE = 0x22
const BACKSLASH = 0x5c
const COMMA = 0x2c
const DIGIT_0 = 0x30
const DIGIT_9 = 0x39

/**
 * Whether `row` holds `key` at `at`, compared byte by byte (a row's head is a few bytes).
 * @param row - the row.
 * @param key - the bytes to find.
 * @param at - where.
 * @returns true when they are there.
 */
export function holdsAt(row: Buffer, key: Buffer, at: number): boolean {
  for (let index = 0; index < key.length; index += 1) if (row[at + index] !== key[index]) return false
  return true
}

/** How every row DSH writes begins: `JSON.stringify` of an event (`type`, `seq`, …) or of a packed chunk run (`type`, `seq0`, …). */
const TYPE_KEY = Buffer.from('{"type":"')
const SEQ_KEY = Buffer.from('","seq":')
const SEQ0_KEY = Buffer.from('","seq0":')

/** How a `loop/change` row begins, as DSH writes it: nothing else begins so. */
const LOOP_ROW_HEAD = Buffer.from(`{"type":"${LOOP_CHANGE_EVENT}",`)

/**
 * Whether a row is a `loop/change` row, from its first bytes.
 * @param row - the row's bytes.
 * @returns true for a `loop` row.
 */
export function isLoopRow(row: Buffer): boolean {
  return holdsAt(row, LOOP_ROW_HEAD, 0)
}

/** The head of a row: where its type ends, and its seq (a packed run's first) and where that is written. */
export interface RowHead {
  /** The byte after the type's name. */
  readonly typeEnd: number
  readonly seq: number
  /** The seq's digits: `[seqStart, seqEnd)` in the row. */
  readonly seqStart: number
  readonly seqEnd: number
}

/**
 * Read a row's head from its bytes: every row DSH writes begins with its type and seq, in that order.
 * @param row - the row's bytes.
 * @param rowNumber - which row it is, for a refusal.
 * @returns where the type ends, and the seq with its place.
 */
export function readRowHead(row: Buffer, rowNumber: number): RowHead {
  const refuse = () => new LogRefusal(`row ${rowNumber} does not begin with its type and seq as DSH writes a row`)
  if (!holdsAt(row, TYPE_KEY, 0)) throw refuse()
  let typeEnd = TYPE_KEY.length
  while (typeEnd < row.length && row[typeEnd] !== QUOTE) if (row[typeEnd++] === BACKSLASH) throw refuse()
  const key = holdsAt(row, SEQ0_KEY, typeEnd) ? SEQ0_KEY : SEQ_KEY
  if (typeEnd === TYPE_KEY.length || !holdsAt(row, key, typeEnd)) throw refuse()
  const seqStart = typeEnd + key.length
  let seqEnd = seqStart
  let seq = 0
  for (; row[seqEnd]! >= DIGIT_0 && row[seqEnd]! <= DIGIT_9; seqEnd += 1) seq = seq * 10 + row[seqEnd]! - DIGIT_0
  if (seqEnd === seqStart || row[seqEnd] !== COMMA || !Number.isSafeInteger(seq)) throw refuse()
  return { typeEnd, seq, seqStart, seqEnd }
}

/** The fields of one event type that name events, in its envelope and its data. */
export type EventSeqFields = Readonly<{ envelope?: SeqFields; data?: SeqFields }>

/** Each type of {@link SEQ_REFERENCES} with its name's bytes: a row's type is matched without decoding it. */
const TYPES_NAMING_EVENTS = Object.entries(SEQ_REFERENCES.events).map(([type, fields]) => ({
  name: Buffer.from(type),
  fields,
}))

/**
 * The fields of a row that name other events, by its type.
 * @param row - the row's bytes.
 * @param head - its head.
 * @returns the fields; `undefined` for a type whose rows name no other event.
 */
export function eventSeqFieldsOf(row: Buffer, head: RowHead): EventSeqFields | undefined {
  const length = head.typeEnd - TYPE_KEY.length
  for (const { name, fields } of TYPES_NAMING_EVENTS)
    if (name.length === length && holdsAt(row, name, TYPE_KEY.length)) return fields
  return undefined
}

/**
 * The seq after a row's last event: a row's `seq` plus one, a packed chunk run's `seq0` plus its
 * members (`texts` or `args`).
 * @param row - the row's bytes.
 * @param where - where the row is, for a refusal.
 * @returns the next seq.
 */
export function seqAfter(row: Buffer, where: string): number {
  const value = parseRow(textOf(row, where), where)
  if (isCount(value['seq'])) return value['seq'] + 1
  const data = isRecord(value['data']) ? value['data'] : {}
  const members = Array.isArray(data['texts']) ? data['texts'] : data['args']
  if (isCount(value['seq0']) && Array.isArray(members)) return value['seq0'] + members.length
  throw new LogRefusal(`${where} names no seq`)
}

/**
 * What an rc.8 session log (session format 0) holds that a release must read or rewrite:
 * the header, the row forms, and every field that names an event by its seq (SPEC.md
 * §13 "Leaving loop"). Host-free and dependency-free, so the release command runs on a
 * bare Node.
 * @module dsh-plugin-loop/release/log-format
 */

/** The event type `loop` writes: the one a release marks or removes. */
export const LOOP_CHANGE_TYPE = 'loop/change'

/** The session format rc.8 writes; a log of any other format is left as it is. */
const RELEASED_FORMAT = 0

/** How a data field names events: one earlier event, a list of them, a `{ start, end }` range, or "every event through". */
export type SeqReference = 'seq' | 'seqs' | 'range' | 'through'

/**
 * Every format-0 data field that names an event of the same log by its seq, per event type:
 * read from rc.8's `dsh-session` and from DSH's v0→v1 migration's payload and relationship
 * checks. The envelope's own references (`seq`, or a packed chunk run's `seq0`; `surfaceOp`,
 * `sourceEventSeqs`) and a fork header's `seedLength` are the same for every type (`renumberRow`,
 * `Renumbering.count`).
 */
export const SEQ_REFERENCES: Readonly<Record<string, Readonly<Record<string, SeqReference>>>> = Object.freeze({
  'command/done': Object.freeze({ sourceEventSeq: 'seq' }),
  'compaction/prune': Object.freeze({ shadowedRange: 'range', shadowedSeqs: 'seqs' }),
  'compaction/summary': Object.freeze({ shadowedRange: 'range', shadowedSeqs: 'seqs' }),
  'session/title': Object.freeze({ messageSeqs: 'seqs' }),
  'session/title-llm-request': Object.freeze({ messageSeqs: 'seqs' }),
  'session-log-deepseek/delivery-accepted': Object.freeze({ throughSeq: 'through' }),
})

/** A log a release refuses to touch, with the reason a user reads. */
export class LogRefusal extends Error {
  /**
   * @param message - what is wrong with the log, and where.
   */
  constructor(message: string) {
    super(message)
    this.name = 'LogRefusal'
  }
}

/** A log a later DSH already migrated (its format is above 0): there is nothing to release. */
export class LaterFormat extends Error {
  /**
   * @param sessionId - the session its header names.
   * @param version - its session format.
   */
  constructor(
    readonly sessionId: string,
    readonly version: number,
  ) {
    super(`session format ${version}`)
    this.name = 'LaterFormat'
  }
}

/** A parsed JSON object. */
type JsonObject = Record<string, unknown>

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

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
  if (!isObject(value)) throw new LogRefusal(`${where} is not a JSON object`)
  return value
}

/** A format-0 header as a release needs it. */
export interface LogHeader {
  /** The session id the header names. */
  readonly id: string
  /** A fork's count of inherited events, when the session is a fork. */
  readonly seedLength: number | undefined
}

/**
 * Read the header line, refusing anything but a format-0 session header.
 * @param line - the first line, without its newline.
 * @returns the session id and fork boundary.
 */
export function readHeader(line: string): LogHeader {
  const header = parseRow(line, 'the header line')
  if (header['type'] !== 'session' || typeof header['id'] !== 'string')
    throw new LogRefusal('the first line is not a session header')
  const version = header['version']
  if (typeof version === 'number' && Number.isSafeInteger(version) && version > RELEASED_FORMAT)
    throw new LaterFormat(header['id'], version)
  if (version !== RELEASED_FORMAT)
    throw new LogRefusal(
      `the log's session format is ${JSON.stringify(version)}, which no DSH writes (DSH 0.1.0-rc.8 writes ${RELEASED_FORMAT})`,
    )
  const seedLength = header['seedLength']
  if (seedLength !== undefined && !isCount(seedLength)) throw new LogRefusal('the header seedLength is not a count')
  return { id: header['id'], seedLength }
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
}

/**
 * What a row stage decides for one row: keep it as it is (`undefined`), drop it, put `insert`
 * in place of `length` bytes at `at`, or write `text` instead of it.
 */
export type RowEdit =
  | undefined
  | { readonly kind: 'drop' }
  | { readonly kind: 'splice'; readonly at: number; readonly length: number; readonly insert: string }
  | { readonly kind: 'replace'; readonly text: string }

/** The marker as the release writes it: the row's last member. */
const MARKER = ',"ignorable":true'

const CLOSE_BRACE = 0x7d
const QUOTE = 0x22
const BACKSLASH = 0x5c
const COMMA = 0x2c
const DIGIT_0 = 0x30
const DIGIT_9 = 0x39

/** Whether `row` holds `key` at `at`, compared byte by byte (a row's head is a few bytes). */
function holdsAt(row: Buffer, key: Buffer, at: number): boolean {
  for (let index = 0; index < key.length; index += 1) if (row[at + index] !== key[index]) return false
  return true
}

const MARKER_END = Buffer.from(`${MARKER}}`)

/**
 * The removal release's row stage for a `loop/change` row: it gains `"ignorable":true` as its
 * last member, every other byte of it kept. A row an earlier run marked ends with the marker.
 * @param row - the row's bytes, without its newline.
 * @param where - where the row is, for a refusal.
 * @returns the edit; none when the row is marked already.
 */
export function markRow(row: Buffer, where: string): RowEdit {
  if (holdsAt(row, MARKER_END, row.length - MARKER_END.length)) return undefined
  // DSH writes a row as `JSON.stringify` of an object, with no space after it.
  if (row.at(-1) !== CLOSE_BRACE) throw new LogRefusal(`${where} does not end as a JSON object does`)
  return { kind: 'splice', at: row.length - 1, length: 0, insert: MARKER }
}

/** How every row DSH writes begins: `JSON.stringify` of an event (`type`, `seq`, …) or of a packed chunk run (`type`, `seq0`, …). */
const TYPE_KEY = Buffer.from('{"type":"')
const SEQ_KEY = Buffer.from('","seq":')
const SEQ0_KEY = Buffer.from('","seq0":')

/** The head of a row: its type, and where its seq (a packed run's first) is written. */
export interface RowHead {
  readonly type: string
  readonly seq: number
  /** The seq's digits: `[seqStart, seqEnd)` in the row. */
  readonly seqStart: number
  readonly seqEnd: number
}

/**
 * Read a row's head from its bytes: every row DSH writes begins with its type and seq, in that order.
 * @param row - the row's bytes.
 * @param rowNumber - which row it is, for a refusal.
 * @returns the type and the seq with its place.
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
  // Types are ASCII names: latin1 reads them as they are, faster.
  return { type: row.toString('latin1', TYPE_KEY.length, typeEnd), seq, seqStart, seqEnd }
}

/**
 * The seqs of removed `loop/change` rows, in log order, and the mapping they make from an
 * old seq to the seq the same event has once they are gone.
 */
export class Renumbering {
  private readonly removed: number[] = []

  /** How many rows were removed. */
  get removedCount(): number {
    return this.removed.length
  }

  /**
   * Record a removed row. Rows come in seq order.
   * @param seq - the removed row's seq.
   */
  remove(seq: number): void {
    this.removed.push(seq)
  }

  /** How many removed rows have a seq at or below `seq` (binary search: rows come in order). */
  private removedThrough(seq: number): number {
    let low = 0
    let high = this.removed.length
    while (low < high) {
      const middle = (low + high) >>> 1
      if (this.removed[middle]! <= seq) low = middle + 1
      else high = middle
    }
    return low
  }

  /**
   * The new seq of an event known to be kept (a kept row's own).
   * @param seq - its old seq.
   * @returns its new seq.
   */
  kept(seq: number): number {
    return seq - this.removedThrough(seq)
  }

  /**
   * The new seq of a kept event a field names, refusing one that names a removed row.
   * @param seq - its old seq.
   * @param where - the field that names it, for a refusal.
   * @returns its new seq.
   */
  event(seq: unknown, where: string): number {
    if (!isCount(seq)) throw new LogRefusal(`${where} is not a seq`)
    const through = this.removedThrough(seq)
    if (through > 0 && this.removed[through - 1] === seq) throw new LogRefusal(`${where} names a loop/change row`)
    return seq - through
  }

  /**
   * The new seq of the last kept event at or before `seq` ("every event through").
   * @param seq - the old seq.
   * @param where - the field, for a refusal.
   * @returns the new seq.
   */
  through(seq: unknown, where: string): number {
    if (!isCount(seq)) throw new LogRefusal(`${where} is not a seq`)
    const renumbered = seq - this.removedThrough(seq)
    if (renumbered < 0) throw new LogRefusal(`${where} names only loop/change rows`)
    return renumbered
  }

  /**
   * The new count of the first `count` events (a fork's `seedLength`).
   * @param count - the old count.
   * @returns how many of them are kept.
   */
  count(count: number): number {
    return count - this.removedThrough(count - 1)
  }
}

/**
 * Rewrite one data field that names events.
 * @returns the field with every seq renumbered.
 */
function renumberField(value: unknown, reference: SeqReference, renumbering: Renumbering, where: string): unknown {
  switch (reference) {
    case 'seq':
      return renumbering.event(value, where)
    case 'through':
      return renumbering.through(value, where)
    case 'seqs':
      if (!Array.isArray(value)) throw new LogRefusal(`${where} is not a list of seqs`)
      return value.map((seq, index) => renumbering.event(seq, `${where}[${index}]`))
    case 'range':
      if (!isObject(value)) throw new LogRefusal(`${where} is not a range`)
      return {
        ...value,
        start: renumbering.event(value['start'], `${where}.start`),
        end: renumbering.event(value['end'], `${where}.end`),
      }
  }
}

/**
 * The types whose envelope may name other events (`sourceEventSeqs`, a surface replacement):
 * rc.8's `append` refuses either on any other type.
 */
const SURFACE_TYPES: ReadonlySet<string> = new Set(['user/message', 'assistant/message', 'tool/result'])

/**
 * The upgrade release's row stage for a kept row: its head seq, and every other seq it names,
 * renumbered. Only a row that can name other events is parsed: one whose type is in
 * {@link SEQ_REFERENCES} or a surface event, whose envelope may name its sources and a
 * replaced range; in any other row only the seq's digits change.
 * @param row - the row's bytes.
 * @param head - its head.
 * @param renumbering - the rows removed so far.
 * @param rowNumber - which row it is, for a refusal.
 * @returns the edit.
 */
export function renumberRow(row: Buffer, head: RowHead, renumbering: Renumbering, rowNumber: number): RowEdit {
  // A kept row's own seq names no removed row.
  const seq = String(renumbering.kept(head.seq))
  const fields = SEQ_REFERENCES[head.type]
  if (fields === undefined && !SURFACE_TYPES.has(head.type))
    return { kind: 'splice', at: head.seqStart, length: head.seqEnd - head.seqStart, insert: seq }
  const where = `row ${rowNumber}`
  const text = JSON.stringify(renumberReferences(parseRow(textOf(row, where), where), fields, renumbering, where))
  // JSON.stringify of the parsed row writes its head as it was, so the seq is where it was.
  return { kind: 'replace', text: `${text.slice(0, head.seqStart)}${seq}${text.slice(head.seqEnd)}` }
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

/** A parsed row with every reference but its head seq renumbered. */
function renumberReferences(
  row: JsonObject,
  fields: Readonly<Record<string, SeqReference>> | undefined,
  renumbering: Renumbering,
  where: string,
): JsonObject {
  const rewritten: JsonObject = { ...row }
  const surface = row['surfaceOp']
  if (isObject(surface))
    rewritten['surfaceOp'] = {
      ...surface,
      start: renumbering.event(surface['start'], `${where} surfaceOp.start`),
      end: renumbering.event(surface['end'], `${where} surfaceOp.end`),
    }
  if (row['sourceEventSeqs'] !== undefined)
    rewritten['sourceEventSeqs'] = renumberField(
      row['sourceEventSeqs'],
      'seqs',
      renumbering,
      `${where} sourceEventSeqs`,
    )
  const data = row['data']
  if (fields !== undefined && isObject(data)) {
    const renumbered: JsonObject = { ...data }
    for (const [field, reference] of Object.entries(fields))
      if (data[field] !== undefined)
        renumbered[field] = renumberField(data[field], reference, renumbering, `${where} data.${field}`)
    rewritten['data'] = renumbered
  }
  return rewritten
}

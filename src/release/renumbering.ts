/**
 * The upgrade's arithmetic: once `loop/change` rows are removed, the seq each kept event has,
 * and every field of {@link SEQ_REFERENCES} rewritten to match (SPEC.md §13 "Leaving loop").
 * Pure: plain values in, plain values out.
 * @module dsh-plugin-loop/release/renumbering
 */
import { isCount, isRecord } from '../shared/guards.ts'
import {
  SEQ_REFERENCES,
  eventSeqFieldsOf,
  parseRow,
  textOf,
  type JsonObject,
  type RowHead,
  type SeqFields,
  type SeqReference,
} from './log-format.ts'
import type { RowEdit } from './modes.ts'
import { LogRefusal } from './refusals.ts'

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
    // A row's own seq is past every row removed before it: no search.
    if (this.removed.length === 0 || seq >= this.removed[this.removed.length - 1]!) return this.removed.length
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
  namedEvent(seq: unknown, where: string): number {
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
   * @param where - the field, for a refusal.
   * @returns how many of them are kept.
   */
  count(count: unknown, where: string): number {
    if (!isCount(count)) throw new LogRefusal(`${where} is not a count`)
    return count - this.removedThrough(count - 1)
  }
}

/** One field that names events, renumbered. */
function renumberField(value: unknown, reference: SeqReference, renumbering: Renumbering, where: string): unknown {
  switch (reference) {
    case 'seq':
      return renumbering.namedEvent(value, where)
    case 'through':
      return renumbering.through(value, where)
    case 'count':
      return renumbering.count(value, where)
    case 'seqs':
      if (!Array.isArray(value)) throw new LogRefusal(`${where} is not a list of seqs`)
      return value.map((seq, index) => renumbering.namedEvent(seq, `${where}[${index}]`))
    case 'surface':
      return value === 'append' ? value : renumberField(value, 'range', renumbering, where)
    case 'range':
      if (!isRecord(value)) throw new LogRefusal(`${where} is not a range`)
      return {
        ...value,
        start: renumbering.namedEvent(value['start'], `${where}.start`),
        end: renumbering.namedEvent(value['end'], `${where}.end`),
      }
  }
}

/**
 * An object with each of `fields` it holds renumbered.
 * @param object - a row, its data, or the header.
 * @param fields - which of its fields name events.
 * @param renumbering - the rows removed.
 * @param where - where the object is, for a refusal.
 * @returns a new object.
 */
function renumberFields(object: JsonObject, fields: SeqFields, renumbering: Renumbering, where: string): JsonObject {
  const renumbered: JsonObject = { ...object }
  for (const [field, reference] of Object.entries(fields))
    if (object[field] !== undefined)
      renumbered[field] = renumberField(object[field], reference, renumbering, `${where}${field}`)
  return renumbered
}

/**
 * A fork's header, its count of inherited events renumbered.
 * @param header - the header's fields.
 * @param renumbering - the rows the first pass removed.
 * @returns the header row's edit.
 */
export function renumberHeader(header: JsonObject, renumbering: Renumbering): RowEdit {
  return {
    kind: 'replace',
    text: JSON.stringify(renumberFields(header, SEQ_REFERENCES.header, renumbering, 'the header ')),
  }
}

/**
 * A kept row with its own seq, and every other seq it names, renumbered. Only a row whose
 * type names other events ({@link SEQ_REFERENCES}) is parsed; in any other row only the seq's
 * digits change.
 * @param row - the row's bytes.
 * @param head - its head.
 * @param renumbering - the rows removed so far.
 * @param rowNumber - which row it is, for a refusal.
 * @returns the edit.
 */
export function renumberRow(row: Buffer, head: RowHead, renumbering: Renumbering, rowNumber: number): RowEdit {
  // A kept row's own seq names no removed row.
  const seq = String(renumbering.kept(head.seq))
  const references = eventSeqFieldsOf(row, head)
  if (references === undefined)
    return { kind: 'splice', at: head.seqStart, length: head.seqEnd - head.seqStart, insert: seq }
  const where = `row ${rowNumber}`
  let parsed = parseRow(textOf(row, where), where)
  if (references.envelope !== undefined) parsed = renumberFields(parsed, references.envelope, renumbering, `${where} `)
  const data = parsed['data']
  if (references.data !== undefined && isRecord(data))
    parsed = { ...parsed, data: renumberFields(data, references.data, renumbering, `${where} data.`) }
  const text = JSON.stringify(parsed)
  // JSON.stringify of the parsed row writes its head as it was, so the seq is where it was.
  return { kind: 'replace', text: `${text.slice(0, head.seqStart)}${seq}${text.slice(head.seqEnd)}` }
}

/**
 * How a release rewrites one log, batch by batch: each row's edit decided by the row stages of
 * `log-format.ts`, then made in one new batch. Pure: it sits between reading a file and writing
 * its replacement (SPEC.md §13 "Leaving loop").
 * @module dsh-plugin-loop/release/rewrite
 */
import {
  LOOP_CHANGE_TYPE,
  LogRefusal,
  Renumbering,
  markRow,
  parseRow,
  readHeader,
  readRowHead,
  renumberRow,
  textOf,
  type LogHeader,
  type RowEdit,
} from './log-format.ts'
import { EMPTY_LOOP_FOLD, foldLoopChange, type LoopFold } from '../fold.ts'

/**
 * Which release: `removal` marks every `loop/change` row ignorable (rc.8 then opens the
 * session without `loop`); `upgrade` removes them and renumbers the log (DSH's format-0
 * migration refuses the type even when ignorable).
 */
export type ReleaseMode = 'removal' | 'upgrade'

/** What a rewrite found and did. */
export interface Tally {
  /** Rows read after the header (a packed chunk run counts once). */
  rows: number
  /** `loop/change` rows marked ignorable now. */
  marked: number
  /** `loop/change` rows an earlier run had marked. */
  alreadyMarked: number
  /** `loop/change` rows removed. */
  removed: number
}

/** One log's rewrite, fed its batches in order. */
export interface LogRewrite {
  /**
   * Rewrite one batch of whole rows; the first batch begins with the header line.
   * @param bytes - the batch, every row ending in a newline.
   * @returns the batch to write (empty when every row of it went), or `undefined` when it is
   *   unchanged and its bytes are written as they were (a frame is not encoded again).
   */
  batch(bytes: Buffer): Buffer | undefined
  /** The header, once the first batch was read. */
  readonly header: LogHeader | undefined
  /** Upgrade: the fold of the session's own loop records removed so far (a fork's inherited ones not among them). */
  readonly loops: LoopFold
  /** The rows removed so far (upgrade). */
  readonly renumbering: Renumbering
  /** Counts so far. */
  readonly tally: Readonly<Tally>
}

/**
 * Start one log's rewrite.
 * @param mode - which release.
 * @param seed - upgrade of a fork only: a first pass's renumbering, which fixes the header's `seedLength`.
 * @returns the rewrite.
 */
export function createRewrite(mode: ReleaseMode, seed?: Renumbering): LogRewrite {
  const tally: Tally = { rows: 0, marked: 0, alreadyMarked: 0, removed: 0 }
  const renumbering = new Renumbering()
  let header: LogHeader | undefined
  let loops = EMPTY_LOOP_FOLD

  const rewriteHeader = (row: Buffer): RowEdit => {
    const line = textOf(row, 'the header line')
    header = readHeader(line)
    if (mode === 'removal' || seed === undefined || header.seedLength === undefined) return undefined
    const parsed = parseRow(line, 'the header line')
    return { kind: 'replace', text: JSON.stringify({ ...parsed, seedLength: seed.count(header.seedLength) }) }
  }

  /** One row's edit. */
  const rewriteRow = (row: Buffer): RowEdit => {
    const number = (tally.rows += 1)
    if (mode === 'removal') {
      // Only a row that begins as a loop/change row is one; every other row is kept unread.
      if (!isLoopRow(row)) return undefined
      const edit = markRow(row, `row ${number}`)
      if (edit === undefined) tally.alreadyMarked += 1
      else tally.marked += 1
      return edit
    }
    // Before the first removed row every row keeps its seq: only a loop row is read.
    if (renumbering.removedCount === 0 && !isLoopRow(row)) return undefined
    const head = readRowHead(row, number)
    if (head.type !== LOOP_CHANGE_TYPE) return renumberRow(row, head, renumbering, number)
    renumbering.remove(head.seq)
    tally.removed += 1
    // The session's own records (a fork's inherited ones are its parent's) say which loops it loses.
    if (header!.seedLength === undefined || head.seq >= header!.seedLength) {
      let data: unknown
      try {
        data = parseRow(textOf(row, `row ${number}`), `row ${number}`)['data']
      } catch {
        // left undefined: the fold names the record unreadable
      }
      loops = foldLoopChange(loops, data)
    }
    return { kind: 'drop' }
  }

  return {
    batch(bytes) {
      if (bytes.at(-1) !== NEWLINE) throw new LogRefusal('a batch of the log does not end with a whole row')
      const edits: PlacedEdit[] = []
      for (let start = 0; start < bytes.length;) {
        const newline = bytes.indexOf(NEWLINE, start)
        // A row ending in CRLF is read without its CR, which stays where it is in both modes.
        const end = newline > start && bytes[newline - 1] === CARRIAGE_RETURN ? newline - 1 : newline
        const row = bytes.subarray(start, end)
        const edit = header === undefined ? rewriteHeader(row) : rewriteRow(row)
        if (edit !== undefined) edits.push({ start, end, next: newline + 1, edit })
        start = newline + 1
      }
      return edits.length === 0 ? undefined : applyEdits(bytes, edits)
    },
    get header() {
      return header
    },
    get loops() {
      return loops
    },
    renumbering,
    tally,
  }
}

/**
 * A batch with its rows' edits made: the bytes between edits copied as they are.
 * @param bytes - the batch.
 * @param edits - each edited row's place and edit, in order.
 * @returns the new batch.
 */
function applyEdits(bytes: Buffer, edits: readonly PlacedEdit[]): Buffer {
  // One buffer of the new batch's size, written once: a splice's text is ASCII (digits, the marker).
  let size = bytes.length
  for (const { start, end, next, edit } of edits)
    size +=
      edit.kind === 'splice'
        ? edit.insert.length - edit.length
        : edit.kind === 'replace'
          ? Buffer.byteLength(edit.text) - (end - start)
          : -(next - start)
  const out = Buffer.allocUnsafe(size)
  let copied = 0
  let written = 0
  const copyTo = (until: number) => {
    written += bytes.copy(out, written, copied, until)
  }
  for (const { start, end, next, edit } of edits) {
    if (edit.kind === 'splice') {
      copyTo(start + edit.at)
      written += out.write(edit.insert, written, 'latin1')
      copied = start + edit.at + edit.length
    } else {
      copyTo(start)
      if (edit.kind === 'replace') written += out.write(edit.text, written)
      // A dropped row's line ending goes with it; a replaced row keeps its own.
      copied = edit.kind === 'drop' ? next : end
    }
  }
  copyTo(bytes.length)
  return out
}

const NEWLINE = 0x0a
const CARRIAGE_RETURN = 0x0d

/** A row's edit and its place in the batch: the row is `[start, end)`, its line ending runs to `next`. */
interface PlacedEdit {
  readonly start: number
  readonly end: number
  readonly next: number
  readonly edit: NonNullable<RowEdit>
}

/** How a `loop/change` row begins, as DSH writes it: nothing else begins so. */
const LOOP_ROW_HEAD = Buffer.from(`{"type":"${LOOP_CHANGE_TYPE}",`)

/** Whether a row is a `loop/change` row, from its first bytes. */
function isLoopRow(row: Buffer): boolean {
  return row.subarray(0, LOOP_ROW_HEAD.length).equals(LOOP_ROW_HEAD)
}

/**
 * Whether a rewrite changed anything: a log it did not change is left as it is.
 * @param tally - the finished rewrite's counts.
 * @returns true when the file must be replaced.
 */
export function changed(tally: Readonly<Tally>): boolean {
  return tally.marked > 0 || tally.removed > 0
}

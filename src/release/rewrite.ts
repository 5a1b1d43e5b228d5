/**
 * How a release rewrites one log, batch by batch: the batch split into rows, each row's edit
 * decided by the log's stage (`modes.ts`), the edits made in one new batch. Pure: it sits
 * between reading a file and writing its replacement (SPEC.md §13 "Leaving loop").
 * @module dsh-plugin-loop/release/rewrite
 */
import { readHeader, type LogHeader } from './log-format.ts'
import type { LogStage, ReleaseMode, RowEdit } from './modes.ts'
import { LogRefusal } from './refusals.ts'

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
  /** The log's stage, once the header was read. */
  readonly stage: LogStage | undefined
}

/**
 * Start one log's rewrite.
 * @param mode - the release.
 * @param counted - a counting pass over the same log: its header is not read again, and the pass that writes follows it.
 * @returns the rewrite.
 */
export function createRewrite(
  mode: ReleaseMode,
  counted?: { readonly header: LogHeader; readonly stage: LogStage },
): LogRewrite {
  let header: LogHeader | undefined
  let stage: LogStage | undefined

  const rewriteRow = (row: Buffer): RowEdit => {
    if (stage !== undefined) return stage.row(row)
    header = counted?.header ?? readHeader(row)
    stage = counted?.stage.afterCount() ?? mode.createStage(header)
    return stage.headerEdit
  }

  return {
    batch(bytes) {
      if (bytes.at(-1) !== NEWLINE) throw new LogRefusal('a batch of the log does not end with a whole row')
      const edits: PlacedEdit[] = []
      for (let start = 0; start < bytes.length;) {
        const newline = bytes.indexOf(NEWLINE, start)
        // A row ending in CRLF is read without its CR, which stays where it is in both modes.
        const end = newline > start && bytes[newline - 1] === CARRIAGE_RETURN ? newline - 1 : newline
        const edit = rewriteRow(bytes.subarray(start, end))
        if (edit !== undefined) edits.push({ start, end, next: newline + 1, edit })
        start = newline + 1
      }
      return edits.length === 0 ? undefined : applyEdits(bytes, edits)
    },
    get header() {
      return header
    },
    get stage() {
      return stage
    },
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

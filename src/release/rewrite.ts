/**
 * How a release rewrites one log, batch by batch, with plain strings: the pure stage between
 * reading a file and writing its replacement (SPEC.md §13 "Leaving loop").
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
  type LogHeader,
} from './log-format.ts'

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

  const rewriteHeader = (bytes: Buffer): Buffer | string => {
    const line = textOf(bytes, 'the header line')
    header = readHeader(line)
    if (mode === 'removal' || seed === undefined || header.seedLength === undefined) return bytes
    const row = parseRow(line, 'the header line')
    return JSON.stringify({ ...row, seedLength: seed.count(header.seedLength) })
  }

  /** One row: `undefined` when it goes, the same bytes when it is kept as it is. */
  const rewriteRow = (bytes: Buffer): Buffer | string | undefined => {
    const where = `row ${(tally.rows += 1)}`
    if (mode === 'removal') {
      // Only a row that begins as a loop/change row is one; every other row is kept unread.
      if (!isLoopRow(bytes)) return bytes
      const marked = markRow(textOf(bytes, where), where)
      if (marked.outcome === 'already-marked') {
        tally.alreadyMarked += 1
        return bytes
      }
      tally.marked += 1
      return marked.line
    }
    // Before the first removed row every row keeps its seq: only a loop row is read.
    if (renumbering.removedCount === 0 && !isLoopRow(bytes)) return bytes
    const line = textOf(bytes, where)
    const head = readRowHead(line, where)
    if (head.type === LOOP_CHANGE_TYPE) {
      renumbering.remove(head.seq)
      tally.removed += 1
      return undefined
    }
    return renumberRow(line, head, renumbering, where)
  }

  return {
    batch(bytes) {
      if (bytes.at(-1) !== NEWLINE) throw new LogRefusal('a batch of the log does not end with a whole row')
      const out: Buffer[] = []
      let rewritten = false
      for (let start = 0; start < bytes.length;) {
        const end = bytes.indexOf(NEWLINE, start)
        const row = bytes.subarray(start, end)
        const kept = header === undefined ? rewriteHeader(row) : rewriteRow(row)
        if (kept !== row) rewritten = true
        if (kept !== undefined) out.push(typeof kept === 'string' ? Buffer.from(kept) : kept, NEWLINE_BYTES)
        start = end + 1
      }
      return rewritten ? Buffer.concat(out) : undefined
    },
    get header() {
      return header
    },
    renumbering,
    tally,
  }
}

const NEWLINE = 0x0a
const NEWLINE_BYTES = Buffer.from('\n')

/** How a `loop/change` row begins, as DSH writes it: nothing else begins so. */
const LOOP_ROW_HEAD = Buffer.from(`{"type":"${LOOP_CHANGE_TYPE}",`)

/** Whether a row is a `loop/change` row, from its first bytes. */
function isLoopRow(bytes: Buffer): boolean {
  return bytes.subarray(0, LOOP_ROW_HEAD.length).equals(LOOP_ROW_HEAD)
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** A row's text; a row that is not UTF-8 refuses the log. */
function textOf(bytes: Buffer, where: string): string {
  try {
    return utf8.decode(bytes)
  } catch {
    throw new LogRefusal(`${where} holds bytes that are not UTF-8`)
  }
}

/**
 * Whether a rewrite changed anything: a log it did not change is left as it is.
 * @param tally - the finished rewrite's counts.
 * @returns true when the file must be replaced.
 */
export function changed(tally: Readonly<Tally>): boolean {
  return tally.marked > 0 || tally.removed > 0
}

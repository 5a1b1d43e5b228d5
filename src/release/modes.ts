/**
 * The two releases, each one object: its header and row stages, whether it counts a log before
 * writing it, what it keeps, and how its report reads (SPEC.md §13 "Leaving loop"). Everything
 * that differs between removal and upgrade is here; the code around them does not branch on
 * the mode. Pure.
 * @module dsh-plugin-loop/release/modes
 */
import { foldLoopChange, type LoopFold } from '../fold.ts'
import {
  LogRefusal,
  holdsAt,
  isLoopRow,
  parseRow,
  readRowHead,
  textOf,
  type LogHeader,
  type RowEdit,
} from './log-format.ts'
import { Renumbering, renumberHeader, renumberRow } from './renumbering.ts'

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

/** What a row stage reads and keeps of its log's rewrite. */
export interface RowContext {
  readonly header: LogHeader
  readonly tally: Tally
  readonly renumbering: Renumbering
  /** The fold of the session's own loop records removed so far (upgrade). */
  loops: LoopFold
}

/** One release. */
export interface ReleaseModeStages {
  readonly mode: ReleaseMode
  /**
   * Whether a log is read once to count before it is written: a fork's upgrade, whose header
   * counts inherited rows some of which go.
   */
  countsFirst(header: LogHeader): boolean
  /**
   * The header row's edit.
   * @param header - the header, as read.
   * @param seed - the counting pass's renumbering, when there was one.
   */
  header(header: LogHeader, seed: Renumbering | undefined): RowEdit
  /**
   * One row's edit (the row's number is `context.tally.rows`).
   * @param row - the row's bytes, without its line ending.
   * @param context - the rewrite's state, which the stage updates.
   */
  row(row: Buffer, context: RowContext): RowEdit
  /**
   * Whether it keeps the originals once a run ended clean (every run keeps them until then), and
   * sets DSH's projection checkpoints aside with them.
   */
  readonly keepsOriginals: boolean
  /** The `loop/change` rows it wrote (marked, or removed). */
  written(tally: Readonly<Tally>): number
  /** A released log's line after its path: what was (or, in a dry run, would be) done. */
  describe(tally: Readonly<Tally>, dryRun: boolean): string
}

/** The marker as the removal writes it: the row's last member. */
const MARKER = ',"ignorable":true'
const MARKER_END = Buffer.from(`${MARKER}}`)
const CLOSE_BRACE = 0x7d

/**
 * The removal's stage for a `loop/change` row: it gains `"ignorable":true` as its last member,
 * every other byte of it kept. A row an earlier run marked ends with the marker.
 * @param row - the row's bytes, without its line ending.
 * @param where - where the row is, for a refusal.
 * @returns the edit; none when the row is marked already.
 */
export function markRow(row: Buffer, where: string): RowEdit {
  if (holdsAt(row, MARKER_END, row.length - MARKER_END.length)) return undefined
  // DSH writes a row as `JSON.stringify` of an object, with no space after it.
  if (row.at(-1) !== CLOSE_BRACE) throw new LogRefusal(`${where} does not end as a JSON object does`)
  return { kind: 'splice', at: row.length - 1, length: 0, insert: MARKER }
}

const removal: ReleaseModeStages = Object.freeze({
  mode: 'removal',
  countsFirst: () => false,
  header: () => undefined,
  row(row: Buffer, { tally }: RowContext): RowEdit {
    // Only a row that begins as a loop/change row is one; every other row is kept unread.
    if (!isLoopRow(row)) return undefined
    const edit = markRow(row, `row ${tally.rows}`)
    if (edit === undefined) tally.alreadyMarked += 1
    else tally.marked += 1
    return edit
  },
  keepsOriginals: false,
  written: (tally: Readonly<Tally>) => tally.marked,
  describe: (tally: Readonly<Tally>, dryRun: boolean) =>
    `${tally.marked} loop/change rows ${dryRun ? 'would be ' : ''}marked ignorable` +
    (tally.alreadyMarked > 0 ? ` (${tally.alreadyMarked} already were)` : ''),
})

const upgrade: ReleaseModeStages = Object.freeze({
  mode: 'upgrade',
  countsFirst: (header: LogHeader) => header.seedLength !== undefined,
  header: (header: LogHeader, seed: Renumbering | undefined) =>
    seed === undefined ? undefined : renumberHeader(header.fields, seed),
  row(row: Buffer, context: RowContext): RowEdit {
    const { header, tally, renumbering } = context
    const number = tally.rows
    const loopRow = isLoopRow(row)
    // Before the first removed row every row keeps its seq: only a loop row is read.
    if (renumbering.removedCount === 0 && !loopRow) return undefined
    const head = readRowHead(row, number)
    if (!loopRow) return renumberRow(row, head, renumbering, number)
    renumbering.remove(head.seq)
    tally.removed += 1
    // The session's own records (a fork's inherited ones are its parent's) say which loops it loses.
    if (header.seedLength === undefined || head.seq >= header.seedLength) {
      let data: unknown
      try {
        data = parseRow(textOf(row, `row ${number}`), `row ${number}`)['data']
      } catch {
        // left undefined: the fold names the record unreadable
      }
      context.loops = foldLoopChange(context.loops, data)
    }
    return { kind: 'drop' }
  },
  keepsOriginals: true,
  written: (tally: Readonly<Tally>) => tally.removed,
  describe: (tally: Readonly<Tally>, dryRun: boolean) =>
    `${tally.removed} loop/change rows ${dryRun ? 'would be ' : ''}removed, ${tally.rows - tally.removed} rows kept`,
})

/** The two releases, by name. */
export const RELEASE_MODES: Readonly<Record<ReleaseMode, ReleaseModeStages>> = Object.freeze({ removal, upgrade })

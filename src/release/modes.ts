/**
 * The two releases, each one object: what it keeps, how its report reads, and the stage it
 * creates for each log, which decides every row's edit and owns that log's counts and state, as
 * DSH's format-migration edges create theirs (SPEC.md §13 "Leaving loop"). Everything that
 * differs between removal and upgrade is here; the code around them does not branch on the
 * mode. Pure.
 * @module dsh-plugin-loop/release/modes
 */
import type { LoopRowRule } from './check-log.ts'
import { EMPTY_LOOP_FOLD, foldLoopChange } from '../fold.ts'
import { holdsAt, isLoopRow, parseRow, readRowHead, textOf, type LogHeader } from './log-format.ts'
import { LogRefusal } from './refusals.ts'
import { Renumbering, renumberHeader, renumberRow } from './renumbering.ts'

/**
 * Which release: `removal` marks every `loop/change` row ignorable (rc.8 then opens the
 * session without `loop`); `upgrade` removes them and renumbers the log (DSH's format-0
 * migration refuses the type even when ignorable).
 */
export type ReleaseModeName = 'removal' | 'upgrade'

/**
 * What a stage decides for one row: keep it as it is (`undefined`), drop it, put `insert` in
 * place of `length` bytes at `at`, or write `text` instead of it.
 */
export type RowEdit =
  | undefined
  | { readonly kind: 'drop' }
  | { readonly kind: 'splice'; readonly at: number; readonly length: number; readonly insert: string }
  | { readonly kind: 'replace'; readonly text: string }

/** What a log's stage counted. */
export interface Tally {
  /** Rows read after the header (a packed chunk run counts once). */
  readonly rows: number
  /** `loop/change` rows this release changed: marked ignorable (removal) or removed (upgrade). */
  readonly loopRows: number
  /** Removal: `loop/change` rows an earlier run had marked. */
  readonly alreadyMarked?: number
}

/** An active loop an upgrade removed: what `/loop <time_in_seconds> <prompt>` recreates. */
export interface RemovedLoop {
  readonly id: string
  readonly time_in_seconds: number
  readonly prompt: string
}

/** What a stage found in its log, read to its end. */
export interface StageResult {
  /** `released` when a row changed; `already-released` when every loop row was as the release leaves it; else `no-loops`. */
  readonly status: 'released' | 'already-released' | 'no-loops'
  readonly tally: Tally
  /** Upgrade, a log with loop records: the active loops it lost, for the user to recreate. */
  readonly removedLoops?: readonly RemovedLoop[]
  /** Upgrade: why its loop records could not be read to name them. */
  readonly unreadableLoops?: string
}

/** One pass of a release over one log, created once its header is read: it owns the pass's counts and state. */
export interface LogStage {
  /** The header row's edit. */
  readonly headerEdit: RowEdit
  /**
   * One row's edit; rows come in order.
   * @param row - the row's bytes, without its line ending.
   */
  row(row: Buffer): RowEdit
  /** What the pass found, once every row was read. */
  finish(): StageResult
  /**
   * Whether this pass only counts and `afterCount()` writes: a fork's upgrade, whose header
   * counts inherited rows some of which go.
   */
  readonly countsFirst: boolean
  /** The pass that writes a log this one counted. */
  afterCount(): LogStage
}

/** The words of a report: what was done, or what a dry run would do. */
export interface Tense {
  /** `'would be '` for a dry run, else nothing: "3 rows would be marked". */
  readonly passive: string
}

/** What a report line describes: a log's status (`already-released`, or released) and its counts. */
interface Described {
  readonly status: string
  readonly tally: Tally
}

/** One release. */
export interface ReleaseMode {
  readonly name: ReleaseModeName
  /**
   * A stage for one log.
   * @param header - the log's header, as read.
   */
  createStage(header: LogHeader): LogStage
  /**
   * Whether it keeps the originals once a run ended clean (every run keeps them until then), and
   * sets DSH's projection checkpoints aside with them.
   */
  readonly keepsOriginals: boolean
  /**
   * A released (or already released) log's line after its path: what was (or, in a dry run, would be) done.
   * @param found - its status and counts.
   */
  describe(found: Described, tense: Tense): string
  /** What the check of a released log, read back, requires of its loop rows. */
  readonly loopRows: LoopRowRule
}

/** The marker as the removal writes it: the row's last member. */
const MARKER = ',"ignorable":true'
const MARKER_END = Buffer.from(`${MARKER}}`)
const CLOSE_BRACE = 0x7d

/**
 * The removal's edit of a `loop/change` row: it gains `"ignorable":true` as its last member,
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

/** The removal's stage: every `loop/change` row marked, in one pass. */
function removalStage(): LogStage {
  const tally = { rows: 0, loopRows: 0, alreadyMarked: 0 }
  const stage: LogStage = {
    headerEdit: undefined,
    row(row) {
      tally.rows += 1
      // Only a row that begins as a loop/change row is one; every other row is kept unread.
      if (!isLoopRow(row)) return undefined
      const edit = markRow(row, `row ${tally.rows}`)
      if (edit === undefined) tally.alreadyMarked += 1
      else tally.loopRows += 1
      return edit
    },
    finish: () => ({ status: statusOf(tally), tally: { ...tally } }),
    countsFirst: false,
    afterCount: () => stage,
  }
  return stage
}

/**
 * The upgrade's stage: every `loop/change` row removed, every kept row's seq and the seqs it
 * names renumbered, and the session's own removed records folded into the loops it loses.
 * @param header - the log's header.
 * @param seed - a counting pass's renumbering, for the pass that writes a fork.
 */
function upgradeStage(header: LogHeader, seed?: Renumbering): LogStage {
  const tally = { rows: 0, loopRows: 0 }
  const renumbering = new Renumbering()
  let removedLoops = EMPTY_LOOP_FOLD
  return {
    headerEdit: seed === undefined ? undefined : renumberHeader(header.fields, seed),
    row(row) {
      const number = (tally.rows += 1)
      const loopRow = isLoopRow(row)
      // Before the first removed row every row keeps its seq: only a loop row is read.
      if (renumbering.removedCount === 0 && !loopRow) return undefined
      const head = readRowHead(row, number)
      if (!loopRow) return renumberRow(row, head, renumbering, number)
      renumbering.remove(head.seq)
      tally.loopRows += 1
      // The session's own records (a fork's inherited ones are its parent's) say which loops it loses.
      if (header.seedLength === undefined || head.seq >= header.seedLength) {
        let data: unknown
        try {
          data = parseRow(textOf(row, `row ${number}`), `row ${number}`)['data']
        } catch {
          // left undefined: the fold names the record unreadable
        }
        removedLoops = foldLoopChange(removedLoops, data)
      }
      return { kind: 'drop' }
    },
    finish() {
      const result = { status: statusOf(tally), tally: { ...tally } }
      if (tally.loopRows === 0) return result
      if (removedLoops.corrupt !== undefined) return { ...result, unreadableLoops: removedLoops.corrupt }
      const loops = removedLoops.loops.map(({ id, time_in_seconds, prompt }) => ({ id, time_in_seconds, prompt }))
      return { ...result, removedLoops: loops }
    },
    countsFirst: seed === undefined && header.seedLength !== undefined,
    afterCount: () => upgradeStage(header, renumbering),
  }
}

/** A log's status from its counts. */
function statusOf(tally: Tally): StageResult['status'] {
  if (tally.loopRows > 0) return 'released'
  return (tally.alreadyMarked ?? 0) > 0 ? 'already-released' : 'no-loops'
}

const removal: ReleaseMode = Object.freeze({
  name: 'removal',
  createStage: removalStage,
  keepsOriginals: false,
  loopRows: 'marked',
  describe: ({ status, tally }: Described, { passive }: Tense) =>
    status === 'already-released'
      ? `all ${tally.alreadyMarked} loop/change rows already marked; nothing written`
      : `${tally.loopRows} loop/change rows ${passive}marked ignorable` +
        ((tally.alreadyMarked ?? 0) > 0 ? ` (${tally.alreadyMarked} already were)` : ''),
})

const upgrade: ReleaseMode = Object.freeze({
  name: 'upgrade',
  createStage: (header: LogHeader) => upgradeStage(header),
  keepsOriginals: true,
  loopRows: 'absent',
  describe: ({ tally }: Described, { passive }: Tense) =>
    `${tally.loopRows} loop/change rows ${passive}removed, ${tally.rows - tally.loopRows} rows kept`,
})

/** The two releases, by name. */
export const RELEASE_MODES: Readonly<Record<ReleaseModeName, ReleaseMode>> = Object.freeze({ removal, upgrade })

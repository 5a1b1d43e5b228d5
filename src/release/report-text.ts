/**
 * What the release command prints (SPEC.md §13 "Leaving loop"): a line per log as it is done, the report at the
 * end, why a release did not start, and the progress line. Plain functions of what the release
 * returned; `cli.ts` writes them.
 * @module dsh-plugin-loop/release/report-text
 */
import { relative } from 'node:path'
import { PROJECTION_CACHE } from './run-writes.ts'
import type { HomeRefusal, HomeRelease } from './home.ts'
import type { ReleaseMode, RemovedLoop, Tense } from './modes.ts'
import type { FileOutcome } from './release-file.ts'

/** A report's words: what was done, or what a dry run would do. */
interface ReportWords extends Tense {
  readonly lead: string
  readonly remove: string
  readonly were: string
}

const DONE: ReportWords = Object.freeze({ lead: '', passive: '', remove: 'removed', were: 'were' })
const DRY_RUN: ReportWords = Object.freeze({
  lead: 'Dry run, nothing written: ',
  passive: 'would be ',
  remove: 'would remove',
  were: 'would be',
})

/** How a report names what it says: the home its paths are relative to, and whether it names kept originals. */
interface ReportContext {
  readonly home: string
  readonly mode: ReleaseMode
  readonly words: ReportWords
  /** Whether the run keeps its originals (an upgrade; a removal that did not end clean). */
  readonly keepsOriginals: boolean
}

/** One file's line: what was done to it, or why it was left. */
function describeFile(file: FileOutcome, { home, mode, words, keepsOriginals }: ReportContext): string {
  const where = relative(home, file.path)
  const session = file.sessionId ?? '(no header)'
  switch (file.status) {
    case 'left':
      return `LEFT      ${session}  ${where}: ${file.reason}; ${file.replaced === true ? 'this came after the log was replaced: run the release again to check it' : 'the file is as it was'}`
    case 'written-meanwhile':
      return `WRITTEN   ${session}  ${where}: a DSH wrote to it while the release ran, so it is not released; ${file.original === undefined ? 'every event DSH wrote is in it' : `its original, with every event DSH wrote to it, is ${relative(home, file.original)}`}`
    case 'unopenable':
      return `FAILED    ${session}  ${where}: read back after the release, DSH would not open it: ${file.reason}; ${file.original === undefined ? 'no original of it is kept' : `its original is ${relative(home, file.original)}`}`
    case 'released': {
      const { original, rebuiltFrom } = file
      // A clean removal kept no original: only a kept folder is named.
      const kept =
        original === undefined || !keepsOriginals
          ? ''
          : `; the original is ${relative(home, original)}${file.copied === true ? ' (a copy: no hard link could be made there)' : ''}`
      const rebuilt =
        rebuiltFrom === undefined
          ? ''
          : ` (rebuilt from ${relative(home, rebuiltFrom)} and the rows a DSH wrote after an earlier release)`
      return `released  ${session}  ${where}: ${mode.describe(file, words)}${rebuilt}${kept}`
    }
    case 'already-released':
      return `already   ${session}  ${where}: ${mode.describe(file, words)}`
    case 'no-loops':
      return `no loops  ${session}  ${where}: no loop/change rows; nothing written`
    case 'later-format':
      return `later     ${session}  ${where}: already migrated by a later DSH; nothing to do`
  }
}

/** The lines naming the active loops an upgrade removed from a log, as `/loop` recreates them. */
function lostLoops(file: FileOutcome, words: ReportWords): string[] {
  if (file.status === 'left' || file.status === 'written-meanwhile' || file.status === 'unopenable') return []
  if (file.unreadableLoops !== undefined)
    return [`          its loops could not be read to name them (${file.unreadableLoops})`]
  if (file.removedLoops === undefined || file.removedLoops.length === 0) return []
  return [
    `          ${file.removedLoops.length} active loops ${words.were} removed; to recreate them in this session after the upgrade:`,
    ...recreate(file.removedLoops),
  ]
}

/** A `/loop` line per loop, indented under its log's line. */
function recreate(loops: readonly RemovedLoop[]): string[] {
  return loops.map((loop) => loopLine(`            /loop ${loop.time_in_seconds} `, loop.prompt))
}

/**
 * Characters that would change how a terminal shows the report: controls (the line breaks of a
 * prompt aside) and the bidirectional marks, embeddings, overrides and isolates.
 */
const UNSHOWABLE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g

/**
 * A `/loop` line as the report prints it: the prompt's later lines indented under its first,
 * every character that would change the terminal's display written as `\u{…}` (`--json` keeps the prompt exact).
 * @param head - the line up to the prompt.
 * @param prompt - the prompt.
 * @returns the line, or lines.
 */
function loopLine(head: string, prompt: string): string {
  const shown = prompt.replace(UNSHOWABLE, (char) => `\\u{${char.codePointAt(0)!.toString(16)}}`)
  return `${head}${shown.split('\n').join(`\n${' '.repeat(head.length)}`)}`
}

/**
 * A log's lines as the run prints them when it is done with the log (SPEC.md §13 "Leaving loop").
 * @param file - its outcome then.
 * @param home - the home.
 * @param mode - the release.
 * @param dryRun - whether the run writes nothing.
 * @returns its line, and the loops an upgrade removed from it, each ending in a newline.
 */
export function formatLogDone(file: FileOutcome, home: string, mode: ReleaseMode, dryRun: boolean): string {
  const words = dryRun ? DRY_RUN : DONE
  // An upgrade keeps every original; a removal's are named at the end only if it keeps them.
  const context = { home, mode, words, keepsOriginals: mode.keepsOriginals && !dryRun }
  return [describeFile(file, context), ...lostLoops(file, words)].map((line) => `${line}\n`).join('')
}

/**
 * The report a user reads: a line per log and a total.
 * @param release - what the release did.
 * @param mode - the release that did it.
 * @param printed - the outcomes already printed as each log was done, by path: only a log whose
 *   outcome changed since gets its line again, under a heading.
 * @returns the text, one line per log then the total and what to do next.
 */
export function formatReport(
  release: HomeRelease,
  mode: ReleaseMode,
  printed: ReadonlyMap<string, FileOutcome> = new Map(),
): string {
  const words = release.dryRun ? DRY_RUN : DONE
  const context = { home: release.home, mode, words, keepsOriginals: release.backupFolder !== undefined }
  const count = (status: FileOutcome['status']) => release.files.filter((file) => file.status === status).length
  let rows = 0
  for (const file of release.files) if (file.status === 'released') rows += file.tally.loopRows
  const lines: string[] = []
  if (release.tookOverFrom !== undefined)
    lines.push(
      `An earlier release (pid ${release.tookOverFrom.pid}, since ${release.tookOverFrom.startedAt}) stopped before it finished; this run takes over.`,
    )
  for (const temp of release.leftovers)
    lines.push(`${words.remove}  ${relative(release.home, temp)}: a temp file an interrupted release left`)
  const changed: string[] = []
  for (const file of release.files) {
    const lastPrinted = printed.get(file.path)
    if (lastPrinted === file) continue
    const fileLines = [describeFile(file, context), ...lostLoops(file, words)]
    if (lastPrinted === undefined) lines.push(...fileLines)
    else changed.push(...fileLines)
  }
  if (changed.length > 0) lines.push('Since their lines above, at the end of the run:', ...changed)
  const left = count('left')
  const writtenMeanwhile = count('written-meanwhile')
  const unopenable = count('unopenable')
  lines.push(
    `${words.lead}${release.files.length} session logs: ` +
      `${count('released')} released (${rows} loop/change rows), ${count('already-released')} already released, ` +
      `${count('no-loops')} without loops, ${count('later-format')} already migrated, ${left} left unreleased` +
      `${writtenMeanwhile > 0 ? `, ${writtenMeanwhile} written by a DSH meanwhile` : ''}` +
      `${unopenable > 0 ? `, ${unopenable} failed the check DSH's reader would make` : ''}` +
      `${release.untouched.length > 0 ? `, ${release.untouched.length} not reached` : ''}.`,
  )
  if (release.stoppedBy?.kind === 'dsh-running')
    lines.push(
      'A DSH started on this home while the release ran: stop it, then run the release again, which checks and mends what it wrote.',
      ...release.stoppedBy.running.map((dsh) => `  pid ${dsh.pid}: ${dsh.command}`),
    )
  else if (release.stoppedBy?.kind === 'cannot-look')
    lines.push(
      `The release stopped: ${release.stoppedBy.why}, so it could not tell whether a DSH had started on this home. Stop DSH, then run the release again.`,
    )
  else if (writtenMeanwhile > 0)
    lines.push(
      'A DSH ran on this home during the release: with DSH stopped, run the release again; it rebuilds each WRITTEN log with every event.',
    )
  if (left > 0)
    lines.push('Fix what each LEFT line says, then run the release again: released logs are not touched twice.')
  if (unopenable > 0)
    lines.push(
      'A FAILED log is not released, and DSH would not open it as it is: stop every DSH on this home and run the release again; while one still fails, keep its original and keep loop installed.',
    )
  if (release.projectionCache !== undefined)
    lines.push(
      `DSH's projection checkpoints (${PROJECTION_CACHE}) went with the originals: they count events the old way, and DSH rebuilds them.`,
    )
  if (release.backupFolder !== undefined)
    lines.push(
      release.stoppedBy !== undefined || writtenMeanwhile > 0 || unopenable > 0
        ? `The originals are in ${relative(release.home, release.backupFolder)}; keep it: the next run rebuilds from it what DSH wrote meanwhile.`
        : // A run that ended clean keeps its folder only for an upgrade.
          `The originals are in ${relative(release.home, release.backupFolder)}; delete it once the upgraded DSH has opened these sessions.`,
    )
  for (const { path, folder, loops } of release.earlierRemoved)
    lines.push(
      `${relative(release.home, path)}: ${loops.length} active loops were removed by an earlier upgrade release (its original is in ${relative(release.home, folder)}); to recreate them in this session after the upgrade:`,
      ...recreate(loops),
    )
  if (release.unfitting.length > 0)
    lines.push(
      `No log of this home is still what the release of ${release.unfitting.map((folder) => relative(release.home, folder)).join(', ')} wrote (each changed or was released again since): nothing is mended from it, so it may be removed.`,
    )
  if (release.earlierFolders.length > 0)
    lines.push(
      `Earlier releases kept originals of this home in ${release.earlierFolders.map((folder) => relative(release.home, folder)).join(', ')}; delete them once DSH has opened these sessions.`,
    )
  return lines.join('\n')
}

/**
 * Why a release did not start, as the user reads it: nothing was written.
 * @param refusal - the refusal.
 * @returns the lines to print.
 */
export function formatRefusal(refusal: HomeRefusal): string {
  switch (refusal.kind) {
    case 'locked':
      if (refusal.unlike !== undefined)
        return `${refusal.lock} is in the way of the release's lock: it is ${refusal.unlike}, not a lock a release wrote. If no release runs, remove it and run the release again. Nothing was written.`
      return refusal.holder === undefined
        ? `another release holds ${refusal.lock}, which cannot be read; if no release runs, delete that file and run the release again. Nothing was written.`
        : `another release runs on this home (pid ${refusal.holder.pid} on ${refusal.holder.host}, ${refusal.holder.mode}, since ${refusal.holder.startedAt}): ` +
            `wait for it to finish. If it no longer runs, delete ${refusal.lock}. Nothing was written.`
    case 'dsh-running': {
      const unread = refusal.running.some((dsh) => dsh.home === undefined)
      const parent = refusal.running.find((dsh) => dsh.startedRelease === true)
      return [
        ...(parent === undefined
          ? []
          : [
              `The release was started by DSH (pid ${parent.pid}), which writes this session's log after the release ends: run it from a terminal, with DSH stopped.`,
            ]),
        'DSH is running on this home: stop it, then run the release again. Nothing was written.',
        ...refusal.running.map(
          (dsh) => `  pid ${dsh.pid}: ${dsh.command}${dsh.home === undefined ? ' (its home could not be read)' : ''}`,
        ),
        ...(unread
          ? [
              "A DSH whose home could not be read (another user's) may run on another home: if every DSH on this home is stopped, run the release again with --dsh-stopped.",
            ]
          : []),
      ].join('\n')
    }
    case 'cannot-look':
      return `${refusal.why}, so it cannot tell whether DSH is running on this home. Stop DSH, then run the release again with --dsh-stopped. Nothing was written.`
    case 'no-room':
      return (
        `the release may need ${megabytes(refusal.needed)} free on the home's disk (each log is written anew before its original goes; an upgrade keeps every original), and it has ${megabytes(refusal.free)}: ` +
        'free some room, or release one session at a time with --session ID, then run it again. Nothing was written.'
      )
  }
}

/** Bytes as a user reads them: megabytes, one decimal. */
function megabytes(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`
}

/**
 * The progress line a terminal shows on stderr while logs are released, rewritten in place: how
 * many are done of all, and the one being read (relative to the home). The end clears it.
 * @param home - the home.
 * @param done - logs done.
 * @param total - logs found.
 * @param current - the log being released, or `undefined` at the end.
 * @returns the text to write.
 */
export function progressLine(home: string, done: number, total: number, current: string | undefined): string {
  return current === undefined ? '\r\u001b[K' : `\r\u001b[K${done} of ${total} logs: ${relative(home, current)}`
}

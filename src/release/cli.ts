/**
 * The `dsh-plugin-loop` command: `release` makes a home's sessions open without `loop`
 * (SPEC.md §13 "Leaving loop"). Arguments and the report are plain functions; `runCli` is
 * the one place that touches the process.
 * @module dsh-plugin-loop/release/cli
 */
import * as fsPromises from 'node:fs/promises'
import { homedir, hostname } from 'node:os'
import { relative } from 'node:path'
import { parseArgs } from 'node:util'
import { dshHomeOf, type DshLookout } from './dsh-processes.ts'
import { releaseHome, type HomeRefusal, type HomeRelease } from './home.ts'
import { PROJECTION_CACHE } from './run-writes.ts'
import { RELEASE_MODES, type ReleaseMode, type RemovedLoop, type Tense } from './modes.ts'
import type { FileOutcome } from './release-file.ts'
import { errorCode } from './release-fs.ts'

/** What `dsh-plugin-loop --help` prints. */
export const USAGE = `Usage: dsh-plugin-loop release [--for-upgrade] [--home DIR] [--session ID] [--dry-run] [--json] [--dsh-stopped]

Run it with DSH stopped; it refuses while a DSH process runs on the home, or another release does.
  release                 mark every loop/change record ignorable, so DSH 0.1.0-rc.8 opens
                          each session without the loop plugin (run it right before removing it)
  release --for-upgrade   remove every loop/change record and renumber the log, so a later DSH
                          migrates the session; each original is kept in <home>/loop-release-backup
  --home DIR              the DSH home (default: $DSH_HOME, else ~/.dsh)
  --session ID            only this session's log
  --dry-run               read and check everything, write nothing
  --json                  print the report as one JSON document
  --dsh-stopped           DSH is stopped on this home: go on where the system gives no way to
                          look, or shows a DSH (another user's) whose home it cannot read

Exit codes: 0 done, 1 something was left, written by a DSH meanwhile, or failed the final check
(the report says what), 2 the command could not start (or its disk lacks room), 3 another
release runs on the home, 4 a DSH runs on the home (or could not be looked for), or started
during the run, which stopped.`

/** Exit codes (SPEC.md §13 "Leaving loop"). */
export const EXIT = Object.freeze({ done: 0, left: 1, cannotStart: 2, locked: 3, dshRunning: 4 })

/** A parsed command line. */
export type CliArguments =
  | { readonly kind: 'help' }
  | { readonly kind: 'usage-error'; readonly message: string }
  | {
      readonly kind: 'release'
      readonly mode: ReleaseMode
      readonly home: string | undefined
      readonly session: string | undefined
      readonly dryRun: boolean
      readonly json: boolean
      readonly dshStopped: boolean
    }

/**
 * Parse the command line after the program name.
 * @param argv - the arguments.
 * @returns what to do.
 */
export function parseArguments(argv: readonly string[]): CliArguments {
  let parsed
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        help: { type: 'boolean', short: 'h' },
        'for-upgrade': { type: 'boolean' },
        home: { type: 'string' },
        session: { type: 'string' },
        'dry-run': { type: 'boolean' },
        json: { type: 'boolean' },
        'dsh-stopped': { type: 'boolean' },
      },
    })
  } catch (error) {
    // Node's messages run to three lines: name the option, and what is wrong with it.
    const { message } = error as Error
    const code = errorCode(error)
    // Each names the option first, in single quotes.
    const option = message.split("'")[1]!.split(' ')[0]
    return {
      kind: 'usage-error',
      message:
        code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION'
          ? `unknown option ${JSON.stringify(option)}`
          : message.includes('does not take an argument')
            ? `${option} takes no value`
            : `${option} needs a value`,
    }
  }
  const { values, positionals } = parsed
  if (values.help === true || positionals.length === 0) return { kind: 'help' }
  if (positionals[0] !== 'release' || positionals.length > 1)
    return { kind: 'usage-error', message: `unknown command ${JSON.stringify(positionals.join(' '))}` }
  for (const option of ['home', 'session'] as const)
    if (values[option] === '') return { kind: 'usage-error', message: `--${option} needs a value` }
  return {
    kind: 'release',
    mode: RELEASE_MODES[values['for-upgrade'] === true ? 'upgrade' : 'removal'],
    home: values.home,
    session: values.session,
    dryRun: values['dry-run'] === true,
    json: values.json === true,
    dshStopped: values['dsh-stopped'] === true,
  }
}

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

/** Where the command writes, and what it reads of its process. */
export interface CliProcess {
  readonly stdout: (text: string) => void
  readonly stderr: (text: string) => void
  /** Whether stderr is a terminal: then a progress line shows there while logs are released. */
  readonly stderrIsTerminal?: boolean
  readonly env: Readonly<Record<string, string | undefined>>
  readonly cwd: string
  readonly now: () => Date
  readonly pid: number
  readonly isAlive: (pid: number) => boolean
  readonly lookForDsh: DshLookout
}

/**
 * Run the command.
 * @param argv - the arguments after the program name.
 * @param io - output streams, environment, clock and process.
 * @returns the exit code ({@link EXIT}).
 */
export async function runCli(argv: readonly string[], io: CliProcess): Promise<number> {
  const parsed = parseArguments(argv)
  if (parsed.kind === 'help') {
    io.stdout(`${USAGE}\n`)
    return EXIT.done
  }
  if (parsed.kind === 'usage-error') {
    io.stderr(`dsh-plugin-loop: ${parsed.message}\n${USAGE}\n`)
    return EXIT.cannotStart
  }
  // The home DSH itself would use with this environment.
  const home = parsed.home ?? dshHomeOf(io.env, io.cwd, homedir())!
  let release: HomeRelease | HomeRefusal
  const printed = new Map<string, FileOutcome>()
  try {
    release = await releaseHome({
      home,
      mode: parsed.mode,
      ...(parsed.session === undefined ? {} : { session: parsed.session }),
      dryRun: parsed.dryRun,
      fs: fsPromises,
      startedAt: io.now(),
      pid: io.pid,
      host: hostname(),
      isAlive: io.isAlive,
      lookForDsh: io.lookForDsh,
      dshStopped: parsed.dshStopped,
      ...(io.stderrIsTerminal === true
        ? {
            progress: (done: number, total: number, current: string | undefined) =>
              io.stderr(progressLine(home, done, total, current)),
          }
        : {}),
      // `--json` stays one document; else each log's line is printed as it is done.
      ...(parsed.json
        ? {}
        : {
            logDone: (file: FileOutcome) => {
              // The progress line goes first: the log's line takes its place on a terminal.
              if (io.stderrIsTerminal === true) io.stderr(progressLine(home, 0, 0, undefined))
              io.stdout(formatLogDone(file, home, parsed.mode, parsed.dryRun))
              printed.set(file.path, file)
            },
          }),
    })
  } catch (error) {
    io.stderr(`dsh-plugin-loop: ${(error as Error).message}\n`)
    return EXIT.cannotStart
  }
  if (release.kind !== 'done') {
    io.stderr(`dsh-plugin-loop: ${formatRefusal(release)}\n`)
    if (parsed.json) io.stdout(`${JSON.stringify(release, null, 2)}\n`)
  } else io.stdout(`${parsed.json ? JSON.stringify(release, null, 2) : formatReport(release, parsed.mode, printed)}\n`)
  return exitCodeOf(release)
}

/**
 * The exit code of a release ({@link EXIT}).
 * @param release - what the release did, or why it did not start.
 * @returns 3 or 4 for a refusal; 4 for a run a DSH (or no way to look) stopped; 1 when a log was
 *   left or written by a DSH meanwhile; else 0.
 */
export function exitCodeOf(release: HomeRelease | HomeRefusal): number {
  if (release.kind === 'locked') return EXIT.locked
  if (release.kind === 'no-room') return EXIT.cannotStart
  if (release.kind !== 'done' || release.stoppedBy !== undefined) return EXIT.dshRunning
  return release.files.some(
    (file) => file.status === 'left' || file.status === 'written-meanwhile' || file.status === 'unopenable',
  )
    ? EXIT.left
    : EXIT.done
}

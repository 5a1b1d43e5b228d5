/**
 * The `dsh-plugin-loop` command: `release` makes a home's sessions open without `loop`
 * (SPEC.md §13 "Leaving loop"). Arguments are a plain function, and what it prints is
 * `report-text.ts`'s; `runCli` is the one place that touches the process.
 * @module dsh-plugin-loop/release/cli
 */
import * as fsPromises from 'node:fs/promises'
import { homedir, hostname } from 'node:os'
import { parseArgs } from 'node:util'
import { dshHomeOf, type DshLookout } from './dsh-processes.ts'
import { releaseHome, type HomeRefusal, type HomeRelease } from './home.ts'
import { RELEASE_MODES, type ReleaseMode } from './modes.ts'
import type { FileOutcome } from './release-file.ts'
import { formatLogDone, formatRefusal, formatReport, progressLine } from './report-text.ts'
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

/**
 * The `dsh-plugin-loop` command: `release` makes a home's sessions open without `loop`
 * (SPEC.md §13 "Leaving loop"). Arguments and the report are plain functions; `runCli` is
 * the one place that touches the process.
 * @module dsh-plugin-loop/release/cli
 */
import * as fsPromises from 'node:fs/promises'
import { homedir } from 'node:os'
import { join, relative } from 'node:path'
import type { FileOutcome } from './release-file.ts'
import { PROJECTION_CACHE, releaseHome, type HomeRelease } from './home.ts'

/** What `dsh-plugin-loop --help` prints. */
export const USAGE = `Usage: dsh-plugin-loop release [--for-upgrade] [--home DIR] [--session ID] [--dry-run] [--json]

Run it with DSH stopped.
  release                 mark every loop/change record ignorable, so DSH 0.1.0-rc.8 opens
                          each session without the loop plugin (run it right before removing it)
  release --for-upgrade   remove every loop/change record and renumber the log, so a later DSH
                          migrates the session; each original is kept in <home>/loop-release-backup
  --home DIR              the DSH home (default: $DSH_HOME, else ~/.dsh)
  --session ID            only this session's log
  --dry-run               read and check everything, write nothing
  --json                  print the report as one JSON document`

/** A parsed command line. */
export type CliArguments =
  | { readonly kind: 'help' }
  | { readonly kind: 'usage-error'; readonly message: string }
  | {
      readonly kind: 'release'
      readonly forUpgrade: boolean
      readonly home: string | undefined
      readonly session: string | undefined
      readonly dryRun: boolean
      readonly json: boolean
    }

/**
 * Parse the command line after the program name.
 * @param argv - the arguments.
 * @returns what to do.
 */
export function parseArguments(argv: readonly string[]): CliArguments {
  if (argv.length === 0 || argv.includes('--help') || argv.includes('-h')) return { kind: 'help' }
  const [command, ...rest] = argv
  if (command !== 'release') return { kind: 'usage-error', message: `unknown command ${JSON.stringify(command)}` }
  let home: string | undefined
  let session: string | undefined
  const flags = new Set<string>()
  for (let index = 0; index < rest.length; index += 1) {
    const option = rest[index]!
    if (option === '--home' || option === '--session') {
      const value = rest[index + 1]
      if (value === undefined || value.startsWith('--'))
        return { kind: 'usage-error', message: `${option} needs a value` }
      if (option === '--home') home = value
      else session = value
      index += 1
    } else if (['--for-upgrade', '--dry-run', '--json'].includes(option) && !flags.has(option)) flags.add(option)
    else return { kind: 'usage-error', message: `unknown or repeated option ${JSON.stringify(option)}` }
  }
  return {
    kind: 'release',
    forUpgrade: flags.has('--for-upgrade'),
    home,
    session,
    dryRun: flags.has('--dry-run'),
    json: flags.has('--json'),
  }
}

/** One file's line: what was done to it, or why it was left. */
function describeFile(file: FileOutcome, release: HomeRelease): string {
  const where = relative(release.home, file.path)
  const session = file.sessionId ?? '(unreadable header)'
  const { tally } = file
  const will = release.dryRun ? 'would be ' : ''
  switch (file.status) {
    case 'released':
      return release.mode === 'removal'
        ? `released  ${session}  ${where}: ${tally.marked} loop/change rows ${will}marked ignorable` +
            (tally.alreadyMarked > 0 ? ` (${tally.alreadyMarked} already were)` : '')
        : `released  ${session}  ${where}: ${tally.removed} loop/change rows ${will}removed, ${tally.rows - tally.removed} rows kept` +
            (file.backup === undefined ? '' : `; the original is ${relative(release.home, file.backup)}`)
    case 'already-released':
      return `already   ${session}  ${where}: all ${tally.alreadyMarked} loop/change rows already marked; nothing written`
    case 'no-loops':
      return `no loops  ${session}  ${where}: no loop/change rows; nothing written`
    case 'left':
      return `LEFT      ${session}  ${where}: ${file.reason}; the file is as it was`
  }
}

/**
 * The report a user reads: a line per log and a total.
 * @param release - what the release did.
 * @returns the text, one line per log then the total and what to do next.
 */
export function formatReport(release: HomeRelease): string {
  const count = (status: FileOutcome['status']) => release.files.filter((file) => file.status === status).length
  const rows = release.files.reduce(
    (sum, file) => sum + (release.mode === 'removal' ? file.tally.marked : file.tally.removed),
    0,
  )
  const lines = release.files.map((file) => describeFile(file, release))
  const left = count('left')
  lines.push(
    `${release.dryRun ? 'Dry run, nothing written: ' : ''}${release.files.length} session logs: ` +
      `${count('released')} released (${rows} loop/change rows), ${count('already-released')} already released, ` +
      `${count('no-loops')} without loops, ${left} left unreleased.`,
  )
  if (left > 0)
    lines.push('Fix what each LEFT line says, then run the release again: released logs are not touched twice.')
  const cache = release.projectionCache
  if (cache !== undefined)
    lines.push(
      'movedTo' in cache
        ? `DSH's projection checkpoints (${PROJECTION_CACHE}) went with them: they count events the old way, and DSH rebuilds them.`
        : `Could not set aside DSH's projection checkpoints (${PROJECTION_CACHE}): ${cache.failed}. Delete that file before starting DSH: it counts events the old way.`,
    )
  if (release.backupFolder !== undefined)
    lines.push(
      `The originals are in ${release.backupFolder}; delete it once the upgraded DSH has opened these sessions.`,
    )
  return lines.join('\n')
}

/** Where the command writes, and what it reads of its process. */
export interface CliProcess {
  readonly stdout: (text: string) => void
  readonly stderr: (text: string) => void
  readonly env: Readonly<Record<string, string | undefined>>
  readonly now: () => Date
}

/**
 * Run the command.
 * @param argv - the arguments after the program name.
 * @param io - output streams, environment and clock.
 * @returns the exit code: 0 done, 1 something was left undone (the report says what), 2 the command could not start.
 */
export async function runCli(argv: readonly string[], io: CliProcess): Promise<number> {
  const parsed = parseArguments(argv)
  if (parsed.kind === 'help') {
    io.stdout(`${USAGE}\n`)
    return 0
  }
  if (parsed.kind === 'usage-error') {
    io.stderr(`dsh-plugin-loop: ${parsed.message}\n${USAGE}\n`)
    return 2
  }
  const home = parsed.home ?? io.env['DSH_HOME'] ?? join(homedir(), '.dsh')
  let release: HomeRelease
  try {
    release = await releaseHome({
      home,
      mode: parsed.forUpgrade ? 'upgrade' : 'removal',
      ...(parsed.session === undefined ? {} : { session: parsed.session }),
      dryRun: parsed.dryRun,
      fs: fsPromises,
      startedAt: io.now(),
    })
  } catch (error) {
    io.stderr(`dsh-plugin-loop: ${(error as Error).message}\n`)
    return 2
  }
  io.stdout(`${parsed.json ? JSON.stringify(release, null, 2) : formatReport(release)}\n`)
  const unfinished =
    release.files.some((file) => file.status === 'left') ||
    (release.projectionCache !== undefined && 'failed' in release.projectionCache)
  return unfinished ? 1 : 0
}

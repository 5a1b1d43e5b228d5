/**
 * Where a DSH home keeps its session logs, and a release of all of them (or one session's):
 * `<home>/sessions/<project>/<session>/session.jsonl[.zstd]`, forks and sub-agent sessions
 * among them (SPEC.md §13 "Leaving loop").
 * @module dsh-plugin-loop/release/home
 */
import { readdir, stat } from 'node:fs/promises'
import { dirname, join, relative } from 'node:path'
import { releaseFile, type FileOutcome, type ReleaseFs } from './release-file.ts'
import type { ReleaseMode } from './rewrite.ts'

/** The file names a session log has in rc.8: plain, or Zstandard frames. */
const LOG_NAMES = ['session.jsonl', 'session.jsonl.zstd']

/** Under the home: where an upgrade release keeps the originals, one folder per run. */
export const BACKUP_FOLDER = 'loop-release-backup'

/** DSH's projection checkpoints: seqs of the old numbering, so an upgrade release sets them aside with the originals. */
export const PROJECTION_CACHE = join('storages', 'session_projcache.json')

/** What to release. */
export interface HomeReleaseOptions {
  readonly home: string
  readonly mode: ReleaseMode
  /** One session's log (and nothing else), by id. */
  readonly session?: string
  readonly dryRun: boolean
  readonly fs: ReleaseFs
  /** Names this run's backup folder (upgrade): the time it started, as the user's clock has it. */
  readonly startedAt: Date
}

/** What a release of a home did. */
export interface HomeRelease {
  readonly home: string
  readonly mode: ReleaseMode
  readonly dryRun: boolean
  readonly files: readonly FileOutcome[]
  /** Upgrade, when anything was replaced: the folder holding the originals, to delete once the upgrade is settled. */
  readonly backupFolder?: string
  /** Upgrade, when anything was replaced: DSH's projection checkpoints set aside, or why they could not be. */
  readonly projectionCache?: { readonly movedTo: string } | { readonly failed: string }
}

/**
 * A session id as DSH's JSONL backend names its folder (`encodeSegment`): letters, digits,
 * `.`, `_` and `-` as they are, every other UTF-16 unit as `~XXXX`.
 * @param id - the session id.
 * @returns its folder name.
 */
export function sessionFolderName(id: string): string {
  if (id === '.' || id === '..') return id.replace(/\./g, '~002E')
  let out = ''
  for (let index = 0; index < id.length; index += 1) {
    const unit = id[index]!
    out += /^[A-Za-z0-9._-]$/.test(unit) ? unit : `~${id.charCodeAt(index).toString(16).toUpperCase().padStart(4, '0')}`
  }
  return out
}

/** Entries of a folder that are folders, sorted, for a stable report. */
async function folders(path: string): Promise<string[]> {
  const entries = await readdir(path, { withFileTypes: true })
  return entries
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort()
}

/**
 * Every session log under a home, in a stable order.
 * @param home - the DSH home.
 * @param session - only this session's.
 * @returns the logs' paths.
 */
export async function findSessionLogs(home: string, session?: string): Promise<string[]> {
  const sessions = join(home, 'sessions')
  const found = await stat(sessions).catch(() => undefined)
  if (found === undefined || !found.isDirectory())
    throw new Error(`no DSH home at ${home}: it has no sessions folder (name the home with --home DIR or DSH_HOME)`)
  const wanted = session === undefined ? undefined : sessionFolderName(session)
  const logs: string[] = []
  for (const project of await folders(sessions))
    for (const folder of await folders(join(sessions, project))) {
      if (wanted !== undefined && folder !== wanted) continue
      const names = new Set(await readdir(join(sessions, project, folder)))
      for (const name of LOG_NAMES) if (names.has(name)) logs.push(join(sessions, project, folder, name))
    }
  if (session !== undefined && logs.length === 0) throw new Error(`no session ${session} in ${home}`)
  return logs
}

/** A run's backup folder name: its start time, safe in a path on every system. */
function stampOf(date: Date): string {
  return date.toISOString().replace(/[:.]/g, '-')
}

/**
 * Release every log of a home (or one session's), one at a time; a log that cannot be
 * released is left as it was and never stops the others.
 * @param options - home, mode, session, dry run, file system, start time.
 * @returns what became of each log.
 */
export async function releaseHome(options: HomeReleaseOptions): Promise<HomeRelease> {
  const { home, mode, dryRun, fs } = options
  const logs = await findSessionLogs(home, options.session)
  const backupFolder = mode === 'upgrade' ? join(home, BACKUP_FOLDER, stampOf(options.startedAt)) : undefined
  const files: FileOutcome[] = []
  for (const log of logs)
    files.push(
      await releaseFile(log, {
        mode,
        fs,
        dryRun,
        ...(backupFolder === undefined ? {} : { backup: join(backupFolder, relative(home, log)) }),
      }),
    )
  if (backupFolder === undefined || dryRun || !files.some((file) => file.status === 'released'))
    return { home, mode, dryRun, files }
  // Projection checkpoints name seqs of the old numbering: DSH rebuilds them from the logs.
  const cache = join(backupFolder, PROJECTION_CACHE)
  try {
    await fs.mkdir(dirname(cache), { recursive: true })
    await fs.rename(join(home, PROJECTION_CACHE), cache)
    return { home, mode, dryRun, files, backupFolder, projectionCache: { movedTo: cache } }
  } catch (error) {
    const failed = (error as NodeJS.ErrnoException).code === 'ENOENT' ? undefined : (error as Error).message
    return { home, mode, dryRun, files, backupFolder, ...(failed === undefined ? {} : { projectionCache: { failed } }) }
  }
}

/**
 * A release of a home's session logs (or one session's):
 * `<home>/sessions/<project>/<session>/session.jsonl[.zstd]`, forks and sub-agent sessions
 * among them, with no DSH running on the home and one release at a time (SPEC.md §13 "Leaving loop").
 * @module dsh-plugin-loop/release/home
 */
import { basename, dirname, join } from 'node:path'
import { dshDecision, type DshLookout, type DshRefusal } from './dsh-processes.ts'
import { takeHomeLock, type LockHeld, type LockHolder } from './home-lock.ts'
import { readEarlierRuns, type Replacement } from './journal.ts'
import { findReplacement, loopsKeptIn, releaseLog, stateNow } from './mend.ts'
import { readBack, readBackAgain, type ReadBack } from './read-back.ts'
import type { ReleaseMode, ReleaseModeName, RemovedLoop } from './modes.ts'
import { roomNeeded } from './room.ts'
import { releaseLeftover } from './beside-log.ts'
import type { FileOutcome } from './release-file.ts'
import type { ReleaseFs } from './release-fs.ts'
import { READ_ONLY, runFolder, writing, type RunWrites } from './run-writes.ts'

/** The file names a session log has in rc.8: plain, or Zstandard frames. */
const LOG_NAMES = ['session.jsonl', 'session.jsonl.zstd']

/** What to release, and what the release needs of its process. */
export interface HomeReleaseOptions {
  readonly home: string
  readonly mode: ReleaseMode
  /** One session's log (and nothing else), by id. */
  readonly session?: string
  /** A run that writes nothing: no lock, no temp file removed, no log written or kept. */
  readonly dryRun: boolean
  readonly fs: ReleaseFs
  /** Names this run's folder of originals and its lock: the time it started, as the user's clock has it. */
  readonly startedAt: Date
  /** This process and machine, for the lock. */
  readonly pid: number
  readonly host: string
  /** Whether a pid of this machine runs. */
  readonly isAlive: (pid: number) => boolean
  /** The DSH processes on the home. */
  readonly lookForDsh: DshLookout
  /**
   * The user says DSH is stopped on this home: where the system gives no way to look, or shows
   * a DSH process whose home it cannot read, the release goes on.
   */
  readonly dshStopped: boolean
  /** Told before each log (the one it starts, and how many are done of all) and once at the end (no log). */
  readonly progress?: (done: number, total: number, current: string | undefined) => void
  /**
   * Told each log's outcome once the run is done with it and has read it back; the end of the
   * run may still find it written by a DSH meanwhile, or changed since (the release says so).
   */
  readonly logDone?: (outcome: FileOutcome) => void
}

/** What a release of a home did. */
export interface HomeRelease {
  readonly kind: 'done'
  readonly home: string
  readonly mode: ReleaseModeName
  readonly dryRun: boolean
  readonly files: readonly FileOutcome[]
  /** An interrupted run's lock, taken over: its process is gone. */
  readonly tookOverFrom?: LockHolder
  /** Temp files an interrupted run left beside the logs, removed (or, in a dry run, to be removed). */
  readonly leftovers: readonly string[]
  /**
   * The folder holding the originals this run replaced, while it keeps them: an upgrade's, to
   * delete once the upgrade is settled; any run's that a DSH wrote during (a clean removal's goes).
   */
  readonly backupFolder?: string
  /** Upgrade: where DSH's projection checkpoints were set aside, before the first log was replaced. */
  readonly projectionCache?: string
  /** Why the run stopped before a replacement or at the end: a DSH found on the home, or no way to look any more. */
  readonly stoppedBy?: DshRefusal
  /** The logs a stopped run did not reach: as they were. */
  readonly untouched: readonly string[]
  /** The folders of originals earlier runs left, oldest first. */
  readonly earlierFolders: readonly string[]
  /**
   * Of those, the folders whose journal no log of the home fits any more (each log changed or was
   * released again since): nothing is mended from them, so they may be removed. Known only after
   * a run over every log.
   */
  readonly unfitting: readonly string[]
  /** The loops earlier upgrades removed from logs as they still are, read from the originals they kept. */
  readonly earlierRemoved: readonly EarlierRemoved[]
}

/** The active loops an earlier upgrade removed from a log, and the folder that keeps its original. */
export interface EarlierRemoved {
  readonly path: string
  readonly folder: string
  readonly loops: readonly RemovedLoop[]
}

/** Why a release did not start: nothing was written. */
export type HomeRefusal =
  | { readonly kind: 'locked'; readonly lock: string; readonly holder?: LockHolder; readonly unlike?: string }
  | NoRoom
  | DshRefusal

/** The home's disk has less room free than the release may need at once (`roomNeeded`). */
export interface NoRoom {
  readonly kind: 'no-room'
  readonly needed: number
  readonly free: number
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

/** Entries of a folder that are folders, or links to folders (DSH opens a session through a link), sorted. */
async function folders(fs: ReleaseFs, path: string): Promise<string[]> {
  const names: string[] = []
  for (const entry of await fs.readdir(path, { withFileTypes: true }))
    if (
      entry.isDirectory() ||
      (entry.isSymbolicLink() && (await fs.stat(join(path, entry.name)).catch(() => undefined))?.isDirectory())
    )
      names.push(entry.name)
  return names.sort()
}

/** A home's session folders: the logs, and the temp files and held originals releases left beside them. */
interface SessionFolders {
  readonly logs: string[]
  readonly temps: string[]
  readonly holds: string[]
}

/**
 * Every session log under a home, in a stable order, and the temp files beside them.
 * @param home - the DSH home.
 * @param fs - the file system.
 * @param session - only this session's.
 * @returns the logs' and temp files' paths.
 */
export async function findSessionLogs(home: string, fs: ReleaseFs, session?: string): Promise<SessionFolders> {
  const sessions = join(home, 'sessions')
  const wanted = session === undefined ? undefined : sessionFolderName(session)
  const found: SessionFolders = { logs: [], temps: [], holds: [] }
  for (const project of await folders(fs, sessions))
    for (const folder of await folders(fs, join(sessions, project))) {
      if (wanted !== undefined && folder !== wanted) continue
      const path = join(sessions, project, folder)
      const names = (await fs.readdir(path)).sort()
      for (const name of names) leftOver(found, join(path, name), releaseLeftover(name))
      for (const name of LOG_NAMES) {
        if (!names.includes(name)) continue
        found.logs.push(join(path, name))
        // A linked log is released beside its target, where its temp files are too.
        const target = await fs.realpath(join(path, name)).catch(() => undefined)
        if (target === undefined || dirname(target) === (await fs.realpath(path))) continue
        for (const entry of (await fs.readdir(dirname(target))).sort())
          leftOver(found, join(dirname(target), entry), releaseLeftover(entry, basename(target)))
      }
    }
  if (session !== undefined && found.logs.length === 0) throw new Error(`no session ${session} in ${home}`)
  return found
}

/** Note a file a release left beside a log. */
function leftOver(found: SessionFolders, path: string, kind: 'temp' | 'hold' | undefined): void {
  if (kind === 'temp') found.temps.push(path)
  else if (kind === 'hold') found.holds.push(path)
}

/**
 * Release every log of a home (or one session's), a few at once, once no DSH runs on it and
 * this run holds its lock; a log that cannot be released is left as it was and never stops
 * the others.
 * @param options - home, mode, session, dry run, file system, this run, how to look for DSH.
 * @returns what became of each log, or why nothing was done.
 * @throws Error when the home has no sessions folder, or not the session asked for.
 */
export async function releaseHome(options: HomeReleaseOptions): Promise<HomeRelease | HomeRefusal> {
  const { home, mode, fs } = options
  const sessionsFolder = await fs.stat(join(home, 'sessions')).catch(() => undefined)
  if (sessionsFolder === undefined || !sessionsFolder.isDirectory())
    throw new Error(`no DSH home at ${home}: it has no sessions folder (name the home with --home DIR or DSH_HOME)`)
  const refusal = dshDecision(await options.lookForDsh(home), options.dshStopped)
  if (refusal !== undefined) return refusal
  // The one place a dry run differs: it reads as a run does, and writes nothing.
  if (options.dryRun) {
    const done = await releaseLogs(options, READ_ONLY)
    return done.kind === 'no-room' ? done : done.release
  }
  const lock = await takeHomeLock(
    home,
    { pid: options.pid, host: options.host, startedAt: options.startedAt.toISOString(), mode: mode.name },
    fs,
    options.isAlive,
  )
  if (lock.kind === 'held') return lockedBy(lock)
  const writes = writing(options)
  let done
  try {
    done = await releaseLogs(options, writes)
  } finally {
    try {
      await writes.close()
    } finally {
      await lock.giveBack()
    }
  }
  if (done.kind === 'no-room') return done
  return {
    ...readBackAgain(done.release, done.checked, mode),
    ...(lock.tookOverFrom === undefined ? {} : { tookOverFrom: lock.tookOverFrom }),
  }
}

/** The refusal for a lock this run could not take. */
function lockedBy({ path, holder, unlike }: LockHeld): HomeRefusal {
  return {
    kind: 'locked',
    lock: path,
    ...(holder === undefined ? {} : { holder }),
    ...(unlike === undefined ? {} : { unlike }),
  }
}

/**
 * Logs released at once. A log's release waits on the file system call by call (and on three
 * syncs): while one waits, another reads and rewrites. Each log's steps stay in their order.
 */
const LOGS_AT_ONCE = 4

/** What became of one log of the run. */
interface LogResult {
  readonly outcome: FileOutcome
  readonly replacement?: Replacement
  readonly earlierRemoved?: EarlierRemoved
}

/** Wait for every task to end (none goes on after the run returns), then throw the first failure. */
async function settled(tasks: readonly Promise<void>[]): Promise<void> {
  for (const result of await Promise.allSettled(tasks)) if (result.status === 'rejected') throw result.reason
}

/** The release proper: every log read, and through `writes`, written; and the logs read back, with what they were then. */
async function releaseLogs(
  options: HomeReleaseOptions,
  writes: RunWrites,
): Promise<{ kind: 'done'; release: HomeRelease; checked: Map<string, ReadBack> } | NoRoom> {
  const { home, mode, fs } = options
  const { logs, temps, holds } = await findSessionLogs(home, fs, options.session)
  // Before anything is written: a run that would fill the disk says so now, not log by log.
  const sizes = await Promise.all(
    logs.map((log) =>
      fs.stat(log).then(
        (stats) => stats.size,
        () => 0,
      ),
    ),
  )
  const needed = roomNeeded(sizes, mode.keepsOriginals, LOGS_AT_ONCE)
  const disk = await fs.statfs(home)
  if (disk.bavail * disk.bsize < needed) return { kind: 'no-room', needed, free: disk.bavail * disk.bsize }
  await writes.removeLeftovers(temps)
  const earlier = await readEarlierRuns(fs, home)
  await writes.finishHolds(holds, earlier)
  // The logs that passed their read-back, with what they were then.
  const checked = new Map<string, ReadBack>()
  // Each log's result at its place, in the order found: a pool finishes them in any order.
  const results: (LogResult | undefined)[] = Array.from({ length: logs.length }, () => undefined)
  // The earlier runs' folders some log is still the replacement of: the others no longer fit any log.
  const fitting = new Set<string>()
  let started = 0
  let finished = 0
  const releaseNext = async (): Promise<void> => {
    while (started < logs.length && writes.stoppedBy === undefined) {
      const index = started
      started += 1
      const log = logs[index]!
      options.progress?.(finished, logs.length, log)
      const before = await findReplacement(fs, log, earlier)
      if (before !== undefined) fitting.add(before.run.folder)
      const done = await releaseLog(log, before, { mode, fs, write: writes.logWrite(log) })
      if ('stopped' in done) return
      // The loops an earlier upgrade removed, read again from the original it kept: it may have been stopped before its report.
      const removed =
        before?.run.journal?.mode === 'upgrade' && before.state.kind === 'whole'
          ? await loopsKeptIn(fs, before.replacement.kept)
          : []
      // The product, not the steps: a log called released (or already) is read back as DSH will open it.
      const read = options.dryRun ? { outcome: done.outcome } : readBack(done.outcome, mode, done.replacement?.kept)
      if (read.passed !== undefined) checked.set(log, read.passed)
      results[index] = {
        ...done,
        outcome: read.outcome,
        ...(removed.length > 0 ? { earlierRemoved: { path: log, folder: before!.run.folder, loops: removed } } : {}),
      }
      finished += 1
      options.logDone?.(read.outcome)
    }
  }
  await settled(Array.from({ length: Math.min(LOGS_AT_ONCE, logs.length) }, releaseNext))
  const reached = results.filter((result) => result !== undefined)
  const files: FileOutcome[] = reached.map((result) => result.outcome)
  const replaced = new Map<number, Replacement>()
  for (const [index, result] of reached.entries())
    if (result.replacement !== undefined) replaced.set(index, result.replacement)
  const earlierRemoved = reached.flatMap((result) =>
    result.earlierRemoved === undefined ? [] : [result.earlierRemoved],
  )
  // Once more at the end, when anything was replaced: a DSH running now may still write to it.
  const stoppedBy =
    writes.stoppedBy ??
    (replaced.size > 0 ? dshDecision(await options.lookForDsh(home), options.dshStopped) : undefined)
  // Every log this run replaced is still as written, its original as read.
  for (const [index, replacement] of replaced) {
    if ((await stateNow(fs, replacement)).kind === 'whole') continue
    const { path, sessionId } = files[index]!
    // A removal may have let the original go: what DSH wrote is then in the log.
    const kept = await fs.stat(replacement.kept).then(
      () => ({ original: replacement.kept }),
      () => ({}),
    )
    files[index] = { path, sessionId, status: 'written-meanwhile', ...kept }
  }
  options.progress?.(finished, logs.length, undefined)
  const clean =
    stoppedBy === undefined &&
    files.every((file) => file.status !== 'written-meanwhile' && file.status !== 'unopenable')
  if (clean) await writes.endClean(earlier.length > 0)
  const keptFolder = replaced.size > 0 && (mode.keepsOriginals || !clean)
  const { projectionCache } = writes
  const release: HomeRelease = {
    kind: 'done',
    home,
    mode: mode.name,
    dryRun: options.dryRun,
    files,
    leftovers: temps,
    untouched: logs.filter((_, index) => results[index] === undefined),
    earlierFolders: earlier.map((run) => run.folder),
    // Only a run over every log of the home can tell that no log fits a folder's lines.
    unfitting:
      options.session !== undefined || files.length < logs.length
        ? []
        : earlier.filter((run) => run.journal !== undefined && !fitting.has(run.folder)).map((run) => run.folder),
    earlierRemoved,
    ...(keptFolder ? { backupFolder: runFolder(options) } : {}),
    ...(projectionCache === undefined ? {} : { projectionCache }),
    ...(stoppedBy === undefined ? {} : { stoppedBy }),
  }
  return { kind: 'done', release, checked }
}

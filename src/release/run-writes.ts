/**
 * What a release run writes besides the logs' replacements (SPEC.md §13 "Leaving loop"): its
 * folder of originals and journal, DSH's projection checkpoints set aside, a look for DSH before
 * each replacement, a removal's originals let go once nothing can write them; and a dry run's
 * writes, none.
 * @module dsh-plugin-loop/release/run-writes
 */
import type { FileHandle } from 'node:fs/promises'
import { dirname, join, relative } from 'node:path'
import { dshDecision, type DshRefusal } from './dsh-processes.ts'
import type { HomeReleaseOptions } from './home.ts'
import { BACKUP_FOLDER, JOURNAL_FILE, journalEntry, journalLine, type EarlierRun, type Replacement } from './journal.ts'
import type { ReleaseWrite } from './release-file.ts'
import { errorCode, syncedCopy, syncedWrite } from './release-fs.ts'

/** DSH's projection checkpoints: seqs of the old numbering, so an upgrade release sets them aside with the originals. */
export const PROJECTION_CACHE = join('storages', 'session_projcache.json')

/** A run's backup folder name: its start time, safe in a path on every system. */
function stampOf(date: Date): string {
  return date.toISOString().replace(/[:.]/g, '-')
}

/** What a run writes besides the logs' replacements, and what it learns doing so: nothing, in a dry run. */
export interface RunWrites {
  /** Remove the temp files an interrupted run left beside the logs. */
  removeLeftovers(temps: readonly string[]): Promise<void>
  /**
   * Finish the copies of originals a killed run held beside their logs: each named by an earlier
   * journal gets what was appended to it, then goes; one no journal names was never replaced over
   * (its line is synced before the rename), so it is a link to the log itself and goes.
   */
  finishHolds(holds: readonly string[], earlier: readonly EarlierRun[]): Promise<void>
  /** How one log is written (its original kept, a look for DSH first), or `undefined` to only read it. */
  logWrite(log: string): ReleaseWrite | undefined
  /** The look that stopped the run before a replacement, if one did. */
  readonly stoppedBy: DshRefusal | undefined
  /** Upgrade: where DSH's projection checkpoints were set aside. */
  readonly projectionCache: string | undefined
  /**
   * A clean run's end: a removal keeps nothing (rc.8 reads what it wrote, and no DSH wrote meanwhile).
   * @param earlierRuns - whether earlier runs' folders are beside this run's.
   */
  endClean(earlierRuns: boolean): Promise<void>
}

/** A dry run's writes: none. */
export const READ_ONLY: RunWrites = Object.freeze({
  removeLeftovers: async () => {},
  finishHolds: async () => {},
  logWrite: () => undefined,
  stoppedBy: undefined,
  projectionCache: undefined,
  endClean: async () => {},
})

/** The folder of this run's originals. */
export function runFolder(options: Pick<HomeReleaseOptions, 'home' | 'startedAt'>): string {
  return join(options.home, BACKUP_FOLDER, stampOf(options.startedAt))
}

/** The writes of a run that holds the home's lock, and how it closes what it kept open (its journal). */
export function writing(options: HomeReleaseOptions): RunWrites & { close(): Promise<void> } {
  const { home, mode, fs } = options
  const folder = runFolder(options)
  const journal = join(folder, JOURNAL_FILE)
  // Open for the whole run: each line is one write and one sync, before its log's rename; the
  // lines of logs released at once are written one after another.
  let journalHandle: FileHandle | undefined
  let journalStarted = false
  let realHome: string | undefined
  let journalQueue: Promise<unknown> = Promise.resolve()
  const writeLine = async (replacement: Replacement) => {
    realHome ??= await fs.realpath(home)
    const line = journalLine({ kind: 'replaced', ...journalEntry(replacement, home, realHome) })
    journalHandle ??= await fs.open(journal, 'a')
    await journalHandle.writeFile(journalStarted ? line : journalLine({ kind: 'run', mode: mode.name }) + line)
    await journalHandle.sync()
    journalStarted = true
  }
  const record = (replacement: Replacement) => {
    const written = journalQueue.then(() => writeLine(replacement))
    journalQueue = written.catch(() => {})
    return written
  }
  let projectionCache: string | undefined
  // Projection checkpoints name seqs of the old numbering: set aside before the first log is
  // renumbered, so that no kill leaves a renumbered log beside them. DSH rebuilds them. Logs
  // released at once wait for the one move; after a failed one, the next log tries again.
  let checkpointsAside: Promise<void> | undefined
  const setCheckpointsAside = () =>
    (checkpointsAside ??= moveCheckpoints().catch((error: unknown) => {
      checkpointsAside = undefined
      throw error
    }))
  const moveCheckpoints = async () => {
    const moved = join(folder, PROJECTION_CACHE)
    const checkpoints = join(home, PROJECTION_CACHE)
    await fs.mkdir(dirname(moved), { recursive: true })
    try {
      await fs.rename(checkpoints, moved)
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return
      if (errorCode(error) !== 'EXDEV') throw error
      // The folder of originals is on another device: a synced copy, then the checkpoints go.
      await syncedWrite(fs, moved, await fs.readFile(checkpoints), 'wx')
      await fs.rm(checkpoints)
    }
    projectionCache = moved
  }
  // A removal's originals replaced since the last look. Once a look after its rename finds no DSH,
  // nothing can still write an original (DSH opens a log by path): it goes, unless it grew, so that
  // a removal never holds a second copy of the whole home.
  const awaitingLook: Replacement[] = []
  const letGo = async (originals: readonly Replacement[]) => {
    // One that grew is the end's to report.
    for (const { kept, readSize } of originals) if ((await fs.stat(kept)).size === readSize) await fs.rm(kept)
  }
  let stoppedBy: DshRefusal | undefined
  // Looked for again before every replacement: a DSH started meanwhile stops the run there.
  const beforeReplace = async () => {
    // A look that stopped the run stops the logs released beside it too.
    if (stoppedBy !== undefined) return false
    const due = awaitingLook.splice(0)
    const decision = dshDecision(await options.lookForDsh(home), options.dshStopped)
    stoppedBy ??= decision
    if (stoppedBy !== undefined) return false
    await letGo(due)
    if (mode.keepsOriginals) await setCheckpointsAside()
    return true
  }
  const replaced = (replacement: Replacement) => {
    if (!mode.keepsOriginals) awaitingLook.push(replacement)
  }
  return {
    async removeLeftovers(temps) {
      // This run holds the home: a temp file beside a log is an interrupted run's.
      for (const temp of temps) await fs.rm(temp, { force: true })
    },
    async finishHolds(holds, earlier) {
      const copyOf = new Map<string, string>()
      for (const run of earlier)
        for (const line of run.journal?.replacements ?? [])
          if (line.hold !== undefined) copyOf.set(line.hold, line.kept)
      for (const hold of holds) {
        const kept = copyOf.get(await fs.realpath(hold))
        if (kept !== undefined) {
          const original = await fs.open(hold, 'r')
          try {
            await syncedCopy(fs, original, kept, 'a', (await fs.stat(kept)).size)
          } finally {
            await original.close()
          }
        }
        await fs.rm(hold)
      }
    },
    logWrite: (log) => ({ keep: { path: join(folder, relative(home, log)), record }, beforeReplace, replaced }),
    get stoppedBy() {
      return stoppedBy
    },
    get projectionCache() {
      return projectionCache
    },
    async close() {
      await journalHandle?.close()
      journalHandle = undefined
    },
    async endClean(earlierRuns) {
      if (mode.keepsOriginals) return
      await this.close()
      await fs.rm(folder, { recursive: true, force: true })
      if (!earlierRuns) await fs.rm(join(home, BACKUP_FOLDER), { recursive: true, force: true })
    },
  }
}

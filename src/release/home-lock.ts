/**
 * One release per home at a time: `<home>/loop-release.lock`, linked into place whole (so it
 * is never seen half-written) and holding the run's pid, host, start and mode. A lock whose
 * process is gone is taken over (SPEC.md §13 "Leaving loop").
 * @module dsh-plugin-loop/release/home-lock
 */
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import type { ReleaseFs } from './release-fs.ts'

/** The lock's file name under the home. */
export const LOCK_FILE = 'loop-release.lock'

/** A draft or set-aside lock of a run, by its pid. */
const LOCK_LITTER = /^loop-release\.lock\.(\d+)-[0-9a-f]+\.(?:tmp|stale)$/

/** Who holds the lock. */
export interface LockHolder {
  readonly pid: number
  readonly host: string
  /** When the run started, ISO 8601. */
  readonly startedAt: string
  readonly mode: string
}

/** What taking the lock found. */
type LockAttempt =
  | {
      readonly kind: 'taken'
      /** An earlier run's lock whose process is gone, taken over. */
      readonly tookOverFrom?: LockHolder
      /** Give the lock back (only while it is still this run's). */
      readonly release: () => Promise<void>
    }
  /** Another run holds it; `holder` is absent when the file cannot be read as a lock. */
  | { readonly kind: 'held'; readonly holder?: LockHolder }

/**
 * Whether a lock keeps this run out.
 * @param holder - the lock's holder, or `undefined` when its file cannot be read as a lock.
 * @param host - this machine's name.
 * @param isAlive - whether a pid of this machine runs.
 * @returns `held` while its run may go on (or cannot be told from here), `stale` when its process is gone.
 */
export function lockDecision(
  holder: LockHolder | undefined,
  host: string,
  isAlive: (pid: number) => boolean,
): 'held' | 'stale' {
  if (holder === undefined || holder.host !== host) return 'held'
  return isAlive(holder.pid) ? 'held' : 'stale'
}

/** A lock file's holder, or `undefined` when it is not one. */
function holderOf(text: string): LockHolder | undefined {
  try {
    const value = JSON.parse(text) as Partial<LockHolder>
    if (
      typeof value.pid === 'number' &&
      typeof value.host === 'string' &&
      typeof value.startedAt === 'string' &&
      typeof value.mode === 'string'
    )
      return { pid: value.pid, host: value.host, startedAt: value.startedAt, mode: value.mode }
  } catch {
    // not JSON: not a lock this command wrote
  }
  return undefined
}

/** Whether an error is a file system error with this code. */
function hasCode(error: unknown, code: string): boolean {
  return (error as NodeJS.ErrnoException).code === code
}

/**
 * Take a home's lock.
 * @param home - the home.
 * @param self - this run.
 * @param fs - the file system.
 * @param isAlive - whether a pid of this machine runs.
 * @returns the lock, or who holds it.
 */
export async function takeHomeLock(
  home: string,
  self: LockHolder,
  fs: ReleaseFs,
  isAlive: (pid: number) => boolean,
): Promise<LockAttempt> {
  const lock = join(home, LOCK_FILE)
  const text = JSON.stringify(self)
  // Written whole under a name of its own, then linked into place: link fails if the lock exists.
  const draft = `${lock}.${self.pid}-${randomBytes(4).toString('hex')}.tmp`
  const handle = await fs.open(draft, 'wx')
  try {
    await handle.writeFile(text)
    await handle.sync()
  } finally {
    await handle.close()
  }
  let tookOverFrom: LockHolder | undefined
  try {
    for (;;) {
      try {
        await fs.link(draft, lock)
        break
      } catch (error) {
        if (!hasCode(error, 'EEXIST')) throw error
      }
      const found = await fs.readFile(lock, 'utf8').catch((error: unknown) => {
        if (hasCode(error, 'ENOENT')) return undefined
        throw error
      })
      if (found === undefined) continue
      const holder = holderOf(found)
      if (lockDecision(holder, self.host, isAlive) === 'held')
        return holder === undefined ? { kind: 'held' } : { kind: 'held', holder }
      // Stale: move it aside under a name of this run's, and check it is the one judged stale
      // (another run may have taken it over meanwhile; then it goes back).
      const aside = `${lock}.${self.pid}-${randomBytes(4).toString('hex')}.stale`
      try {
        await fs.rename(lock, aside)
      } catch (error) {
        if (hasCode(error, 'ENOENT')) continue
        throw error
      }
      const moved = await fs.readFile(aside, 'utf8')
      if (moved !== found) {
        await fs.link(aside, lock).catch(() => {})
        await fs.rm(aside, { force: true })
        const other = holderOf(moved)
        return other === undefined ? { kind: 'held' } : { kind: 'held', holder: other }
      }
      await fs.rm(aside, { force: true })
      tookOverFrom = holder
    }
  } finally {
    await fs.rm(draft, { force: true })
  }
  // A run killed between writing its draft and linking it left the draft: gone with its process.
  for (const name of await fs.readdir(home)) {
    const pid = LOCK_LITTER.exec(name)?.[1]
    if (pid !== undefined && !isAlive(Number(pid))) await fs.rm(join(home, name), { force: true })
  }
  return {
    kind: 'taken',
    ...(tookOverFrom === undefined ? {} : { tookOverFrom }),
    release: async () => {
      const found = await fs.readFile(lock, 'utf8').catch(() => undefined)
      if (found === text) await fs.rm(lock, { force: true })
    },
  }
}

/**
 * One release per home at a time: `<home>/loop-release.lock`, put in place whole (linked, or
 * where the file system has no links, created exclusively) and holding the run's pid, host,
 * start and mode. A lock whose process is gone is replaced, never removed, under
 * `<home>/loop-release.lock.takeover`, so its path is never empty while a run holds the home
 * (SPEC.md §13 "Leaving loop").
 * @module dsh-plugin-loop/release/home-lock
 */
import { randomBytes } from 'node:crypto'
import { constants } from 'node:fs'
import { join } from 'node:path'
import { errorCode, linkImpossible, syncedWrite } from './release-fs.ts'
import type { ReleaseFs } from './release-fs.ts'

/** The lock's file name under the home. */
export const LOCK_FILE = 'loop-release.lock'

/** How a file that guards the replacement of a stale one is named after it: one takeover at a time. */
const TAKEOVER_SUFFIX = '.takeover'

/** Beside the lock while a run replaces a stale one. */
export const TAKEOVER_FILE = `${LOCK_FILE}${TAKEOVER_SUFFIX}`

/** How deep a takeover of a stale takeover may go: each level needs a run killed inside the one before. */
const TAKEOVER_DEPTH = 3

/** A draft lock of a run (or, from earlier versions, a set-aside one), by its pid. */
const LOCK_LITTER = /^loop-release\.lock\.(\d+)-[0-9a-f]+\.(?:tmp|stale)$/

/** How often a lock that goes between finding it and reading it is looked for again before the run gives up. */
const VANISHING_LOCK_TRIES = 100

/** Who holds the lock. */
export interface LockHolder {
  readonly pid: number
  readonly host: string
  /** When the run started, ISO 8601. */
  readonly startedAt: string
  readonly mode: string
}

/**
 * Why a run is kept out: `path` is the file in the way; `holder` names the run holding it when
 * it reads as a lock; `unlike` says what the path is when it is no lock this command wrote.
 */
export interface LockHeld {
  readonly kind: 'held'
  readonly path: string
  readonly holder?: LockHolder
  readonly unlike?: string
}

/** What taking the lock found. */
type LockAttempt =
  | {
      readonly kind: 'taken'
      /** An earlier run's lock whose process is gone, taken over. */
      readonly tookOverFrom?: LockHolder
      /** Give the lock back (only while it is still this run's). */
      readonly giveBack: () => Promise<void>
    }
  | LockHeld

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

/** What is at a lock's path: a file's text, nothing, or something no run wrote. */
type LockFound =
  | { readonly kind: 'file'; readonly text: string; readonly holder?: LockHolder }
  | { readonly kind: 'gone' }
  | { readonly kind: 'unlike'; readonly unlike: string }

/** Read what is at a lock's path. */
async function readLock(fs: ReleaseFs, path: string): Promise<LockFound> {
  try {
    const text = await fs.readFile(path, 'utf8')
    const holder = holderOf(text)
    return holder === undefined ? { kind: 'file', text } : { kind: 'file', text, holder }
  } catch (error) {
    const code = errorCode(error)
    if (code === 'EISDIR') return { kind: 'unlike', unlike: 'a folder' }
    if (code === 'EACCES' || code === 'EPERM') return { kind: 'unlike', unlike: 'a file this user cannot read' }
    if (code !== 'ENOENT') throw error
  }
  // A link to nothing reads as no file, and stays; anything else there now came back meanwhile.
  const entry = await fs.lstat(path).catch(() => undefined)
  return entry?.isSymbolicLink() === true ? { kind: 'unlike', unlike: 'a link to nothing' } : { kind: 'gone' }
}

/**
 * Put a run's draft in place at a path unless something is there: a hard link of the draft, or
 * where the file system makes none, an exclusive copy of it (one call, so that no kill leaves
 * an empty lock that would keep every later run out), then synced.
 * @returns false when something is there.
 */
async function putExclusive(fs: ReleaseFs, draft: string, path: string): Promise<boolean> {
  try {
    await fs.link(draft, path)
    return true
  } catch (error) {
    if (errorCode(error) === 'EEXIST') return false
    if (!linkImpossible(error)) throw error
  }
  try {
    await fs.copyFile(draft, path, constants.COPYFILE_EXCL)
  } catch (error) {
    if (errorCode(error) === 'EEXIST') return false
    throw error
  }
  const copy = await fs.open(path, 'r')
  try {
    await copy.sync()
  } finally {
    await copy.close()
  }
  return true
}

/** The refusal for what is at a path. */
function heldBy(path: string, found: LockFound): LockHeld {
  if (found.kind === 'unlike') return { kind: 'held', path, unlike: found.unlike }
  return found.kind === 'file' && found.holder !== undefined
    ? { kind: 'held', path, holder: found.holder }
    : { kind: 'held', path }
}

/**
 * Take a home's lock.
 * @param home - the home.
 * @param self - this run.
 * @param fs - the file system.
 * @param isAlive - whether a pid of this machine runs.
 * @returns the lock, or what keeps this run out.
 */
export async function takeHomeLock(
  home: string,
  self: LockHolder,
  fs: ReleaseFs,
  isAlive: (pid: number) => boolean,
): Promise<LockAttempt> {
  const lock = join(home, LOCK_FILE)
  const text = JSON.stringify(self)
  // Written whole under a name of its own, then put in place: never seen half-written where links exist.
  const stem = `${lock}.${self.pid}-${randomBytes(4).toString('hex')}`
  const draft = `${stem}.tmp`
  await syncedWrite(fs, draft, text, 'wx')
  /**
   * Put the draft at `path`: exclusively, or over a file there whose run is gone on this host,
   * replaced by a rename under `<path>.takeover` (claimed the same way, so a takeover a kill
   * left is cleared as a stale lock is) and checked there to be the one judged stale.
   */
  const claim = async (path: string, depth: number): Promise<LockHeld | { kind: 'claimed'; from?: LockHolder }> => {
    for (let tries = 0; !(await putExclusive(fs, draft, path)); tries += 1) {
      const found = await readLock(fs, path)
      if (found.kind === 'gone') {
        // Another run gave it back meanwhile; a path that keeps coming and going is no lock to wait for.
        if (tries < VANISHING_LOCK_TRIES) continue
        return { kind: 'held', path, unlike: 'a file that comes and goes' }
      }
      if (
        found.kind === 'unlike' ||
        lockDecision(found.holder, self.host, isAlive) === 'held' ||
        depth === TAKEOVER_DEPTH
      )
        return heldBy(path, found)
      const guard = `${path}${TAKEOVER_SUFFIX}`
      const guarded = await claim(guard, depth + 1)
      if (guarded.kind === 'held') return guarded
      try {
        const now = await readLock(fs, path)
        if (now.kind === 'file' && now.text === found.text) {
          // A copy of the draft goes over it: the draft stays for the levels above.
          const copy = `${stem}${depth}.tmp`
          try {
            await putExclusive(fs, draft, copy)
            await fs.rename(copy, path)
          } finally {
            await fs.rm(copy, { force: true })
          }
          // Judged stale, so it named its holder.
          return { kind: 'claimed', from: found.holder! }
        }
      } finally {
        await fs.rm(guard, { force: true })
      }
    }
    return { kind: 'claimed' }
  }
  let tookOverFrom: LockHolder | undefined
  try {
    const claimed = await claim(lock, 0)
    if (claimed.kind === 'held') return claimed
    tookOverFrom = claimed.from
  } finally {
    await fs.rm(draft, { force: true })
  }
  // A run killed between writing its draft and putting it in place left the draft: gone with its process.
  for (const name of await fs.readdir(home)) {
    const pid = LOCK_LITTER.exec(name)?.[1]
    if (pid !== undefined && !isAlive(Number(pid))) await fs.rm(join(home, name), { force: true })
  }
  return {
    kind: 'taken',
    ...(tookOverFrom === undefined ? {} : { tookOverFrom }),
    giveBack: async () => {
      const found = await fs.readFile(lock, 'utf8').catch(() => undefined)
      if (found === text) await fs.rm(lock, { force: true })
    },
  }
}

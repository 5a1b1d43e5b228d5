/**
 * The hint files that let a starting host find the sessions holding loops
 * without reading every log: one small file per session, written durably
 * before a create is carried out and dropped only once a full read of that
 * session's log found no active loop. The log stays the only truth; a hint can
 * only be stale in the harmless direction (it names a session without loops).
 * One file per session (never one shared file) so several processes on one
 * home never read-modify-write each other's entries.
 * Real time throughout: hint ages are compared with file times the kernel stamps.
 * @module dsh-plugin-loop/session-hints
 */
import { randomBytes } from 'node:crypto'
import { mkdir, open, readdir, readFile, rename, rm, stat, unlink } from 'node:fs/promises'
import { join } from 'node:path'

/** The hint file's content. */
interface HintRecord {
  readonly sessionId: string
  readonly touchedAt: number
}

/** A hint younger than this, measured from the read that found no loop, is kept: see {@link SessionHints.drop}. */
export const HINT_DROP_MARGIN_MS = 60_000

/** Suffix of hint files; temporary files end otherwise and are never read. */
const HINT_SUFFIX = '.json'

/** fsync a directory so a rename or unlink in it is durable. */
async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

/**
 * Write a file atomically (a temporary file, then rename) and, unless `sync` is
 * false, durably (fsync of the file before and of the directory after the rename).
 * @param path - the target.
 * @param text - the content.
 * @param sync - whether it must survive a crash (hints must; the lease need not: a lost one is a free one).
 */
export async function writeAtomically(path: string, text: string, sync = true): Promise<void> {
  const dir = join(path, '..')
  const temporary = `${path}.${randomBytes(4).toString('hex')}.tmp`
  const handle = await open(temporary, 'w')
  try {
    await handle.writeFile(text)
    if (sync) await handle.sync()
  } finally {
    await handle.close()
  }
  try {
    await rename(temporary, path)
  } catch (error) {
    await rm(temporary, { force: true })
    throw error
  }
  if (sync) await syncDirectory(dir)
}

/** Whether an error is a missing file or directory. */
export function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT'
}

/** The hint directory of one DSH home. */
export class SessionHints {
  /** @param dir - where the hint files live (`$DSH_HOME/storages/loop/sessions`). */
  constructor(readonly dir: string) {}

  private file(sessionId: string): string {
    // Session ids are host-chosen strings: encode them so any id is one file name.
    return join(this.dir, `${encodeURIComponent(sessionId)}${HINT_SUFFIX}`)
  }

  /**
   * Record, durably, that a session may hold loops. Resolves only once the hint survives a crash.
   * A hint already there only gets its time renewed.
   * @param sessionId - the session.
   * @param now - epoch ms, the hint's time (its rank at the next start).
   */
  async note(sessionId: string, now: number): Promise<void> {
    const file = this.file(sessionId)
    const record = JSON.stringify({ sessionId, touchedAt: now } satisfies HintRecord)
    // A hint already on disk has been durable since its first write; renewing its time needs no
    // fsync (a crash leaves the old or the new file, a hint either way), so a runaway model's
    // thousand creates in one session cost one fsync'd hint, not a thousand.
    const present = await stat(file).then(
      () => true,
      () => false,
    )
    if (present) return writeAtomically(file, record, false)
    await mkdir(this.dir, { recursive: true })
    await writeAtomically(file, record)
  }

  /**
   * Every hinted session with the hint's time. A missing directory is no hints; an
   * unreadable or malformed hint file still names its session (by file name), at time 0.
   * @returns session id → time.
   */
  async read(): Promise<Map<string, number>> {
    const hinted = new Map<string, number>()
    let names: string[]
    try {
      names = await readdir(this.dir)
    } catch (error) {
      if (isMissing(error)) return hinted
      throw error
    }
    for (const name of names) {
      if (!name.endsWith(HINT_SUFFIX)) continue
      const sessionId = decodeURIComponent(name.slice(0, -HINT_SUFFIX.length))
      hinted.set(sessionId, await this.timeOf(sessionId))
    }
    return hinted
  }

  private async timeOf(sessionId: string): Promise<number> {
    try {
      const record = JSON.parse(await readFile(this.file(sessionId), 'utf8')) as Partial<HintRecord>
      return typeof record.touchedAt === 'number' && Number.isFinite(record.touchedAt) ? record.touchedAt : 0
    } catch {
      // A torn or foreign file still names the session: being read once costs less than missing it.
      return 0
    }
  }

  /** The marker of the one checkpoint scan (next to the hint directory). */
  private get scanMarker(): string {
    return join(this.dir, '..', 'checkpoint-scan.done')
  }

  /**
   * Whether the one scan of every header for projection checkpoints showing loops
   * (sessions whose loops an earlier build created without a hint) has been done on this home.
   */
  async scanned(): Promise<boolean> {
    return stat(this.scanMarker).then(
      () => true,
      () => false,
    )
  }

  /** Record that the checkpoint scan was done: from now on a start with no hint lists nothing. */
  async markScanned(): Promise<void> {
    await mkdir(this.dir, { recursive: true })
    await writeAtomically(this.scanMarker, `${new Date().toISOString()}\n`)
  }

  /**
   * Drop a session's hint, unless it was written less than {@link HINT_DROP_MARGIN_MS}
   * before `readSince`: a create racing the read that found no loop (its flush
   * still pending, or in another process) keeps its hint. File times are also
   * coarser than `Date.now()` (a kernel tick), which the margin covers too.
   * @param sessionId - the session.
   * @param readSince - epoch ms when the read that found no loop began.
   */
  async drop(sessionId: string, readSince: number): Promise<void> {
    const file = this.file(sessionId)
    try {
      if ((await stat(file)).mtimeMs < readSince - HINT_DROP_MARGIN_MS) await unlink(file)
    } catch {
      // Already gone, or not removable: a hint that stays costs one read at the next start, its harmless direction.
    }
  }
}

/**
 * Release one session log on disk: stream it batch by batch (a Zstandard log frame by frame)
 * through the pure rewrite, write the result beside it under a name of this run's, and replace
 * the file whole or not at all (SPEC.md §13 "Leaving loop").
 * @module dsh-plugin-loop/release/release-file
 */
import { randomBytes } from 'node:crypto'
import { constants } from 'node:fs'
import type { FileHandle } from 'node:fs/promises'
import { basename, dirname } from 'node:path'
import { LaterFormat, LogRefusal, cutShort, type LogHeader } from './log-format.ts'
import type { ReleaseModeStages, Tally } from './modes.ts'
import { errorCode, linkImpossible, type ReleaseFs } from './release-fs.ts'
import { changed, createRewrite, type LogRewrite } from './rewrite.ts'
import { READ_CHUNK_BYTES, decodeFrame, encodeFrame, readFrames } from './zstd-frames.ts'

/** What became of one log. */
export type FileStatus =
  /** its `loop/change` rows were marked or removed, and the file replaced */
  | 'released'
  /** every `loop/change` row was already marked: nothing written */
  | 'already-released'
  /** it holds no `loop/change` row (or nothing at all): nothing written */
  | 'no-loops'
  /** a later DSH already migrated it: nothing to do */
  | 'later-format'
  /** it could not be released and is as it was: `reason` says why */
  | 'left'

/** One log's outcome; `tally` counts what was written (a left log has none). */
export type FileOutcome = {
  /** The log's path, as found under the home. */
  readonly path: string
  /** The session id its header names (absent when the header could not be read). */
  readonly sessionId: string | undefined
} & (
  | {
      readonly status: Exclude<FileStatus, 'left'>
      readonly tally: Readonly<Tally>
      /** Where the original of a log an upgrade release replaced is kept, and how. */
      readonly backup?: { readonly path: string; readonly kind: 'link' | 'copy' }
      /** Upgrade, a log with loop records: the active loops it lost, for the user to recreate. */
      readonly removedLoops?: readonly RemovedLoop[]
      /** Upgrade: why its loop records could not be read to name them. */
      readonly unreadableLoops?: string
    }
  | { readonly status: 'left'; readonly reason: string }
)

/** An active loop an upgrade removed: what `/loop <time_in_seconds> <prompt>` recreates. */
interface RemovedLoop {
  readonly id: string
  readonly time_in_seconds: number
  readonly prompt: string
}

/** How to release one log. */
export interface ReleaseFileOptions {
  readonly stages: ReleaseModeStages
  readonly fs: ReleaseFs
  /** Read and check everything, write nothing. */
  readonly dryRun: boolean
  /** Upgrade: where the original is kept before the replacement (its folder is created). */
  readonly backup?: string
  /** Runs right before the log is replaced (an upgrade sets DSH's projection checkpoints aside first). */
  readonly beforeReplace?: () => Promise<void>
}

/** How the name of a release's temp file ends, after its log's: `.loop-release[-<run>].tmp`. */
const RELEASE_TEMP_END = /^\.loop-release(-[0-9a-z-]+)?\.tmp$/

/** A temp file's name for this run: created exclusively, so no other run's can be opened over it. */
function tempPathOf(path: string): string {
  return `${path}.loop-release-${process.pid}-${randomBytes(4).toString('hex')}.tmp`
}

/** One batch of a log: where it starts in the file, its bytes on disk, and its rows. */
interface Batch {
  readonly start: number
  readonly stored: Buffer
  readonly plaintext: Buffer
}

/**
 * The batches of a log as it stands: a Zstandard log's frames, one each; a plain log's whole
 * rows, a chunk at a time.
 * @param handle - the log, open for reading.
 * @param compressed - whether it is `session.jsonl.zstd`.
 */
async function* readBatches(handle: FileHandle, compressed: boolean): AsyncGenerator<Batch> {
  if (compressed) {
    for await (const { start, frame } of readFrames(handle))
      yield { start, stored: frame, plaintext: decodeFrame(frame) }
    return
  }
  let pending = Buffer.alloc(0)
  for (let position = 0; ;) {
    const { buffer, bytesRead } = await handle.read({ buffer: Buffer.alloc(READ_CHUNK_BYTES), position })
    pending =
      pending.length === 0 ? buffer.subarray(0, bytesRead) : Buffer.concat([pending, buffer.subarray(0, bytesRead)])
    const end = pending.lastIndexOf(0x0a) + 1
    if (end > 0)
      yield {
        start: position - (pending.length - bytesRead),
        stored: pending.subarray(0, end),
        plaintext: pending.subarray(0, end),
      }
    pending = pending.subarray(end)
    position += bytesRead
    if (bytesRead === 0) break
  }
  if (pending.length > 0) throw cutShort()
}

/** Copy the first `length` bytes of a file into another. */
async function copyPrefix(from: FileHandle, to: FileHandle, length: number): Promise<void> {
  const buffer = Buffer.alloc(Math.min(READ_CHUNK_BYTES, Math.max(length, 1)))
  for (let position = 0; position < length;) {
    const { bytesRead } = await from.read({ buffer, position, length: Math.min(buffer.length, length - position) })
    await to.write(buffer.subarray(0, bytesRead))
    position += bytesRead
  }
}

/**
 * Read a log through a rewrite. The first changed batch asks `writeTo` (its header known by then)
 * for a temp file, which gets the bytes before it copied and every batch after it: a log with
 * nothing to change is not written, and a pass that must not write (a count, a dry run) gets none.
 * @param path - the log.
 * @param rewrite - the rewrite.
 * @param fs - the file system.
 * @param writeTo - given the header, opens the temp file, or `undefined` for a pass that writes nothing.
 * @returns the temp file, open and written, or `undefined` when nothing was written.
 */
async function pass(
  path: string,
  rewrite: LogRewrite,
  fs: ReleaseFs,
  writeTo: (header: LogHeader) => (() => Promise<FileHandle>) | undefined,
): Promise<FileHandle | undefined> {
  const compressed = path.endsWith('.zstd')
  const handle = await fs.open(path, 'r')
  let temp: FileHandle | undefined
  try {
    for await (const { start, stored, plaintext } of readBatches(handle, compressed)) {
      const out = rewrite.batch(plaintext)
      if (temp === undefined) {
        const open = out === undefined ? undefined : writeTo(rewrite.header!)
        if (open === undefined) continue
        temp = await open()
        await copyPrefix(handle, temp, start)
      }
      if (out === undefined) await temp.write(stored)
      else if (out.length > 0) await temp.write(compressed ? encodeFrame(out) : out)
    }
    return temp
  } catch (error) {
    await temp?.close()
    throw error
  } finally {
    await handle.close()
  }
}

/** Size and modification time: what a change by another process moves. */
function identity(stats: { size: bigint; mtimeNs: bigint }): string {
  return `${stats.size}:${stats.mtimeNs}`
}

/**
 * Keep the original: a hard link, or where none can be made, a copy synced to disk.
 * @returns how it was kept.
 */
async function keepOriginal(fs: ReleaseFs, path: string, backup: string): Promise<'link' | 'copy'> {
  await fs.mkdir(dirname(backup), { recursive: true })
  try {
    await fs.link(path, backup)
    return 'link'
  } catch (error) {
    if (!linkImpossible(error)) throw error
  }
  await fs.copyFile(path, backup, constants.COPYFILE_EXCL)
  const copy = await fs.open(backup, 'r')
  try {
    await copy.sync()
  } finally {
    await copy.close()
  }
  return 'copy'
}

/**
 * Release one log: rewrite it in one pass into a temp file beside it (a log its mode counts
 * first, a fork's upgrade, in a second), keep its mode and owner, fsync, check the log did not
 * change meanwhile, keep the original (upgrade), rename over it and fsync the folder. A log
 * that is a link is released through it. Any failure leaves it as it was.
 * @param path - the log.
 * @param options - the release, file system, dry run, backup place, what runs before the replacement.
 * @returns what became of it.
 */
export async function releaseFile(path: string, options: ReleaseFileOptions): Promise<FileOutcome> {
  const { fs, stages } = options
  let rewrite = createRewrite(stages)
  let temp: string | undefined
  try {
    // A link is released through it: the file it points to is replaced, the link stays.
    const real = await fs.realpath(path).catch((error: unknown) => {
      if (errorCode(error) === 'ENOENT') throw new LogRefusal('it is a link to a file that does not exist')
      throw error
    })
    const before = await fs.stat(real, { bigint: true })
    const openTemp = () => {
      temp = tempPathOf(real)
      return fs.open(temp, 'wx', Number(before.mode) & 0o7777)
    }
    // A dry run only reads; a log its mode counts first is written in a second pass.
    const countsFirst = (header: LogHeader) => options.dryRun || stages.countsFirst(header)
    let out = await pass(real, rewrite, fs, (header) => (countsFirst(header) ? undefined : openTemp))
    const { header } = rewrite
    if (!options.dryRun && header !== undefined && stages.countsFirst(header) && changed(rewrite.tally)) {
      rewrite = createRewrite(stages, { header, renumbering: rewrite.renumbering })
      out = await pass(real, rewrite, fs, () => openTemp)
    }
    if (out === undefined) return settled(path, rewrite)
    try {
      // The new file keeps the log's mode (not the umask's) and owner.
      await out.chmod(Number(before.mode) & 0o7777)
      const written = await out.stat()
      if (written.uid !== Number(before.uid) || written.gid !== Number(before.gid))
        await out.chown(Number(before.uid), Number(before.gid))
      await out.sync()
    } finally {
      await out.close()
    }
    if (identity(await fs.stat(real, { bigint: true })) !== identity(before))
      throw new LogRefusal('the log changed while the release ran: stop DSH, then run the release again')
    await options.beforeReplace?.()
    const backup =
      options.backup === undefined
        ? undefined
        : { path: options.backup, kind: await keepOriginal(fs, real, options.backup) }
    await fs.rename(temp!, real)
    temp = undefined
    const folder = await fs.open(dirname(real), 'r')
    try {
      await folder.sync()
    } finally {
      await folder.close()
    }
    return { ...settled(path, rewrite), ...(backup === undefined ? {} : { backup }) }
  } catch (error) {
    if (temp !== undefined) await fs.rm(temp, { force: true }).catch(() => {})
    if (error instanceof LaterFormat)
      return { path, sessionId: error.sessionId, status: 'later-format', tally: rewrite.tally }
    return { path, sessionId: rewrite.header?.id, status: 'left', reason: reasonOf(error) }
  }
}

/** The outcome of a log read to its end: released (or, in a dry run, to be released), or why nothing was written. */
function settled(path: string, rewrite: LogRewrite): FileOutcome {
  const { tally, loops } = rewrite
  const status = changed(tally) ? 'released' : tally.alreadyMarked > 0 ? 'already-released' : 'no-loops'
  const outcome = { path, sessionId: rewrite.header?.id, status, tally } as const
  if (tally.removed === 0) return outcome
  if (loops.corrupt !== undefined) return { ...outcome, unreadableLoops: loops.corrupt }
  return {
    ...outcome,
    removedLoops: loops.loops.map(({ id, time_in_seconds, prompt }) => ({ id, time_in_seconds, prompt })),
  }
}

/** A failure as the line a user reads. */
function reasonOf(error: unknown): string {
  if (error instanceof LogRefusal) return error.message
  const code = errorCode(error)
  const detail = (error as Error).message
  if (code === 'EACCES' || code === 'EPERM') return `no permission: ${detail}`
  if (code === 'ENOSPC') return `the disk is full: ${detail}`
  return detail
}

/**
 * Whether a folder entry is a temp file a release wrote beside a log.
 * @param name - the entry's name (or path).
 * @param logName - the log's file name (a linked log's: its target's); by default a log's as DSH names it.
 * @returns true for this run's temp files and those an interrupted run left.
 */
export function isReleaseTemp(name: string, logName?: string): boolean {
  const entry = basename(name)
  const names = logName === undefined ? ['session.jsonl', 'session.jsonl.zstd'] : [logName]
  return names.some((log) => entry.startsWith(log) && RELEASE_TEMP_END.test(entry.slice(log.length)))
}

/**
 * Release one session log on disk: stream it batch by batch (a Zstandard log frame by frame)
 * through the pure rewrite, write the result beside it, and replace the file whole or not at
 * all (SPEC.md §13 "Leaving loop").
 * @module dsh-plugin-loop/release/release-file
 */
import type * as fsPromises from 'node:fs/promises'
import { dirname } from 'node:path'
import { LogRefusal, readHeader } from './log-format.ts'
import { changed, createRewrite, type LogRewrite, type ReleaseMode, type Tally } from './rewrite.ts'
import { decodeFrame, encodeFrame, zstdFrameEnd } from './zstd-frames.ts'

/** The part of `node:fs/promises` a release uses; the fault tests pass one that fails or stops at a chosen call. */
export type ReleaseFs = Pick<typeof fsPromises, 'open' | 'stat' | 'rename' | 'link' | 'mkdir' | 'rm'>

/** How much of a log is read at a time. */
const READ_CHUNK_BYTES = 1 << 20

/** What became of one log. */
export type FileStatus =
  /** its `loop/change` rows were marked or removed, and the file replaced */
  | 'released'
  /** every `loop/change` row was already marked: nothing written */
  | 'already-released'
  /** it holds no `loop/change` row: nothing written */
  | 'no-loops'
  /** it could not be released and is as it was: `reason` says why */
  | 'left'

/** One log's outcome. */
export interface FileOutcome {
  /** The log's path. */
  readonly path: string
  /** The session id its header names (absent when the header could not be read). */
  readonly sessionId: string | undefined
  readonly status: FileStatus
  readonly tally: Readonly<Tally>
  /** Why a `left` file was left. */
  readonly reason?: string
  /** Where the original of a file an upgrade release replaced is kept. */
  readonly backup?: string
}

/** How to release one log. */
export interface ReleaseFileOptions {
  readonly mode: ReleaseMode
  readonly fs: ReleaseFs
  /** Read and check everything, write nothing. */
  readonly dryRun: boolean
  /** Upgrade: where the original is linked before the replacement (its folder is created). */
  readonly backup?: string
}

/** The temp file a release writes beside the log: a kill leaves at most this, which the next run overwrites. */
export function tempPathOf(path: string): string {
  return `${path}.loop-release.tmp`
}

/** One batch of a log: its bytes on disk, and its rows. */
interface Batch {
  readonly stored: Buffer
  readonly plaintext: Buffer
}

/**
 * The batches of a log as it stands: a Zstandard log's frames, one each; a plain log's whole
 * rows, a chunk at a time.
 * @param handle - the log, open for reading.
 * @param compressed - whether it is `session.jsonl.zstd`.
 */
async function* readBatches(handle: fsPromises.FileHandle, compressed: boolean): AsyncGenerator<Batch> {
  let pending = Buffer.alloc(0)
  let position = 0
  for (;;) {
    const { buffer, bytesRead } = await handle.read({ buffer: Buffer.alloc(READ_CHUNK_BYTES), position })
    position += bytesRead
    pending =
      pending.length === 0 ? buffer.subarray(0, bytesRead) : Buffer.concat([pending, buffer.subarray(0, bytesRead)])
    let start = 0
    if (compressed) {
      for (let end = zstdFrameEnd(pending, start); end !== undefined; end = zstdFrameEnd(pending, start)) {
        const stored = pending.subarray(start, end)
        yield { stored, plaintext: decodeFrame(stored) }
        start = end
      }
    } else {
      const end = pending.lastIndexOf(0x0a) + 1
      if (end > 0) yield { stored: pending.subarray(0, end), plaintext: pending.subarray(0, end) }
      start = end
    }
    pending = pending.subarray(start)
    if (bytesRead === 0) break
  }
  if (pending.length > 0)
    throw new LogRefusal(
      "its last write was cut short (DSH stopped while saving): open the session once in DSH with loop installed, which repairs the log's end, then run the release again",
    )
}

/**
 * Read a log through a rewrite, handing each batch to write.
 * @param path - the log.
 * @param rewrite - the rewrite.
 * @param fs - the file system.
 * @param write - takes each rewritten batch, as bytes for the file (none: a counting pass).
 */
async function pass(
  path: string,
  rewrite: LogRewrite,
  fs: ReleaseFs,
  write: ((bytes: Buffer) => Promise<void>) | undefined,
): Promise<void> {
  const compressed = path.endsWith('.zstd')
  const handle = await fs.open(path, 'r')
  try {
    for await (const { stored, plaintext } of readBatches(handle, compressed)) {
      const out = rewrite.batch(plaintext)
      if (write === undefined || out?.length === 0) continue
      if (out === undefined) await write(stored)
      else await write(compressed ? encodeFrame(out) : out)
    }
  } finally {
    await handle.close()
  }
}

/** Whether a log's header names the fork boundary (`seedLength`), read from its first batch alone. */
async function isFork(path: string, fs: ReleaseFs): Promise<boolean> {
  const handle = await fs.open(path, 'r')
  try {
    for await (const { plaintext } of readBatches(handle, path.endsWith('.zstd'))) {
      const firstLine = plaintext.subarray(0, plaintext.indexOf(0x0a)).toString('utf8')
      return readHeader(firstLine).seedLength !== undefined
    }
    throw new LogRefusal('the log is empty')
  } finally {
    await handle.close()
  }
}

/** Size and modification time: what a change by another process moves. */
async function identity(fs: ReleaseFs, path: string): Promise<string> {
  const stats = await fs.stat(path, { bigint: true })
  return `${stats.size}:${stats.mtimeNs}`
}

/**
 * Release one log: rewrite it in one pass into a temp file beside it (an upgrade of a fork
 * counts the rows that go from its seed in a pass before), then fsync, check the log did not
 * change meanwhile, keep the original (upgrade), rename over it and fsync the folder. A log
 * with nothing to change is not replaced; any failure leaves it as it was.
 * @param path - the log.
 * @param options - mode, file system, dry run, backup place.
 * @returns what became of it.
 */
export async function releaseFile(path: string, options: ReleaseFileOptions): Promise<FileOutcome> {
  const { fs, mode } = options
  let rewrite = createRewrite(mode)
  const temp = tempPathOf(path)
  let tempWritten = false
  try {
    const before = await identity(fs, path)
    if (options.dryRun || (mode === 'upgrade' && (await isFork(path, fs)))) {
      // A fork's header counts its inherited events, some of which may go: count them first.
      // A dry run stops there.
      await pass(path, rewrite, fs, undefined)
      if (options.dryRun || !changed(rewrite.tally)) return settled(path, rewrite)
      rewrite = createRewrite(mode, rewrite.renumbering)
    }
    const out = await fs.open(temp, 'w')
    tempWritten = true
    try {
      await pass(path, rewrite, fs, async (bytes) => {
        await out.write(bytes)
      })
      await out.sync()
    } finally {
      await out.close()
    }
    if (!changed(rewrite.tally)) {
      await fs.rm(temp, { force: true })
      tempWritten = false
      return settled(path, rewrite)
    }
    if ((await identity(fs, path)) !== before)
      throw new LogRefusal('the log changed while the release ran: stop DSH, then run the release again')
    if (options.backup !== undefined) {
      await fs.mkdir(dirname(options.backup), { recursive: true })
      await fs.link(path, options.backup)
    }
    await fs.rename(temp, path)
    tempWritten = false
    const folder = await fs.open(dirname(path), 'r')
    try {
      await folder.sync()
    } finally {
      await folder.close()
    }
    return { ...settled(path, rewrite), ...(options.backup === undefined ? {} : { backup: options.backup }) }
  } catch (error) {
    if (tempWritten) await fs.rm(temp, { force: true }).catch(() => {})
    return { path, sessionId: rewrite.header?.id, status: 'left', tally: rewrite.tally, reason: reasonOf(error) }
  }
}

/** The outcome of a log read to its end: released (or, in a dry run, to be released), or why nothing was written. */
function settled(path: string, rewrite: LogRewrite): FileOutcome {
  const { tally } = rewrite
  const status: FileStatus = changed(tally) ? 'released' : tally.alreadyMarked > 0 ? 'already-released' : 'no-loops'
  return { path, sessionId: rewrite.header?.id, status, tally }
}

/** A failure as the line a user reads. */
function reasonOf(error: unknown): string {
  if (error instanceof LogRefusal) return error.message
  const { code, message: detail } = error as NodeJS.ErrnoException
  if (code === 'EACCES' || code === 'EPERM') return `no permission: ${detail}`
  if (code === 'ENOSPC') return `the disk is full: ${detail}`
  return detail
}

/**
 * Release one session log on disk: stream it batch by batch (a Zstandard log frame by frame)
 * through the pure rewrite, write the result beside it under a name of this run's, keep the
 * original and say so in the run's journal, replace the file whole or not at all, and check that
 * no DSH wrote to the original meanwhile (SPEC.md §13 "Leaving loop").
 * @module dsh-plugin-loop/release/release-file
 */
import { createHash, randomBytes, type Hash } from 'node:crypto'
import type { FileHandle } from 'node:fs/promises'
import { basename, dirname } from 'node:path'
import { whyUnopenable } from './check-log.ts'
import type { Replacement } from './journal.ts'
import { LaterFormat, LogRefusal, cutShort } from './log-format.ts'
import type { LogStage, ReleaseMode, Tally } from './modes.ts'
import { READ_CHUNK_BYTES, errorCode, linkImpossible, readChunks, syncedCopy, type ReleaseFs } from './release-fs.ts'
import { createRewrite, type LogRewrite } from './rewrite.ts'
import { decodeFrame, encodeFrame, readFrames } from './zstd-frames.ts'

/** What became of one log. */
export type FileStatus =
  /** its `loop/change` rows were marked or removed (or it was rebuilt), and the file replaced */
  | 'released'
  /** every `loop/change` row was already marked: nothing written */
  | 'already-released'
  /** it holds no `loop/change` row (or nothing at all): nothing written */
  | 'no-loops'
  /** a later DSH already migrated it: nothing to do */
  | 'later-format'
  /** it could not be released and is as it was: `reason` says why */
  | 'left'
  /** a DSH wrote to it, or to its original, after this run read it: `original` keeps what it replaced, with those writes */
  | 'written-meanwhile'
  /** read back after the run, DSH would not open it: `reason` says why, `original` keeps what this run replaced */
  | 'unopenable'

/** One log's outcome; `tally` counts what was written (a left log has none). */
export type FileOutcome = {
  /** The log's path, as found under the home. */
  readonly path: string
  /** The session id its header names (absent when the header could not be read). */
  readonly sessionId: string | undefined
} & (
  | {
      readonly status: Exclude<FileStatus, 'left' | 'written-meanwhile' | 'unopenable'>
      readonly tally: Tally
      /** Where the original of a log this run replaced is kept, and how. */
      readonly backup?: { readonly path: string; readonly kind: 'link' | 'copy' }
      /** The original an earlier run kept, which with the rows a DSH wrote after it made the log this run released. */
      readonly rebuiltFrom?: string
      /** Upgrade, a log with loop records: the active loops it lost, for the user to recreate. */
      readonly removedLoops?: readonly RemovedLoop[]
      /** Upgrade: why its loop records could not be read to name them. */
      readonly unreadableLoops?: string
    }
  | { readonly status: 'left'; readonly reason: string }
  | {
      readonly status: 'written-meanwhile'
      /** The original, with what a DSH wrote to it; none when a removal had let it go (the log holds what DSH wrote). */
      readonly original?: string
    }
  | { readonly status: 'unopenable'; readonly reason: string; readonly original?: string }
)

/** An active loop an upgrade removed: what `/loop <time_in_seconds> <prompt>` recreates. */
export interface RemovedLoop {
  readonly id: string
  readonly time_in_seconds: number
  readonly prompt: string
}

/** How to release one log. */
export interface ReleaseFileOptions {
  readonly mode: ReleaseMode
  readonly fs: ReleaseFs
  /** How the log is written; without it (a dry run, a kept original read for its loops) it is only read and checked. */
  readonly write?: ReleaseWrite | undefined
  /** A rebuild: the log's events are an earlier run's kept original, then the log's own bytes from `tailFrom`. */
  readonly rebuild?: { readonly original: string; readonly tailFrom: number }
}

/** What a release that writes does around a log's replacement. */
export interface ReleaseWrite {
  /** Where the original is kept (its folder is created), and how the replacement is written to the journal, both before the rename. */
  readonly keep?: { readonly path: string; readonly record: (replacement: Replacement) => Promise<void> }
  /**
   * Runs right before the log is replaced (a look for DSH; an upgrade's checkpoints set aside),
   * and says whether to go on: `false` stops the run, the log left as it was.
   */
  readonly beforeReplace?: () => Promise<boolean>
  /** Told once the log is replaced and its original, checked after the rename, holds only what was read. */
  readonly replaced?: (replacement: Replacement) => void
}

/** What releasing one log did: its outcome, and the journal's line when it was replaced; or that the run stops here. */
export type FileRelease =
  { readonly outcome: FileOutcome; readonly replacement?: Replacement } | { readonly stopped: true }

/** How the name of a release's temp file ends, after its log's: `.loop-release[-<run>].tmp`. */
const RELEASE_TEMP_END = /^\.loop-release(-[0-9a-z-]+)?\.tmp$/

/** How the name of an original held beside its log ends, after the log's: `.loop-release-<run>.hold`. */
const RELEASE_HOLD_END = /^\.loop-release-[0-9a-z-]+\.hold$/

/**
 * A name of this run's beside a log: its temp file (`tmp`, created exclusively, so no other run's
 * can be opened over it), or the original held there while its copy elsewhere is made whole (`hold`).
 */
function runFileOf(path: string, kind: 'tmp' | 'hold'): string {
  return `${path}.loop-release-${process.pid}-${randomBytes(4).toString('hex')}.${kind}`
}

/** One batch of a log: where it starts in its file, its bytes on disk, and its rows. */
interface Batch {
  readonly start: number
  readonly stored: Buffer
  readonly plaintext: Buffer
}

/**
 * The batches of a log from a place in it: a Zstandard log's frames, one each; a plain log's
 * whole rows, a chunk at a time.
 * @param handle - the log, open for reading.
 * @param compressed - whether it is `session.jsonl.zstd`.
 * @param from - where the first batch begins.
 * @param to - where the last batch ends (a row's or frame's end; by default the file's).
 */
export async function* readBatches(
  handle: FileHandle,
  compressed: boolean,
  from = 0,
  to = Number.POSITIVE_INFINITY,
): AsyncGenerator<Batch> {
  if (compressed) {
    for await (const { start, frame } of readFrames(handle, from, to))
      yield { start, stored: frame, plaintext: decodeFrame(frame) }
    return
  }
  let pending: Buffer = Buffer.alloc(0)
  let pendingStart = from
  for await (const chunk of readChunks(handle, from, to)) {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
    const end = pending.lastIndexOf(0x0a) + 1
    if (end > 0) yield { start: pendingStart, stored: pending.subarray(0, end), plaintext: pending.subarray(0, end) }
    pending = pending.subarray(end)
    pendingStart += end
  }
  if (pending.length > 0) throw cutShort()
}

/**
 * A temp file being written, and the hash of what was written to it: what a journal line names it
 * by. Bytes gather up to a read's worth before they are written: one write, not one a frame.
 */
interface TempFile {
  readonly handle: FileHandle
  readonly hash: Hash
  readonly pending: Buffer[]
  pendingBytes: number
}

/** Add bytes to a temp file, hashing them; written once a read's worth has gathered. */
async function put(temp: TempFile, bytes: Buffer): Promise<void> {
  temp.hash.update(bytes)
  temp.pending.push(bytes)
  temp.pendingBytes += bytes.length
  if (temp.pendingBytes >= READ_CHUNK_BYTES) await flush(temp)
}

/** Write what has gathered for a temp file. */
async function flush(temp: TempFile): Promise<void> {
  if (temp.pendingBytes === 0) return
  const bytes = Buffer.concat(temp.pending, temp.pendingBytes)
  temp.pending.length = 0
  temp.pendingBytes = 0
  // `writeFile` writes at the handle's position until every byte is written.
  await temp.handle.writeFile(bytes)
}

/** A file read as a log's events, from a place in it, up to an end (by default its end). */
interface Source {
  readonly handle: FileHandle
  readonly from: number
  readonly to?: number
}

/**
 * Read a log through a rewrite. The first changed batch (with `writeAll`, the first batch) asks
 * `writeTo` (the log's stage known by then) for a temp file, which gets the bytes before it copied
 * and every batch after it: a log with nothing to change is not written, and a pass that must
 * not write (a count, a dry run) gets none.
 * @param sources - the files whose batches, in order, are the log.
 * @param compressed - whether the log is Zstandard frames.
 * @param rewrite - the rewrite.
 * @param writeTo - given the stage, opens the temp file, or `undefined` for a pass that writes nothing.
 * @param writeAll - write even when no row changes (a rebuild).
 * @returns the temp file, open and written, or `undefined` when nothing was written.
 */
async function rewritePass(
  sources: readonly Source[],
  compressed: boolean,
  rewrite: LogRewrite,
  writeTo: (stage: LogStage) => (() => Promise<FileHandle>) | undefined,
  writeAll: boolean,
): Promise<TempFile | undefined> {
  let temp: TempFile | undefined
  try {
    for (const { handle, from, to } of sources)
      for await (const { start, stored, plaintext } of readBatches(handle, compressed, from, to)) {
        const out = rewrite.batch(plaintext)
        if (temp === undefined) {
          const open = out === undefined && !writeAll ? undefined : writeTo(rewrite.stage!)
          if (open === undefined) continue
          const opened: TempFile = { handle: await open(), hash: createHash('sha256'), pending: [], pendingBytes: 0 }
          temp = opened
          for await (const chunk of readChunks(handle, 0, start)) await put(opened, chunk)
        }
        if (out === undefined) await put(temp, stored)
        else if (out.length > 0) await put(temp, compressed ? encodeFrame(out) : out)
      }
    if (temp !== undefined) await flush(temp)
    return temp
  } catch (error) {
    await temp?.handle.close()
    throw error
  }
}

/** Size and modification time: what a change by another process moves. */
function sizeAndMtime(stats: { size: bigint; mtimeNs: bigint }): string {
  return `${stats.size}:${stats.mtimeNs}`
}

/** How an original was kept: a link; or a copy, the original linked beside the log (`hold`) until the copy is whole. */
type Kept = { readonly kind: 'link' } | { readonly kind: 'copy'; readonly hold: string | undefined }

/**
 * Keep the original: a hard link, or where none can be made (the folder of originals on another
 * device), a copy synced to disk of exactly what was read (from the handle read, up to the size
 * read), what a DSH appends later added once after the rename. Meanwhile the original stays
 * linked beside the log (same folder, same device), so that a kill before the copy is whole
 * loses nothing: the next run finishes it.
 * @returns how it was kept.
 */
async function keepOriginal(
  fs: ReleaseFs,
  path: string,
  read: { readonly handle: FileHandle; readonly size: number },
  backup: string,
): Promise<Kept> {
  await fs.mkdir(dirname(backup), { recursive: true })
  try {
    await fs.link(path, backup)
    return { kind: 'link' }
  } catch (error) {
    if (!linkImpossible(error)) throw error
  }
  let hold: string | undefined = runFileOf(path, 'hold')
  try {
    await fs.link(path, hold)
  } catch (error) {
    if (!linkImpossible(error)) throw error
    // A file system without links: a kill before the copy is whole loses what a DSH appended meanwhile.
    hold = undefined
  }
  await syncedCopy(fs, read.handle, backup, 'wx', 0, read.size)
  return { kind: 'copy', hold }
}

/** Sync a file or folder to disk. */
async function syncPath(fs: ReleaseFs, path: string): Promise<void> {
  const handle = await fs.open(path, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

/**
 * Release one log: rewrite it in one pass into a temp file beside it (a log its mode counts
 * first, a fork's upgrade, in a second), keep its mode and owner, fsync, check the log did not
 * change meanwhile, keep the original and write the journal's line, rename over it and fsync
 * the folder; then check, on the original it still holds open, that no DSH appended to it after
 * it was read. A log that is a link is released through it. Any failure leaves it as it was.
 * @param path - the log.
 * @param options - the release, file system, how it writes (none in a dry run), a rebuild.
 * @returns what became of it, and the journal's line when it was replaced; or that `beforeReplace` stopped the run.
 */
export async function releaseFile(path: string, options: ReleaseFileOptions): Promise<FileRelease> {
  const { fs, mode, write, rebuild } = options
  const keep = write?.keep
  let rewrite = createRewrite(mode)
  let temp: string | undefined
  const opened: FileHandle[] = []
  const open = async (file: string) => {
    const handle = await fs.open(file, 'r')
    opened.push(handle)
    return handle
  }
  try {
    // A link is released through it: the file it points to is replaced, the link stays.
    const real = await fs.realpath(path).catch((error: unknown) => {
      if (errorCode(error) === 'ENOENT') throw new LogRefusal('it is a link to a file that does not exist')
      throw error
    })
    const before = await fs.stat(real, { bigint: true })
    const original = await open(real)
    // The log as it was at `before`: what a DSH appends later is found by the size check.
    const size = Number(before.size)
    const sources: Source[] =
      rebuild === undefined
        ? [{ handle: original, from: 0, to: size }]
        : [
            { handle: await open(rebuild.original), from: 0 },
            { handle: original, from: rebuild.tailFrom, to: size },
          ]
    // DSH names a log's kind by its file name.
    const compressed = path.endsWith('.zstd')
    const openTemp = () => {
      temp = runFileOf(real, 'tmp')
      return fs.open(temp, 'wx', Number(before.mode) & 0o7777)
    }
    // A log its stage counts first is written in a second pass, once the first found a change.
    let countedFirst = false
    const writeAll = rebuild !== undefined
    let out = await rewritePass(
      sources,
      compressed,
      rewrite,
      (stage) => {
        countedFirst = stage.countsFirst
        return write === undefined || countedFirst ? undefined : openTemp
      },
      writeAll,
    )
    const { header, stage } = rewrite
    if (write !== undefined && countedFirst) {
      rewrite = createRewrite(mode, { header: header!, stage: stage! })
      out = await rewritePass(sources, compressed, rewrite, () => openTemp, writeAll)
    }
    const outcome = readOutcome(path, rewrite, rebuild?.original)
    if (out === undefined) return { outcome }
    let written
    try {
      written = await out.handle.stat({ bigint: true })
      // The new file keeps the log's mode (not the umask's) and owner.
      if ((written.mode & 0o7777n) !== (before.mode & 0o7777n)) await out.handle.chmod(Number(before.mode) & 0o7777)
      if (written.uid !== before.uid || written.gid !== before.gid)
        await out.handle.chown(Number(before.uid), Number(before.gid))
      await out.handle.sync()
    } finally {
      await out.handle.close()
    }
    // A rebuild joins files a DSH wrote: it is installed only if DSH will open what it made.
    const unopenable = rebuild === undefined ? undefined : whyUnopenable(temp!, mode.loopRows, compressed)
    if (unopenable !== undefined)
      throw new LogRefusal(
        `rebuilt from ${rebuild!.original} and the rows a DSH wrote after an earlier release, it would not open in DSH (${unopenable}); both are kept as they are`,
      )
    if (sizeAndMtime(await fs.stat(real, { bigint: true })) !== sizeAndMtime(before))
      throw new LogRefusal('the log changed while the release ran: stop DSH, then run the release again')
    if (write?.beforeReplace !== undefined && !(await write.beforeReplace())) {
      await fs.rm(temp!, { force: true })
      return { stopped: true }
    }
    const kept = keep === undefined ? undefined : await keepOriginal(fs, real, { handle: original, size }, keep.path)
    const backup = kept === undefined ? undefined : { path: keep!.path, kind: kept.kind }
    const hold = kept?.kind === 'copy' ? kept.hold : undefined
    const replacement: Replacement | undefined =
      backup === undefined
        ? undefined
        : {
            log: real,
            kept: backup.path,
            keptAs: backup.kind,
            readSize: size,
            ino: String(written.ino),
            size: Number(written.size),
            hash: out.hash.digest('hex'),
            ...(hold === undefined ? {} : { hold }),
          }
    if (replacement !== undefined) await keep!.record(replacement)
    await fs.rename(temp!, real)
    temp = undefined
    await syncPath(fs, dirname(real))
    // Appends to the original after it was read landed in the file this run still holds open.
    const grew = backup !== undefined && Number((await original.stat()).size) > size
    if (grew && backup.kind === 'copy') await syncedCopy(fs, original, backup.path, 'a', size)
    // The copy is whole: the original need not stay linked beside the log.
    if (hold !== undefined) await fs.rm(hold)
    if (grew) {
      return {
        outcome: { path, sessionId: header?.id, status: 'written-meanwhile', original: backup.path },
        replacement: replacement!,
      }
    }
    if (replacement !== undefined) write?.replaced?.(replacement)
    return {
      outcome: { ...outcome, ...(backup === undefined ? {} : { backup }) },
      ...(replacement === undefined ? {} : { replacement }),
    }
  } catch (error) {
    if (temp !== undefined) await fs.rm(temp, { force: true }).catch(() => {})
    if (error instanceof LaterFormat)
      return { outcome: { path, sessionId: error.sessionId, status: 'later-format', tally: NOTHING_COUNTED } }
    return { outcome: { path, sessionId: rewrite.header?.id, status: 'left', reason: reasonOf(error) } }
  } finally {
    for (const handle of opened) await handle.close()
  }
}

/** The tally of a log with no rows, or one not read. */
const NOTHING_COUNTED: Tally = Object.freeze({ rows: 0, written: 0 })

/** The outcome of a log read to its end: released (or, in a dry run, to be released), or why nothing was written. */
function readOutcome(path: string, rewrite: LogRewrite, rebuiltFrom: string | undefined): FileOutcome {
  // An empty log has no header, and so no stage.
  const tally = rewrite.stage?.tally ?? NOTHING_COUNTED
  const loops = rewrite.stage?.removedLoops
  const status =
    rebuiltFrom !== undefined || tally.written > 0
      ? 'released'
      : (tally.alreadyMarked ?? 0) > 0
        ? 'already-released'
        : 'no-loops'
  const outcome = {
    path,
    sessionId: rewrite.header?.id,
    status,
    tally,
    ...(rebuiltFrom === undefined ? {} : { rebuiltFrom }),
  } as const
  if (loops === undefined || tally.written === 0) return outcome
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
 * What a folder entry is that a release wrote beside a log: a temp file (this run's, or one an
 * interrupted run left), or an original held there while its copy was made.
 * @param name - the entry's name (or path).
 * @param logName - the log's file name (a linked log's: its target's); by default a log's as DSH names it.
 * @returns its kind, or `undefined` for any other file.
 */
export function releaseLeftover(name: string, logName?: string): 'temp' | 'hold' | undefined {
  const entry = basename(name)
  const names = logName === undefined ? ['session.jsonl', 'session.jsonl.zstd'] : [logName]
  for (const log of names) {
    if (!entry.startsWith(log)) continue
    const end = entry.slice(log.length)
    if (RELEASE_TEMP_END.test(end)) return 'temp'
    if (RELEASE_HOLD_END.test(end)) return 'hold'
  }
  return undefined
}

/**
 * Release one session log on disk: stream it batch by batch (a Zstandard log frame by frame)
 * through the pure rewrite, write the result beside it under a name of this run's, keep the
 * original and say so in the run's journal, replace the file whole or not at all, and check that
 * no DSH wrote to the original meanwhile (SPEC.md §13 "Leaving loop").
 * @module dsh-plugin-loop/release/release-file
 */
import type { FileHandle } from 'node:fs/promises'
import { dirname } from 'node:path'
import { keepOriginal, runFileOf } from './beside-log.ts'
import { whyUnopenable } from './check-log.ts'
import type { Replacement } from './journal.ts'
import { LaterFormat, LogRefusal } from './refusals.ts'
import type { ReleaseMode, StageResult } from './modes.ts'
import { errorCode, syncedCopy, type ReleaseFs } from './release-fs.ts'
import { createRewrite, type LogRewrite } from './rewrite.ts'
import { rewritePass, type Source } from './rewrite-pass.ts'

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

/** Which log an outcome is. */
interface LogNamed {
  /** The log's path, as found under the home. */
  readonly path: string
  /** The session id its header names (absent when the header could not be read). */
  readonly sessionId: string | undefined
}

/** A log read to its end: released (or, in a dry run, to be released), or why nothing was written; `tally` counts what was. */
type ReadOutcome = LogNamed &
  Omit<StageResult, 'status'> & {
    readonly status: Exclude<FileStatus, 'left' | 'written-meanwhile' | 'unopenable'>
    /** Where the original of a log this run replaced is kept. */
    readonly original?: string
    /** The original is a copy: no hard link could be made there. */
    readonly copied?: true
    /** The original an earlier run kept, which with the rows a DSH wrote after it made the log this run released. */
    readonly rebuiltFrom?: string
  }

/** One log's outcome. */
export type FileOutcome =
  | ReadOutcome
  | (LogNamed &
      (
        | {
            readonly status: 'left'
            readonly reason: string
            /** It failed after the log was replaced: the log is its release, to be checked by the next run. */
            readonly replaced?: true
          }
        | {
            readonly status: 'written-meanwhile'
            /** The original, with what a DSH wrote to it; none when a removal had let it go (the log holds what DSH wrote). */
            readonly original?: string
          }
        | { readonly status: 'unopenable'; readonly reason: string; readonly original?: string }
      ))

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

/** Size and modification time: what a change by another process moves. */
function sizeAndMtime(stats: { size: bigint; mtimeNs: bigint }): string {
  return `${stats.size}:${stats.mtimeNs}`
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
    const made = { temp: temp!, ino: written.ino, size: written.size, hash: out.hash.digest('hex') }
    temp = undefined
    return await replaceLog(fs, { real, handle: original, size }, made, { outcome, keep, replaced: write?.replaced })
  } catch (error) {
    if (temp !== undefined) await discard(fs, temp)
    if (error instanceof LaterFormat)
      return { outcome: { path, sessionId: error.sessionId, status: 'later-format', tally: NOTHING_FOUND.tally } }
    return { outcome: { path, sessionId: rewrite.header?.id, status: 'left', reason: reasonOf(error) } }
  } finally {
    for (const handle of opened) await handle.close()
  }
}

/** A log's replacement, written and synced beside it: its temp file, and what the journal names it by. */
interface MadeFile {
  readonly temp: string
  readonly ino: bigint
  readonly size: bigint
  readonly hash: string
}

/**
 * Replace a log with the file made for it: keep the original and write the journal's line, rename
 * over the log and fsync the folder; then check, on the original still open, that no DSH appended
 * to it after it was read. The temp file is removed when this fails before the rename.
 * @param fs - the file system.
 * @param log - the log's real path, its original open, and the size it was read to.
 * @param made - the replacement.
 * @param then - the log's outcome as read, where its original is kept, and whom to tell once it is replaced.
 * @returns what became of it.
 */
async function replaceLog(
  fs: ReleaseFs,
  log: { readonly real: string; readonly handle: FileHandle; readonly size: number },
  made: MadeFile,
  then: {
    readonly outcome: ReadOutcome
    readonly keep: ReleaseWrite['keep']
    readonly replaced: ReleaseWrite['replaced']
  },
): Promise<FileRelease> {
  const { real, handle: original, size } = log
  const { outcome, keep } = then
  let temp: string | undefined = made.temp
  // The journal's line, once written: a failure after the rename still names it.
  let recorded: Replacement | undefined
  try {
    const kept = keep === undefined ? undefined : await keepOriginal(fs, real, { handle: original, size }, keep.path)
    const hold = kept?.kind === 'copy' ? kept.hold : undefined
    const replacement: Replacement | undefined =
      kept === undefined
        ? undefined
        : {
            log: real,
            kept: keep!.path,
            keptAs: kept.kind,
            readSize: size,
            ino: String(made.ino),
            size: Number(made.size),
            hash: made.hash,
            ...(hold === undefined ? {} : { hold }),
          }
    if (replacement !== undefined) await keep!.record(replacement)
    recorded = replacement
    await fs.rename(temp, real)
    temp = undefined
    await syncPath(fs, dirname(real))
    // Appends to the original after it was read landed in the file this run still holds open.
    const grew = replacement !== undefined && Number((await original.stat()).size) > size
    if (grew && replacement.keptAs === 'copy') await syncedCopy(fs, original, replacement.kept, 'a', size)
    // The copy is whole: the original need not stay linked beside the log.
    if (hold !== undefined) await fs.rm(hold)
    if (grew) {
      const { path, sessionId } = outcome
      return { outcome: { path, sessionId, status: 'written-meanwhile', original: replacement.kept }, replacement }
    }
    if (replacement === undefined) return { outcome }
    then.replaced?.(replacement)
    const copied = replacement.keptAs === 'copy' ? { copied: true as const } : {}
    return { outcome: { ...outcome, original: replacement.kept, ...copied }, replacement }
  } catch (error) {
    if (temp !== undefined) {
      await discard(fs, temp)
      throw error
    }
    // Renamed already: the log is its release, not as it was; the next run checks it.
    const { path, sessionId } = outcome
    const left = { path, sessionId, status: 'left', reason: reasonOf(error), replaced: true } as const
    return { outcome: left, ...(recorded === undefined ? {} : { replacement: recorded }) }
  }
}

/** Remove a temp file a failure left; the failure is what the report says, not this. */
async function discard(fs: ReleaseFs, temp: string): Promise<void> {
  await fs.rm(temp, { force: true }).catch(() => {})
}

/** What a log with no rows holds, or one not read. */
const NOTHING_FOUND: StageResult = Object.freeze({ status: 'no-loops', tally: Object.freeze({ rows: 0, loopRows: 0 }) })

/** The outcome of a log read to its end. */
function readOutcome(path: string, rewrite: LogRewrite, rebuiltFrom: string | undefined): ReadOutcome {
  // An empty log has no header, and so no stage.
  const found = rewrite.stage?.finish() ?? NOTHING_FOUND
  return {
    path,
    sessionId: rewrite.header?.id,
    ...found,
    ...(rebuiltFrom === undefined ? {} : { status: 'released', rebuiltFrom }),
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

/**
 * A log an earlier run replaced: what that replacement means now, read from the disk, and how
 * the log is released. Where a DSH wrote to it or to its original since, it is rebuilt from that
 * run's kept original and the rows written after the replacement, joined by their seqs
 * (`rebuildSource`, `journal.ts`) (SPEC.md §13 "Leaving loop").
 * @module dsh-plugin-loop/release/mend
 */
import { createHash } from 'node:crypto'
import type { FileHandle } from 'node:fs/promises'
import { rebuildSource, replacementState, type EarlierRun, type Replacement } from './journal.ts'
import { readRowHead, seqAfter } from './log-format.ts'
import { RELEASE_MODES, type RemovedLoop } from './modes.ts'
import { readBatches } from './log-batches.ts'
import { releaseFile, type FileRelease, type ReleaseFileOptions } from './release-file.ts'
import { readChunks, type ReleaseFs } from './release-fs.ts'

/** What an earlier replacement of a log is now. */
type ReplacementState = ReturnType<typeof replacementState>

/**
 * What an earlier run's replacement of a log means now: the log's and the kept original's sizes.
 * @param fs - the file system.
 * @param replacement - the journal's line.
 * @returns the state; a log that is gone is superseded.
 */
export async function stateNow(fs: ReleaseFs, replacement: Replacement): Promise<ReplacementState> {
  const log = await fs.stat(replacement.log, { bigint: true }).catch(() => undefined)
  if (log === undefined) return { kind: 'superseded' }
  return replacementState(
    replacement,
    { ino: String(log.ino), size: Number(log.size) },
    await keptSize(fs, replacement),
  )
}

/** The kept original's size now, or `undefined` when it is gone (then only the log tells). */
async function keptSize(fs: ReleaseFs, replacement: Replacement): Promise<number | undefined> {
  return (await fs.stat(replacement.kept).catch(() => undefined))?.size
}

/** The earlier run whose replacement a log still is, and what became of it since. */
export interface EarlierReplacement {
  readonly run: EarlierRun
  readonly replacement: Replacement
  readonly state: ReplacementState
}

/**
 * Whether a log still begins with what a replacement wrote: its first `size` bytes hash as the
 * line says (a line an earlier build wrote, without a hash: the same inode).
 */
async function stillBegins(
  fs: ReleaseFs,
  log: string,
  now: { readonly ino: bigint; readonly size: bigint },
  replacement: Replacement,
): Promise<boolean> {
  if (replacement.hash === undefined) return replacement.ino === String(now.ino)
  if (Number(now.size) < replacement.size) return false
  const hash = createHash('sha256')
  const handle = await fs.open(log, 'r')
  try {
    for await (const chunk of readChunks(handle, 0, replacement.size)) hash.update(chunk)
  } finally {
    await handle.close()
  }
  return hash.digest('hex') === replacement.hash
}

/**
 * The earlier replacement a log still is: the newest journal line naming its path whose
 * replacement the log still begins with. A line that no longer fits (a log copied back from an
 * original, rewritten since) is passed over: the log is released as it is.
 * @param fs - the file system.
 * @param log - the log, as found under the home.
 * @param earlier - the earlier runs, oldest first.
 * @returns the replacement and its state, or `undefined` when no earlier run wrote this file.
 */
export async function findReplacement(
  fs: ReleaseFs,
  log: string,
  earlier: readonly EarlierRun[],
): Promise<EarlierReplacement | undefined> {
  // A log that cannot be read here is left by its release, which says why.
  const found = await Promise.all([fs.realpath(log), fs.stat(log, { bigint: true })]).catch(() => undefined)
  if (found === undefined) return undefined
  const [real, now] = found
  for (const run of [...earlier].reverse())
    for (const replacement of [...(run.journal?.replacements ?? [])].reverse()) {
      if (replacement.log !== real || !(await stillBegins(fs, real, now, replacement))) continue
      // The log is that replacement (by its content): its inode, after a move, need not be.
      const size = Number(now.size)
      const state = replacementState(replacement, { ino: replacement.ino, size }, await keptSize(fs, replacement))
      return { run, replacement, state }
    }
  return undefined
}

/** The seqs at a rebuild's joins. */
interface Joins {
  /** The seq after the kept original's last event. */
  readonly keptNext: number
  /** The seq after the replacement's last event, as that run wrote it. */
  readonly writtenNext: number
  /** The first seq a DSH wrote after the replacement, when it wrote any. */
  readonly tailFirst: number | undefined
}

/** The seq after the last event of a log's first `to` bytes; 0 for a log of a header alone. */
async function seqAfterLast(handle: FileHandle, compressed: boolean, to: number): Promise<number> {
  let last: Buffer = Buffer.alloc(0)
  let rows = 0
  for await (const { plaintext } of readBatches(handle, compressed, 0, to)) {
    for (let at = plaintext.indexOf(0x0a); at !== -1; at = plaintext.indexOf(0x0a, at + 1)) rows += 1
    // A batch ends with a newline: its last row runs from the newline before that one.
    const end = plaintext.length - 1
    last = plaintext.subarray(plaintext.lastIndexOf(0x0a, end - 1) + 1, plaintext[end - 1] === 0x0d ? end - 1 : end)
  }
  // The first row is the header's: a log of it alone holds no event.
  return rows <= 1 ? 0 : seqAfter(last, 'the last row')
}

/**
 * Read the seqs at a rebuild's joins.
 * @param fs - the file system.
 * @param log - the log's real path.
 * @param compressed - whether it is Zstandard frames.
 * @param replacement - the earlier run's journal line for it.
 * @returns the joins.
 */
async function readJoins(fs: ReleaseFs, log: string, compressed: boolean, replacement: Replacement): Promise<Joins> {
  const kept = await fs.open(replacement.kept, 'r')
  // Opened inside: a log that cannot be opened must not leave the kept original's handle open.
  let current: FileHandle | undefined
  try {
    current = await fs.open(log, 'r')
    const keptNext = await seqAfterLast(kept, compressed, Number.POSITIVE_INFINITY)
    const writtenNext = await seqAfterLast(current, compressed, replacement.size)
    let tailFirst: number | undefined
    for await (const { plaintext } of readBatches(current, compressed, replacement.size)) {
      tailFirst = readRowHead(plaintext.subarray(0, plaintext.indexOf(0x0a)), 0).seq
      break
    }
    return { keptNext, writtenNext, tailFirst }
  } finally {
    await Promise.all([kept.close(), current?.close()])
  }
}

/**
 * Release one log, mending it first where an earlier run's replacement of it was written to
 * since: rebuilt from that run's kept original and the rows a DSH wrote after it, or released
 * as it is when those rows follow the replacement's numbering.
 * @param log - the log.
 * @param before - the earlier replacement it still is, if any.
 * @param options - how to release it.
 * @returns what became of it.
 */
export async function releaseLog(
  log: string,
  before: EarlierReplacement | undefined,
  options: ReleaseFileOptions,
): Promise<FileRelease> {
  // Found by its content, a replacement is never cut: only one a DSH wrote to needs mending.
  if (before === undefined || before.state.kind !== 'appended') return releaseFile(log, options)
  const { run, replacement, state } = before
  // An original a removal let go once nothing could write it: a removal keeps the numbering, so
  // the log holds every event. (An upgrade's original gone is left below: nothing to rebuild from.)
  const keptGone = await options.fs.stat(replacement.kept).then(
    () => false,
    () => true,
  )
  if (run.journal?.mode === 'removal' && keptGone) return releaseFile(log, options)
  const left = (reason: string): FileRelease => ({
    outcome: {
      path: log,
      sessionId: undefined,
      status: 'left',
      reason: `${reason}; its original is ${replacement.kept}`,
    },
  })
  let source: ReturnType<typeof rebuildSource>
  try {
    const joins = await readJoins(options.fs, replacement.log, log.endsWith('.zstd'), replacement)
    source = rebuildSource({ originalGrew: state.originalGrew, ...joins })
  } catch (error) {
    return left(
      `a DSH wrote to it after ${run.folder} released it, and it cannot be rebuilt: ${(error as Error).message}`,
    )
  }
  if (source === 'conflict')
    return left(
      `a DSH wrote both to it and to its original after ${run.folder} released it, and their events do not join`,
    )
  if (source === 'log') return releaseFile(log, options)
  return releaseFile(log, { ...options, rebuild: { original: replacement.kept, tailFrom: replacement.size } })
}

/**
 * The active loops an upgrade removed from a log, read again from the original it kept.
 * @param fs - the file system.
 * @param kept - the kept original.
 * @returns the loops; none when the original cannot be read, or its loop records cannot.
 */
export async function loopsKeptIn(fs: ReleaseFs, kept: string): Promise<readonly RemovedLoop[]> {
  const read = await releaseFile(kept, { mode: RELEASE_MODES.upgrade, fs })
  return 'outcome' in read && read.outcome.status === 'released' ? (read.outcome.removedLoops ?? []) : []
}

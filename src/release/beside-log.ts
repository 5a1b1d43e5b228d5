/**
 * The files a release puts beside a log while it replaces it, named so that a later run knows
 * them (its temp file; an original held there while its copy is made), and how the original is
 * kept (SPEC.md §13 "Leaving loop").
 * @module dsh-plugin-loop/release/beside-log
 */
import { randomBytes } from 'node:crypto'
import type { FileHandle } from 'node:fs/promises'
import { basename, dirname } from 'node:path'
import { linkImpossible, syncedCopy, type ReleaseFs } from './release-fs.ts'

/** How the name of a release's temp file ends, after its log's: `.loop-release[-<run>].tmp`. */
const RELEASE_TEMP_END = /^\.loop-release(-[0-9a-z-]+)?\.tmp$/

/** How the name of an original held beside its log ends, after the log's: `.loop-release-<run>.hold`. */
const RELEASE_HOLD_END = /^\.loop-release-[0-9a-z-]+\.hold$/

/**
 * A name of this run's beside a log: its temp file (`tmp`, created exclusively, so no other run's
 * can be opened over it), or the original held there while its copy elsewhere is made whole (`hold`).
 */
export function runFileOf(path: string, kind: 'tmp' | 'hold'): string {
  return `${path}.loop-release-${process.pid}-${randomBytes(4).toString('hex')}.${kind}`
}

/** How an original was kept: a link; or a copy, the original linked beside the log (`hold`) until the copy is whole. */
export type Kept = { readonly kind: 'link' } | { readonly kind: 'copy'; readonly hold: string | undefined }

/**
 * Keep the original: a hard link, or where none can be made (the folder of originals on another
 * device), a copy synced to disk of exactly what was read (from the handle read, up to the size
 * read), what a DSH appends later added once after the rename. Meanwhile the original stays
 * linked beside the log (same folder, same device), so that a kill before the copy is whole
 * loses nothing: the next run finishes it.
 * @returns how it was kept.
 */
export async function keepOriginal(
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

/**
 * What a release run replaced, kept beside the originals in its own folder: a line per log,
 * written and synced before the log is replaced, so that a later run can tell whether a DSH
 * wrote to a log or its original after the replacement, and mend it (SPEC.md §13 "Leaving loop").
 * Parsing and every decision here are pure; reading the folders is `readEarlierRuns`.
 * @module dsh-plugin-loop/release/journal
 */
import { isAbsolute, join, relative, resolve } from 'node:path'
import { isCount, isRecord } from '../shared/guards.ts'
import { errorCode, type ReleaseFs } from './release-fs.ts'

/** Under the home: where a release keeps the originals it replaces, one folder per run. */
export const BACKUP_FOLDER = 'loop-release-backup'

/** In a run's folder: its journal. */
export const JOURNAL_FILE = 'release.jsonl'

/** One log a run replaced: where its original is kept, how much of it was read, and what was written. */
export interface Replacement {
  /** The log's real path (a linked log's target). */
  readonly log: string
  /** Where the original is kept. */
  readonly kept: string
  /** A hard link (it grows with the original) or a copy (synced, and made whole of what was written to the original until its run checked). */
  readonly keptAs: 'link' | 'copy'
  /** The original's size when it was read. */
  readonly readSize: number
  /** The replacement's inode (a decimal string: it may pass 2^53) and size as written. */
  readonly ino: string
  readonly size: number
  /**
   * The sha256 (hex) of the replacement's bytes as written: a later run knows the log is still
   * that replacement by its first `size` bytes, wherever the home moved and whatever inode it has.
   * Absent from a line an earlier build wrote (then the inode tells).
   */
  readonly hash?: string
  /** A copy's original, linked beside the log until the copy was whole: a run killed before then left it for the next. */
  readonly hold?: string
}

/** A line of a journal. */
type JournalLine = { readonly kind: 'run'; readonly mode: string } | ({ readonly kind: 'replaced' } & Replacement)

/**
 * A journal line as written: one JSON object and a newline.
 * @param line - the line.
 * @returns its text.
 */
export function journalLine(line: JournalLine): string {
  return `${JSON.stringify(line)}\n`
}

/** What a journal says of its run. */
export interface Journal {
  readonly mode: string | undefined
  readonly replacements: readonly Replacement[]
}

/** Whether a parsed line is a replacement. */
function isReplacement(value: Record<string, unknown>): boolean {
  return (
    value['kind'] === 'replaced' &&
    typeof value['log'] === 'string' &&
    typeof value['kept'] === 'string' &&
    (value['keptAs'] === 'link' || value['keptAs'] === 'copy') &&
    isCount(value['readSize']) &&
    typeof value['ino'] === 'string' &&
    isCount(value['size']) &&
    (value['hash'] === undefined || typeof value['hash'] === 'string') &&
    (value['hold'] === undefined || typeof value['hold'] === 'string')
  )
}

/**
 * Read a journal's text. A line cut short by a kill (the last), or one this version does not
 * know, is passed over: a replacement whose line was not synced was never made.
 * @param text - the journal.
 * @returns its run's mode and what it replaced.
 */
export function parseJournal(text: string): Journal {
  let mode: string | undefined
  const replacements: Replacement[] = []
  for (const line of text.split('\n')) {
    let value: unknown
    try {
      value = JSON.parse(line)
    } catch {
      continue
    }
    if (!isRecord(value)) continue
    if (value['kind'] === 'run' && typeof value['mode'] === 'string') mode = value['mode']
    else if (isReplacement(value)) {
      const { log, kept, keptAs, readSize, ino, size, hash, hold } = value as unknown as Replacement
      replacements.push({
        log,
        kept,
        keptAs,
        readSize,
        ino,
        size,
        ...(hash === undefined ? {} : { hash }),
        ...(hold === undefined ? {} : { hold }),
      })
    }
  }
  return { mode, replacements }
}

/** An earlier run's folder under `loop-release-backup`, and its journal when it has one. */
export interface EarlierRun {
  readonly folder: string
  readonly journal: Journal | undefined
}

/**
 * The folders earlier runs left under a home's `loop-release-backup`, in the order they ran.
 * @param fs - the file system.
 * @param home - the home.
 * @returns each folder with its journal (none for a folder an earlier version wrote).
 */
export async function readEarlierRuns(fs: ReleaseFs, home: string): Promise<EarlierRun[]> {
  const root = join(home, BACKUP_FOLDER)
  let names: string[]
  try {
    const entries = await fs.readdir(root, { withFileTypes: true })
    names = entries.filter((entry) => entry.isDirectory()).map((entry) => entry.name)
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return []
    throw error
  }
  const realHome = await fs.realpath(home)
  const runs: EarlierRun[] = []
  for (const name of names.sort()) {
    const folder = join(root, name)
    const text = await fs.readFile(join(folder, JOURNAL_FILE), 'utf8').catch((error: unknown) => {
      if (errorCode(error) === 'ENOENT') return undefined
      throw error
    })
    runs.push({ folder, journal: text === undefined ? undefined : inHome(parseJournal(text), home, realHome) })
  }
  return runs
}

/**
 * A journal's paths as this home has them: a line names a log relative to the home's real path
 * and an original relative to the home (a line an earlier build wrote, absolute: kept as it is).
 */
function inHome(journal: Journal, home: string, realHome: string): Journal {
  return {
    mode: journal.mode,
    replacements: journal.replacements.map((line) => ({
      ...line,
      log: resolve(realHome, line.log),
      kept: resolve(home, line.kept),
      ...(line.hold === undefined ? {} : { hold: resolve(realHome, line.hold) }),
    })),
  }
}

/**
 * A replacement as its journal line names it: the log relative to the home's real path (where
 * it is inside), the original relative to the home, so that a moved home still finds both.
 * @param replacement - the replacement, its paths absolute.
 * @param home - the home.
 * @param realHome - the home's real path.
 * @returns the line.
 */
export function journalEntry(replacement: Replacement, home: string, realHome: string): Replacement {
  const inside = (path: string) => {
    const named = relative(realHome, path)
    return named.startsWith('..') || isAbsolute(named) ? path : named
  }
  return {
    ...replacement,
    log: inside(replacement.log),
    kept: relative(home, replacement.kept),
    ...(replacement.hold === undefined ? {} : { hold: inside(replacement.hold) }),
  }
}

/** A file's identity and size, as a replacement is checked against it. */
export interface FileState {
  readonly ino: string
  readonly size: number
}

/**
 * What an earlier replacement means for its log now.
 * - `superseded`: the log is not the file that run wrote (a later run replaced it, or the rename never happened);
 * - `whole`: nothing was written to the log or to its original since;
 * - `appended`: a DSH wrote to the original after it was read (`originalGrew`), or to the log
 *   after it was written (`tail` bytes), and the log must be rebuilt;
 * - `cut`: the log is shorter than that run wrote it, which no DSH does: it is left.
 * @param replacement - the journal's line.
 * @param log - the log as it is now.
 * @param keptSize - the kept original's size now (`undefined` when it is gone: then only the log tells).
 * @returns the state.
 */
export function replacementState(
  replacement: Replacement,
  log: FileState,
  keptSize: number | undefined,
):
  | { readonly kind: 'superseded' }
  | { readonly kind: 'whole' }
  | { readonly kind: 'cut' }
  | { readonly kind: 'appended'; readonly originalGrew: boolean; readonly tail: number } {
  if (log.ino !== replacement.ino) return { kind: 'superseded' }
  if (log.size < replacement.size) return { kind: 'cut' }
  const originalGrew = keptSize !== undefined && keptSize > replacement.readSize
  const tail = log.size - replacement.size
  return originalGrew || tail > 0 ? { kind: 'appended', originalGrew, tail } : { kind: 'whole' }
}

/**
 * Where a rebuilt log's events come from, by the seqs at the joins: the rows a DSH wrote after the
 * replacement continue either the original's numbering (it had read the original: the kept
 * original and those rows are the log) or the replacement's (it had read the replacement: the log
 * as it is holds every event).
 * @param input - whether the original grew, the first seq of the rows after the replacement (none
 *   when there are none), and the seq after the kept original's last event and after the replacement's.
 * @returns the source, or `conflict` when neither numbering joins (two DSH processes wrote).
 */
export function rebuildSource(input: {
  readonly originalGrew: boolean
  readonly tailFirst: number | undefined
  readonly keptNext: number
  readonly writtenNext: number
}): 'original-and-tail' | 'log' | 'conflict' {
  const { originalGrew, tailFirst, keptNext, writtenNext } = input
  if (tailFirst === undefined || tailFirst === keptNext) return 'original-and-tail'
  return !originalGrew && tailFirst === writtenNext ? 'log' : 'conflict'
}

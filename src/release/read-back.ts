/**
 * The release's last word on each log it calls released (SPEC.md §13 "Leaving loop"): read back
 * from disk as soon as the run is done with it (`check-log.ts`), and read again, as the run's
 * last act, where a log changed since. A log DSH would not open becomes `FAILED`.
 * @module dsh-plugin-loop/release/read-back
 */
import { existsSync } from 'node:fs'
import { fileStamp, whyUnopenable } from './check-log.ts'
import type { HomeRelease } from './home.ts'
import type { ReleaseMode } from './modes.ts'
import type { FileOutcome } from './release-file.ts'

/** A log that passed its read-back: its stamp then, and where its original is kept. */
export interface ReadBack {
  readonly stamp: string | undefined
  readonly original: string | undefined
}

/**
 * Read back a log the run calls released or already released: one DSH would not open is `FAILED`.
 * @param file - the log's outcome.
 * @param mode - the release.
 * @param original - where this run kept its original, if it did.
 * @returns its outcome now, and what it was when it passed.
 */
export function readBack(
  file: FileOutcome,
  mode: ReleaseMode,
  original: string | undefined,
): { readonly outcome: FileOutcome; readonly passed?: ReadBack } {
  if (file.status !== 'released' && file.status !== 'already-released') return { outcome: file }
  const stamp = fileStamp(file.path)
  const reason = whyUnopenable(file.path, mode.loopRows, file.path.endsWith('.zstd'))
  if (reason === undefined) return { outcome: file, passed: { stamp, original } }
  return { outcome: unopenable(file, reason, original) }
}

/** A log's outcome once the read-back failed. */
function unopenable(file: FileOutcome, reason: string, original: string | undefined): FileOutcome {
  return {
    path: file.path,
    sessionId: file.sessionId,
    status: 'unopenable',
    reason,
    ...(original === undefined ? {} : { original }),
  }
}

/**
 * The run's last act, after its lock is given back: a log written since it was read back (a DSH
 * the looks did not see) is read back again. Synchronous, so nothing of the run comes after it.
 * @param release - what the run did.
 * @param checked - the logs that passed the read-back, with what they were then.
 * @param mode - the release.
 * @returns the release, each log written since and no longer opening `FAILED`.
 */
export function readBackAgain(
  release: HomeRelease,
  checked: ReadonlyMap<string, ReadBack>,
  mode: ReleaseMode,
): HomeRelease {
  const files = release.files.map((file) => {
    const then = checked.get(file.path)
    // A log found written meanwhile after its read-back says so already.
    if (then === undefined || file.status === 'written-meanwhile' || fileStamp(file.path) === then.stamp) return file
    const reason = whyUnopenable(file.path, mode.loopRows, file.path.endsWith('.zstd'))
    if (reason === undefined) return file
    // A clean removal has deleted its originals by now; any removal may have let one go earlier.
    const original =
      release.backupFolder === undefined || then.original === undefined || !existsSync(then.original)
        ? undefined
        : then.original
    return unopenable(
      file,
      `it changed after the release read it back (a DSH the looks did not see): ${reason}`,
      original,
    )
  })
  return { ...release, files }
}

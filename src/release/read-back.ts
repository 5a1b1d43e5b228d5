/**
 * The release's last word on each log it calls released (SPEC.md §13 "Leaving loop"): read back
 * from disk at the end of a run (`check-log.ts`), and read again, as the run's last act, where a
 * log changed since. A log DSH would not open becomes `FAILED`.
 * @module dsh-plugin-loop/release/read-back
 */
import { fileStamp, whyUnopenable } from './check-log.ts'
import type { HomeRelease } from './home.ts'
import type { ReleaseMode } from './modes.ts'
import type { FileOutcome } from './release-file.ts'

/** A log read back at the end of a run: its stamp then, and where its original is kept. */
export interface ReadBack {
  readonly stamp: string | undefined
  readonly original: string | undefined
}

/**
 * Read back each log called released or already released: one DSH would not open is `FAILED`.
 * @param files - the outcomes, changed in place.
 * @param mode - the release.
 * @param originalOf - where this run kept the original of the log at an index.
 * @returns the logs that passed, by path, with what they were then.
 */
export function readBack(
  files: FileOutcome[],
  mode: ReleaseMode,
  originalOf: (index: number) => string | undefined,
): Map<string, ReadBack> {
  const passed = new Map<string, ReadBack>()
  for (const [index, file] of files.entries()) {
    if (file.status !== 'released' && file.status !== 'already-released') continue
    const stamp = fileStamp(file.path)
    const reason = whyUnopenable(file.path, mode.loopRows, file.path.endsWith('.zstd'))
    const original = originalOf(index)
    if (reason === undefined) passed.set(file.path, { stamp, original })
    else files[index] = unopenable(file, reason, original)
  }
  return passed
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
    if (then === undefined || fileStamp(file.path) === then.stamp) return file
    const reason = whyUnopenable(file.path, mode.loopRows, file.path.endsWith('.zstd'))
    if (reason === undefined) return file
    // A clean removal has deleted its originals by now.
    const original = release.backupFolder === undefined ? undefined : then.original
    return unopenable(
      file,
      `it changed after the release read it back (a DSH the looks did not see): ${reason}`,
      original,
    )
  })
  return { ...release, files }
}

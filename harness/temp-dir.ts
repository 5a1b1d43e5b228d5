/**
 * The one way a test, the benchmark or the browser run makes a scratch
 * directory: a fresh one under the OS temp dir. Free of vitest, so
 * scripts/bench/ and test/browser/ share it.
 * @module harness/temp-dir
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * A fresh temp directory.
 * @param prefix - directory name prefix (`loop-test-` unless given).
 * @returns its path.
 */
export function tempDir(prefix = 'loop-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix))
}

/**
 * The part of `node:fs/promises` a release uses: the fault tests pass one that fails, or
 * stops for good, at a chosen call.
 * @module dsh-plugin-loop/release/release-fs
 */
import type * as fsPromises from 'node:fs/promises'

/** The file system calls a release makes. */
export type ReleaseFs = Pick<
  typeof fsPromises,
  'open' | 'stat' | 'lstat' | 'readdir' | 'readFile' | 'realpath' | 'rename' | 'link' | 'copyFile' | 'mkdir' | 'rm'
>

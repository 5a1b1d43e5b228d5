/**
 * The part of `node:fs/promises` a release uses (the fault tests pass one that fails, or stops
 * for good, at a chosen call), and the few ways of using it every module of the release shares.
 * @module dsh-plugin-loop/release/release-fs
 */
import type * as fsPromises from 'node:fs/promises'
import type { FileHandle } from 'node:fs/promises'

/** The file system calls a release makes. */
export type ReleaseFs = Pick<
  typeof fsPromises,
  | 'open'
  | 'stat'
  | 'lstat'
  | 'statfs'
  | 'readdir'
  | 'readFile'
  | 'realpath'
  | 'rename'
  | 'link'
  | 'copyFile'
  | 'mkdir'
  | 'rm'
>

/**
 * A file system error's code.
 * @param error - what was thrown.
 * @returns its `code`, or `undefined` for an error without one.
 */
export function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code
}

/**
 * Whether a hard link cannot be made there (another file system, or one without links).
 * @param error - what `link` threw.
 * @returns true when a copy or an exclusive create must do instead.
 */
export function linkImpossible(error: unknown): boolean {
  return ['EXDEV', 'EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'EMLINK'].includes(errorCode(error) ?? '')
}

/**
 * Write a file and sync it to disk before closing it.
 * @param fs - the file system.
 * @param path - the file.
 * @param data - its content.
 * @param flags - how it is opened: `wx` to create it or fail, `a` to append.
 */
export async function syncedWrite(
  fs: ReleaseFs,
  path: string,
  data: string | Buffer,
  flags: 'wx' | 'a',
): Promise<void> {
  const handle = await fs.open(path, flags)
  try {
    await handle.writeFile(data)
    await handle.sync()
  } finally {
    await handle.close()
  }
}

/** How much of a log is read at a time. */
export const READ_CHUNK_BYTES = 1 << 20

/**
 * The one chunked read of a file: its bytes from `from` to its end, a chunk at a time.
 * @param handle - the file, open for reading.
 * @param from - where to start.
 * @param to - where to stop (by default, the end the reads find).
 */
export async function* readChunks(handle: FileHandle, from = 0, to = Number.POSITIVE_INFINITY): AsyncGenerator<Buffer> {
  for (let position = from; position < to;) {
    const length = Math.min(READ_CHUNK_BYTES, to - position)
    // Not zero-filled: only the bytes read are handed on.
    const { buffer, bytesRead } = await handle.read({ buffer: Buffer.allocUnsafeSlow(length), position, length })
    if (bytesRead === 0) return
    yield buffer.subarray(0, bytesRead)
    position += bytesRead
  }
}

/**
 * Copy a range of an open file into another, synced: a kept original made of what was read, or
 * made whole of what was appended to the original after.
 * @param fs - the file system.
 * @param from - the original, open for reading.
 * @param to - the copy: created (`wx`), or appended to (`a`).
 * @param flags - how the copy is opened.
 * @param start - where the range begins.
 * @param end - where it ends (by default, the end the reads find).
 */
export async function syncedCopy(
  fs: ReleaseFs,
  from: FileHandle,
  to: string,
  flags: 'wx' | 'a',
  start = 0,
  end = Number.POSITIVE_INFINITY,
): Promise<void> {
  const copy = await fs.open(to, flags)
  try {
    // `writeFile` writes at the copy's position until every byte is written; `write` may stop short.
    for await (const chunk of readChunks(from, start, end)) await copy.writeFile(chunk)
    await copy.sync()
  } finally {
    await copy.close()
  }
}

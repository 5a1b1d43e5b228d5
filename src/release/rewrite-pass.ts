/**
 * One pass of a log through its rewrite: its batches read from their files, each rewritten,
 * and from the first that changes, everything written to a temp file and hashed (SPEC.md §13 "Leaving loop").
 * @module dsh-plugin-loop/release/rewrite-pass
 */
import { createHash, type Hash } from 'node:crypto'
import type { FileHandle } from 'node:fs/promises'
import { readBatches } from './log-batches.ts'
import type { LogStage } from './modes.ts'
import { READ_CHUNK_BYTES, readChunks } from './release-fs.ts'
import type { LogRewrite } from './rewrite.ts'
import { encodeFrame } from './zstd-frames.ts'

/**
 * A temp file being written, and the hash of what was written to it: what a journal line names it
 * by. Bytes gather up to a read's worth before they are written: one write, not one a frame.
 */
export interface TempFile {
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
export interface Source {
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
export async function rewritePass(
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

/**
 * The one reader of a log's batches, for every pass that reads a log's rows (a release, a
 * mend's joins): a Zstandard log frame by frame, a plain log in whole rows (SPEC.md §13 "Leaving loop").
 * @module dsh-plugin-loop/release/log-batches
 */
import type { FileHandle } from 'node:fs/promises'
import { cutShort } from './refusals.ts'
import { readChunks } from './release-fs.ts'
import { decodeFrame, readFrames } from './zstd-frames.ts'

/** One batch of a log: where it starts in its file, its bytes on disk, and its rows. */
export interface Batch {
  readonly start: number
  readonly stored: Buffer
  readonly plaintext: Buffer
}

/**
 * The batches of a log from a place in it: a Zstandard log's frames, one each; a plain log's
 * whole rows, a chunk at a time.
 * @param handle - the log, open for reading.
 * @param compressed - whether it is `session.jsonl.zstd`.
 * @param from - where the first batch begins.
 * @param to - where the last batch ends (a row's or frame's end; by default the file's).
 */
export async function* readBatches(
  handle: FileHandle,
  compressed: boolean,
  from = 0,
  to = Number.POSITIVE_INFINITY,
): AsyncGenerator<Batch> {
  if (compressed) {
    for await (const { start, frame } of readFrames(handle, from, to))
      yield { start, stored: frame, plaintext: decodeFrame(frame) }
    return
  }
  let pending: Buffer = Buffer.alloc(0)
  let pendingStart = from
  for await (const chunk of readChunks(handle, from, to)) {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
    const end = pending.lastIndexOf(0x0a) + 1
    if (end > 0) yield { start: pendingStart, stored: pending.subarray(0, end), plaintext: pending.subarray(0, end) }
    pending = pending.subarray(end)
    pendingStart += end
  }
  if (pending.length > 0) throw cutShort()
}

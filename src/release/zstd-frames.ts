/**
 * A `session.jsonl.zstd` log is a sequence of independent, checksummed Zstandard frames: the
 * header alone in the first, then one per flushed batch. Node's one-shot decompress stops
 * after the first frame without an error, so a release walks the frames itself and rewrites
 * each one as one frame.
 * @module dsh-plugin-loop/release/zstd-frames
 */
import type { FileHandle } from 'node:fs/promises'
import { constants, zstdCompressSync, zstdDecompressSync } from 'node:zlib'
import { LogRefusal, cutShort } from './refusals.ts'
import { readChunks } from './release-fs.ts'

const ZSTD_MAGIC = 0xfd2fb528

/** DSH's frame options: every frame carries its content checksum. */
const CHECKSUM = { params: { [constants.ZSTD_c_checksumFlag]: 1 } }

/**
 * Where the frame that starts at `start` ends, read from its header and block headers
 * without decompressing it (RFC 8878 §3.1.1).
 * @param buffer - bytes of the log from some frame boundary on.
 * @param start - the frame's first byte in `buffer`.
 * @returns the byte after the frame, or `undefined` when `buffer` ends inside it.
 */
export function zstdFrameEnd(buffer: Buffer, start: number): number | undefined {
  if (buffer.length - start < 5) return undefined
  if (buffer.readUInt32LE(start) !== ZSTD_MAGIC)
    throw new LogRefusal(`the Zstandard frame at byte ${start} does not start with the frame magic`)
  const descriptor = buffer[start + 4]!
  const contentSizeFlag = descriptor >>> 6
  const singleSegment = (descriptor & 0x20) !== 0
  const checksum = (descriptor & 0x04) !== 0
  const dictionaryBytes = [0, 1, 2, 4][descriptor & 0x03]!
  const contentSizeBytes = contentSizeFlag === 0 ? (singleSegment ? 1 : 0) : 1 << contentSizeFlag
  let offset = start + 5 + (singleSegment ? 0 : 1) + dictionaryBytes + contentSizeBytes
  for (;;) {
    if (buffer.length - offset < 3) return undefined
    const block = buffer.readUIntLE(offset, 3)
    const blockType = (block >>> 1) & 0x03
    if (blockType === 3) throw new LogRefusal(`the Zstandard block at byte ${offset} has the reserved type`)
    offset += 3 + (blockType === 1 ? 1 : block >>> 3)
    if ((block & 1) === 1) break
  }
  offset += checksum ? 4 : 0
  return offset <= buffer.length ? offset : undefined
}

/**
 * The one walk over a Zstandard log's frames: the file read a chunk at a time, each whole frame
 * handed on with where it starts, without decompressing it.
 * @param handle - the log, open for reading.
 * @param from - where the first frame begins (a frame boundary).
 * @param to - where the last frame ends (a frame boundary; by default the file's end).
 * @throws LogRefusal when the file ends inside a frame (DSH stopped while saving) or holds no frame where one must begin.
 */
export async function* readFrames(
  handle: FileHandle,
  from = 0,
  to = Number.POSITIVE_INFINITY,
): AsyncGenerator<{ readonly start: number; readonly frame: Buffer }> {
  let pending: Buffer = Buffer.alloc(0)
  let pendingStart = from
  for await (const chunk of readChunks(handle, from, to)) {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
    let start = 0
    for (let end = zstdFrameEnd(pending, start); end !== undefined; end = zstdFrameEnd(pending, start)) {
      yield { start: pendingStart + start, frame: pending.subarray(start, end) }
      start = end
    }
    pending = pending.subarray(start)
    pendingStart += start
  }
  if (pending.length > 0) throw cutShort()
}

/**
 * Decompress one whole frame, checking its checksum.
 * @param frame - exactly one frame.
 * @returns its plaintext.
 */
export function decodeFrame(frame: Buffer): Buffer {
  return zstdDecompressSync(frame)
}

/**
 * Compress a batch as one checksummed frame, as DSH writes one.
 * @param plaintext - the batch's rows, each ending in a newline.
 * @returns one frame.
 */
export function encodeFrame(plaintext: Buffer): Buffer {
  return zstdCompressSync(plaintext, CHECKSUM)
}

/** Walking a Zstandard log frame by frame without decompressing (SPEC.md §13 "Leaving loop"). */
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { zstdCompressSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { LogRefusal } from '../../src/release/refusals.ts'
import { decodeFrame, encodeFrame, zstdFrameEnd } from '../../src/release/zstd-frames.ts'
import { framesOf } from '../support/release-home.ts'
import { tempDir } from '../../harness/temp-dir.ts'

/** The frames of a log written to a file of its own. */
function framesOfFile(log: Buffer): ReturnType<typeof framesOf> {
  const path = join(tempDir('loop-frames-'), 'session.jsonl.zstd')
  writeFileSync(path, log)
  return framesOf(path)
}

describe('zstdFrameEnd', () => {
  it('finds the end of each of several frames, as DSH writes them and as other encoders do, read a chunk at a time', async () => {
    const frames = [
      encodeFrame(Buffer.from('{"type":"session"}\n')),
      encodeFrame(Buffer.from('x'.repeat(300_000))), // content size in 4 bytes, RLE blocks
      zstdCompressSync(Buffer.from('no checksum\n')),
      zstdCompressSync(Buffer.alloc(0)),
      encodeFrame(
        Buffer.from(Array.from({ length: 200_000 }, (_, i) => String.fromCharCode(33 + ((i * 7919) % 90))).join('')),
      ),
      // Larger than a read: it spans chunks.
      encodeFrame(Buffer.from(randomBytes(1_200_000).toString('base64'))),
    ]
    const log = Buffer.concat(frames)
    // Read a chunk at a time: the large frame spans chunks.
    const read = await framesOfFile(log)
    let offset = 0
    expect(read.map(({ start }) => start)).toEqual(frames.map((frame) => (offset += frame.length) - frame.length))
    expect(read.map(({ frame }) => frame)).toEqual(frames)
    expect(decodeFrame(read[0]!.frame).toString()).toBe('{"type":"session"}\n')
    // A log whose last frame was cut short.
    await expect(framesOfFile(log.subarray(0, -3))).rejects.toThrow(/^its last write was cut short/)
  })

  it('reads the header forms DSH does not write: a window descriptor, a dictionary id, a 2- and 8-byte content size', () => {
    // Magic, descriptor, then the fields it announces, then one empty raw last block.
    const frame = (descriptor: number, fieldBytes: number): Buffer =>
      Buffer.concat([
        Buffer.from([0x28, 0xb5, 0x2f, 0xfd, descriptor]),
        Buffer.alloc(fieldBytes),
        Buffer.from([0x01, 0x00, 0x00]),
      ])
    expect(zstdFrameEnd(frame(0x00, 1), 0)).toBe(9) // window descriptor only
    expect(zstdFrameEnd(frame(0x03, 1 + 4), 0)).toBe(13) // and a 4-byte dictionary id
    expect(zstdFrameEnd(frame(0x41, 1 + 1 + 2), 0)).toBe(12) // 1-byte dictionary id, 2-byte content size
    expect(zstdFrameEnd(frame(0xe2, 2 + 8), 0)).toBe(18) // single segment, 2-byte dictionary id, 8-byte size
  })

  it('says when the buffer ends inside a frame', () => {
    const frame = encodeFrame(Buffer.from('{"type":"session"}\n'))
    for (const cut of [0, 3, 5, frame.length - 5, frame.length - 1])
      expect(zstdFrameEnd(frame.subarray(0, cut), 0)).toBeUndefined()
  })

  it('refuses bytes that are not a frame, and the reserved block type', () => {
    expect(() => zstdFrameEnd(Buffer.from('{"type":"session"}\n'), 0)).toThrow(
      new LogRefusal('the Zstandard frame at byte 0 does not start with the frame magic'),
    )
    const reserved = Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x20, 0x00, 0x07, 0x00, 0x00])
    expect(() => zstdFrameEnd(reserved, 0)).toThrow(
      new LogRefusal('the Zstandard block at byte 6 has the reserved type'),
    )
  })
})

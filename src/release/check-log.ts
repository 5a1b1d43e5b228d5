/**
 * The release's last word on a log: read it back from disk and check it by the rules DSH's
 * readers apply, before the report may call it released (SPEC.md §13 "Leaving loop"). It shares
 * no code with what wrote the log (its own frame walk, row split and parse; Node's built-ins
 * only), so a defect of the writer cannot hide itself here.
 * @module dsh-plugin-loop/release/check-log
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs'
import { zstdDecompressSync } from 'node:zlib'

/** What a released log must be free of: unmarked loop rows (rc.8 without `loop`), or any loop row (DSH's migration). */
export type LoopRowRule = 'marked' | 'absent'

/** The type of `loop`'s records: rc.8 refuses it unmarked, the format-0 migration refuses it at all. */
const LOOP_TYPE = 'loop/change'

/** rc.8's packed `assistant/chunk` runs: one row, one event per member, numbered from `seq0`. */
const PACKED_MEMBERS: Readonly<Record<string, 'texts' | 'args'>> = Object.freeze({
  'text-chunks': 'texts',
  'reasoning-chunks': 'texts',
  'tool-call-chunks': 'args',
})

/** The bytes of a frame's start (RFC 8878 §3.1.1), little-endian. */
const FRAME_MAGIC = 0xfd2fb528

/** How much is read at a time. */
const READ_BYTES = 1 << 20

/** A failed check, with what DSH would say of the log. */
class Unopenable extends Error {}

/** The checks over a log's plaintext, row by row, for one rule. */
class RowChecker {
  private line = 0
  private nextSeq = 0
  private headerSeen = false

  constructor(private readonly rule: LoopRowRule) {}

  /** One row, without its newline (a CR before it is JSON's white space, as DSH reads it). */
  private row(text: string): void {
    this.line += 1
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      throw new Unopenable(`${this.where()} is not a JSON row`)
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw new Unopenable(`${this.where()} is not a JSON object`)
    const row = value as Record<string, unknown>
    if (!this.headerSeen) {
      this.headerSeen = true
      if (row['type'] !== 'session' || row['version'] !== 0 || typeof row['id'] !== 'string')
        throw new Unopenable('its first line is not a session header of format 0')
      return
    }
    const members = PACKED_MEMBERS[String(row['type'])]
    const first = members === undefined ? row['seq'] : row['seq0']
    const data = row['data'] as Record<string, unknown> | undefined
    const count = members === undefined ? 1 : ((data?.[members] as unknown[] | undefined)?.length ?? 0)
    if (count === 0) throw new Unopenable(`${this.where()} is a packed chunk run without members`)
    if (first !== this.nextSeq)
      throw new Unopenable(`seq gap at ${this.where()} (expected ${this.nextSeq}, got ${String(first)})`)
    this.nextSeq += count
    if (row['type'] !== LOOP_TYPE) return
    if (this.rule === 'absent')
      throw new Unopenable(`${this.where()} is a ${LOOP_TYPE} record, which DSH's migration refuses`)
    if (row['ignorable'] !== true)
      throw new Unopenable(
        `${this.where()} is a ${LOOP_TYPE} record not marked ignorable, which DSH without loop refuses`,
      )
  }

  /** Where the row being checked is, as a failure names it (made only then: a million rows pass). */
  private where(): string {
    return `line ${this.line}`
  }

  /**
   * A batch of whole rows, each ending in a newline. Decoded at once: a newline byte never
   * falls inside a UTF-8 sequence, so each row reads as it would alone, and one decode a batch
   * costs far less than one a row.
   */
  rows(bytes: Buffer, where: string): void {
    if (bytes.length === 0 || bytes[bytes.length - 1] !== 0x0a)
      throw new Unopenable(`${where} does not end with a whole row`)
    const text = bytes.toString('utf8')
    let start = 0
    for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
      this.row(text.slice(start, end))
      start = end + 1
    }
  }

  /** The end of the log. */
  end(): void {
    if (!this.headerSeen) throw new Unopenable('it is empty')
  }

  /** The header as a frame of its own holds it: exactly one row. */
  headerFrame(text: Buffer): void {
    if (text.indexOf(0x0a) !== text.length - 1) throw new Unopenable('its first frame is not exactly one header line')
    this.rows(text, 'its first frame')
  }
}

/** The length of the Zstandard frame at the start of `bytes`, or `undefined` when `bytes` ends inside it. */
function frameLength(bytes: Buffer): number | undefined {
  if (bytes.length < 5) return undefined
  if (bytes.readUInt32LE(0) !== FRAME_MAGIC) throw new Unopenable('it holds bytes that are not a Zstandard frame')
  const flags = bytes[4]!
  const windowBytes = (flags & 0x20) === 0 ? 1 : 0
  const dictionaryBytes = [0, 1, 2, 4][flags & 3]!
  const sizeBytes = [windowBytes === 0 ? 1 : 0, 2, 4, 8][flags >> 6]!
  let at = 5 + windowBytes + dictionaryBytes + sizeBytes
  let last = false
  while (!last) {
    if (at + 3 > bytes.length) return undefined
    const block = bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16)
    last = (block & 1) === 1
    at += 3 + (((block >> 1) & 3) === 1 ? 1 : block >>> 3)
  }
  at += (flags & 4) === 0 ? 0 : 4
  return at <= bytes.length ? at : undefined
}

/**
 * Every chunk of an open file, in order. Read synchronously: a check is read-only and one log at
 * a time, and a read through the thread pool per small log is most of its cost on a big home.
 */
function* chunksOf(fd: number): Generator<Buffer> {
  for (let position = 0; ;) {
    const buffer = Buffer.allocUnsafe(READ_BYTES)
    const bytesRead = readSync(fd, buffer, 0, READ_BYTES, position)
    if (bytesRead === 0) return
    position += bytesRead
    yield buffer.subarray(0, bytesRead)
  }
}

/** A `session.jsonl.zstd`: frames, each decoded with its checksum checked; the header alone in the first. */
function checkFrames(fd: number, rows: RowChecker): void {
  let pending: Buffer = Buffer.alloc(0)
  let offset = 0
  for (const chunk of chunksOf(fd)) {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
    for (let length = frameLength(pending); length !== undefined; length = frameLength(pending)) {
      let text: Buffer
      try {
        text = zstdDecompressSync(pending.subarray(0, length))
      } catch {
        throw new Unopenable(`the Zstandard frame at byte ${offset} does not decode`)
      }
      if (offset === 0) rows.headerFrame(text)
      else rows.rows(text, `the frame at byte ${offset}`)
      offset += length
      pending = pending.subarray(length)
    }
  }
  if (pending.length > 0) throw new Unopenable(`it ends inside the Zstandard frame at byte ${offset}`)
}

/** A `session.jsonl`: rows, the last ending in a newline. */
function checkLines(fd: number, rows: RowChecker): void {
  let pending: Buffer = Buffer.alloc(0)
  for (const chunk of chunksOf(fd)) {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
    const end = pending.lastIndexOf(0x0a) + 1
    if (end > 0) rows.rows(pending.subarray(0, end), 'the log')
    pending = pending.subarray(end)
  }
  if (pending.length > 0) throw new Unopenable('its last row does not end with a newline')
}

/**
 * Read a log back and check it as DSH would open it: a format-0 session header (alone in the
 * first frame of a `.zstd` log), every row a JSON object, seqs contiguous from 0 (a packed
 * chunk run counting its members), no torn end, and the loop rows as `rule` says.
 * @param path - the file.
 * @param rule - `marked` after a removal, `absent` after an upgrade.
 * @param compressed - whether it is Zstandard frames (a log named `.zstd`, or the temp file of one).
 * @returns `undefined` when DSH would open it, else why not.
 */
export function whyUnopenable(path: string, rule: LoopRowRule, compressed: boolean): string | undefined {
  const rows = new RowChecker(rule)
  let fd: number | undefined
  try {
    fd = openSync(path, 'r')
    if (compressed) checkFrames(fd, rows)
    else checkLines(fd, rows)
    rows.end()
    return undefined
  } catch (error) {
    if (error instanceof Unopenable) return error.message
    return `it could not be read back (${(error as Error).message})`
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/**
 * A file's size and modification time as the system has them now (none when it is gone): a
 * change after a check means the check no longer speaks for it.
 * @param path - the file.
 * @returns the stamp.
 */
export function fileStamp(path: string): string | undefined {
  const stats = statSync(path, { bigint: true, throwIfNoEntry: false })
  return stats === undefined ? undefined : `${stats.size}:${stats.mtimeNs}:${stats.ino}`
}

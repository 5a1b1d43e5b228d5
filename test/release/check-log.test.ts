/**
 * The release's read-back check (SPEC.md §13 "Leaving loop"): each log of a table is checked,
 * and the same file opened by the real rc.8 host without `loop` (removal) or DSH's format-0
 * migration (upgrade); the check passes exactly the logs DSH opens whole.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { constants, zstdCompressSync } from 'node:zlib'
import { SessionId } from '@deepseek-ai/dsh-session'
import { describe, expect, it } from 'vitest'
import { whyUnopenable, type LoopRowRule } from '../../src/release/check-log.ts'
import { resumeFakeAgent, useHosts } from '../support/host.ts'
import { migrateFormat0 } from '../support/format-migration.ts'
import { useLoopTypeForgettable } from '../support/release-home.ts'
import { tempDir } from '../../harness/temp-dir.ts'

const loopType = useLoopTypeForgettable()
const hosts = useHosts()

const HEADER = '{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":0}'
const run = (seq: number) =>
  `{"type":"command/run","seq":${seq},"time":2,"data":{"commandId":"c${seq}","name":"x","args":"","source":{"kind":"user"}}}`
const loop = (seq: number, marked: boolean) =>
  `{"type":"loop/change","seq":${seq},"time":1,"data":{"version":1,"operation":"delete","id":"loop_1"}${marked ? ',"ignorable":true' : ''}}`
const turnEnd = (seq: number) => `{"type":"turn/end","seq":${seq},"time":3,"data":{"turn":1,"reason":"completed"}}`
const packed = (seq0: number) =>
  `{"type":"text-chunks","seq0":${seq0},"time0":5,"data":{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":["a","b","c"]}}`

/** One log of the table: its rows (joined with newlines, each ending in one), and what the check says under each rule. */
interface Case {
  readonly name: string
  readonly rows: readonly string[]
  readonly removal: string | undefined
  readonly upgrade: string | undefined
}

const CASES: readonly Case[] = [
  {
    name: 'a marked log',
    rows: [HEADER, run(0), loop(1, true), run(2)],
    removal: undefined,
    upgrade: "line 3 is a loop/change record, which DSH's migration refuses",
  },
  {
    name: 'an upgraded log, a packed run among its rows',
    rows: [HEADER, run(0), packed(1), run(4)],
    removal: undefined,
    upgrade: undefined,
  },
  {
    name: 'an unmarked loop row',
    rows: [HEADER, run(0), loop(1, false)],
    removal: 'line 3 is a loop/change record not marked ignorable, which DSH without loop refuses',
    upgrade: "line 3 is a loop/change record, which DSH's migration refuses",
  },
  {
    name: 'a seq gap before a turn end',
    rows: [HEADER, run(0), run(5), turnEnd(6)],
    removal: 'seq gap at line 3 (expected 1, got 5)',
    upgrade: 'seq gap at line 3 (expected 1, got 5)',
  },
  {
    name: 'a packed run counted short',
    rows: [HEADER, packed(0), run(2)],
    removal: 'seq gap at line 3 (expected 3, got 2)',
    upgrade: 'seq gap at line 3 (expected 3, got 2)',
  },
  {
    name: 'a row that is not JSON',
    rows: [HEADER, run(0), '{"type":', turnEnd(1)],
    removal: 'line 3 is not a JSON row',
    upgrade: 'line 3 is not a JSON row',
  },
]

/** A sessions root holding one session log of the given bytes, in the folder DSH gives a header without `cwd`. */
function homeWith(name: string, bytes: Buffer): { root: string; log: string } {
  const root = tempDir('loop-check-')
  const folder = join(root, '_no-cwd', 's')
  mkdirSync(folder, { recursive: true })
  const log = join(folder, name)
  writeFileSync(log, bytes)
  return { root, log }
}

const lines = (rows: readonly string[]) => rows.map((row) => `${row}\n`).join('')
const text = ({ rows }: Case) => lines(rows)

/** Rows as DSH's Zstandard log holds them: the header alone in the first frame, each later batch a checksummed frame. */
const frame = (rows: readonly string[]) =>
  zstdCompressSync(lines(rows), { params: { [constants.ZSTD_c_checksumFlag]: 1 } })
const zstdLog = ({ rows }: Case) => Buffer.concat([frame(rows.slice(0, 1)), frame(rows.slice(1))])

/** Whether the real rc.8 host without `loop` opens the session with every event its log holds. */
async function rc8OpensWhole(root: string, events: number): Promise<boolean> {
  loopType.forget()
  const host = await hosts.bootKeepingTimers({ root, loop: false })
  try {
    const read = await host.ctx.sessionPersistence.readFrom(SessionId('s'), 0)
    if (read.events.length !== events) return false
    await resumeFakeAgent(host, 's')
    return true
  } catch {
    return false
  } finally {
    await hosts.dispose(host)
    loopType.restore()
  }
}

/** Whether DSH's format-0 migration accepts the log. */
function migrationAccepts(log: string): boolean {
  try {
    migrateFormat0(log)
    return true
  } catch {
    return false
  }
}

/** The events a table's log holds when whole: each row one, a packed run three. */
const eventCount = ({ rows }: Case) => rows.slice(1).reduce((sum, row) => sum + (row.includes('"seq0"') ? 3 : 1), 0)

describe('whyUnopenable', () => {
  it.each(CASES)('$name: says what DSH says of it, under each rule', async (log) => {
    const { root, log: path } = homeWith('session.jsonl.zstd', zstdLog(log))
    for (const rule of ['marked', 'absent'] as const satisfies readonly LoopRowRule[])
      expect(whyUnopenable(path, rule, true)).toBe(rule === 'marked' ? log.removal : log.upgrade)
    expect(await rc8OpensWhole(root, eventCount(log))).toBe(log.removal === undefined)
    expect(migrationAccepts(text(log))).toBe(log.upgrade === undefined)
  })

  it('reads a Zstandard log frame by frame: the header alone first, every frame whole and checksummed', async () => {
    const good = Buffer.concat([frame([HEADER]), frame([run(0), loop(1, true)]), frame([packed(2)])])
    const check = async (bytes: Buffer, rule: LoopRowRule = 'marked') =>
      whyUnopenable(homeWith('session.jsonl.zstd', bytes).log, rule, true)
    expect(await check(good)).toBeUndefined()
    const { root } = homeWith('session.jsonl.zstd', good)
    expect(await rc8OpensWhole(root, 5)).toBe(true)

    expect(await check(good, 'absent')).toBe("line 3 is a loop/change record, which DSH's migration refuses")
    expect(await check(frame([HEADER, run(0)]))).toBe('its first frame is not exactly one header line')
    expect(await check(good.subarray(0, good.length - 2))).toMatch(/^it ends inside the Zstandard frame at byte \d+$/)
    const flipped = Buffer.from(good)
    flipped[flipped.length - 1]! ^= 0xff
    expect(await check(flipped)).toMatch(/^the Zstandard frame at byte \d+ does not decode$/)
    expect(await check(Buffer.concat([good, Buffer.from('not a frame')]))).toBe(
      'it holds bytes that are not a Zstandard frame',
    )
    expect(await check(Buffer.concat([frame([HEADER]), zstdCompressSync(`${run(0)}`)]))).toMatch(
      /^the frame at byte \d+ does not end with a whole row$/,
    )
  })

  it('reads a plain log a chunk at a time, and refuses a torn last row (DSH would cut it off, losing it)', async () => {
    const rows = [HEADER, run(0), loop(1, true), `{"type":"text","seq":2,"time":1,"data":"${'x'.repeat(3 << 20)}"}`]
    const check = async (content: string) =>
      whyUnopenable(homeWith('session.jsonl', Buffer.from(content)).log, 'marked', false)
    expect(await check(lines(rows))).toBeUndefined()
    expect(await check(`${lines(rows)}{"type":"com`)).toBe('its last row does not end with a newline')
  })

  it('walks frames of every layout: large and spanning reads, run-length blocks, no checksum', async () => {
    // Letters of a fixed pseudo-random walk: a frame of about 2 MiB that compression cannot shrink much.
    let state = 1
    const letters = Array.from({ length: 3 << 20 }, () =>
      String.fromCharCode(97 + ((state = (state * 48271) % 2147483647) % 26)),
    )
    const big = `{"type":"text","seq":1,"time":1,"data":"${letters.join('')}"}`
    const runs = `{"type":"text","seq":2,"time":1,"data":"${'a'.repeat(3 << 20)}"}`
    const bytes = Buffer.concat([frame([HEADER]), zstdCompressSync(`${run(0)}\n`), frame([big]), frame([runs])])
    expect(whyUnopenable(homeWith('session.jsonl.zstd', bytes).log, 'marked', true)).toBeUndefined()
    const cut = bytes.subarray(0, bytes.length - (1 << 20))
    expect(whyUnopenable(homeWith('session.jsonl.zstd', cut).log, 'marked', true)).toMatch(
      /^it ends inside the Zstandard frame at byte \d+$/,
    )
  })

  it('refuses an empty log, a header of another format, an array row and an unreadable file', async () => {
    const check = async (content: string) =>
      whyUnopenable(homeWith('session.jsonl', Buffer.from(content)).log, 'marked', false)
    expect(await check('')).toBe('it is empty')
    expect(await check(`${HEADER.replace('"version":0', '"version":1')}\n`)).toBe(
      'its first line is not a session header of format 0',
    )
    expect(await check(`${HEADER}\n[1]\n`)).toBe('line 2 is not a JSON object')
    for (const data of [',"data":{"texts":[]}', ',"data":{}', ''])
      expect(await check(`${HEADER}\n{"type":"text-chunks","seq0":0${data}}\n`)).toBe(
        'line 2 is a packed chunk run without members',
      )
    const folder = tempDir('loop-check-')
    expect(whyUnopenable(folder, 'marked', false)).toMatch(/^it could not be read back \(EISDIR/)
    expect(whyUnopenable(join(folder, 'gone'), 'marked', false)).toMatch(/^it could not be read back \(ENOENT/)
  })
})

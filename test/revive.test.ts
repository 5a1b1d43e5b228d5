/**
 * Resume on start (SPEC.md, "Resume on start") in a real in-process host: the
 * finder over hint files (stale, missing, corrupt log, missing directory,
 * archived, subagent), the host's own resolver bringing sessions live, the
 * lease (stale from a killed process, expiry, takeover), and the pure rules.
 */
import { spawn } from 'node:child_process'
import { mkdirSync, readFileSync, readdirSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { SessionId } from '@deepseek-ai/dsh-session'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { Lease, LEASE_TTL_MS, isProcessAlive } from '../src/lease.ts'
import {
  describeHolder,
  describeRevival,
  describeSkip,
  isLeaseStale,
  parseLease,
  planRevival,
} from '../src/revive-plan.ts'
import { noteSessionHint } from '../src/revive.ts'
import { HINT_DROP_MARGIN_MS, SessionHints } from '../src/session-hints.ts'
import * as loopPlugin from '../src/index.ts'
import {
  PRESET_TOOL,
  bootHost,
  createFakeAgent,
  resolvedFakes,
  runCommand,
  runTool,
  tempDir,
  type Host,
} from './support/host.ts'

// Captured before any test fakes the clock: real waits let file I/O finish.
const realSetTimeout = globalThis.setTimeout
const realSleep = (ms: number) => new Promise<void>((resolve) => realSetTimeout(resolve, ms))

const hosts: Host[] = []
afterEach(async () => {
  for (const host of hosts.splice(0)) await host.dispose()
  vi.restoreAllMocks()
  resolvedFakes.clear()
})

/** Collect the plugin's terminal report lines. */
function captureReport(): string[] {
  const lines: string[] = []
  vi.spyOn(console, 'error').mockImplementation((line: unknown) => {
    if (typeof line === 'string' && line.startsWith('loop: ')) lines.push(line.slice('loop: '.length))
  })
  return lines
}

/** Wait until a condition holds (real timers; generous deadline for a loaded machine). */
async function until<T>(what: string, check: () => T | undefined, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await realSleep(20)
  }
}

/** The stored log file of a session under a persistence root. */
function logFileOf(root: string, sessionId: string): string {
  for (const cwdDir of readdirSync(root)) {
    if (readdirSync(join(root, cwdDir)).includes(sessionId)) return join(root, cwdDir, sessionId, 'session.jsonl.zstd')
  }
  throw new Error(`no log for ${sessionId}`)
}

describe('planRevival and its lines (pure)', () => {
  it('names hinted and checkpointed sessions, newest first, and skips archived, subagent, directory-less and unlisted ones', () => {
    const plan = planRevival({
      sessions: [
        { id: 'a', createdAt: 1, cwd: '/w' },
        { id: 'b', createdAt: 5, cwd: '/w' },
        { id: 'c', createdAt: 9, cwd: '/w' },
        { id: 'd', createdAt: 2, cwd: '/w' },
        { id: 'sub', createdAt: 3, cwd: '/w', origin: 'subagent' },
        { id: 'arch', createdAt: 3, cwd: '/w' },
        { id: 'nocwd', createdAt: 3 },
        { id: 'untouched', createdAt: 99, cwd: '/w' },
        { id: 'e', createdAt: 2, cwd: '/w' },
      ],
      hinted: new Map([
        ['a', 100],
        ['b', 50],
        ['sub', 1],
        ['arch', 1],
        ['nocwd', 1],
        ['gone', 1],
        ['d', 7],
        ['e', 7],
      ]),
      checkpointed: new Set(['c']),
      archived: new Set(['arch']),
    })
    expect(plan.candidates).toEqual(['a', 'b', 'c', 'd', 'e'])
    expect(plan.skipped).toEqual([
      { id: 'sub', reason: 'subagent' },
      { id: 'arch', reason: 'archived' },
      { id: 'nocwd', reason: 'missing' },
      { id: 'gone', reason: 'missing' },
    ])
  })

  it('says what it skipped and why, in one line each and one summary', () => {
    expect(describeSkip({ id: 's1', reason: 'unreadable' }, 'bad record')).toBe(
      'session "s1" not brought back: its log cannot be read (bad record)',
    )
    expect(describeSkip({ id: 's2', reason: 'no-loops' })).toBe('session "s2" not brought back: no active loop')
    expect(describeRevival(1, [])).toBe('brought back 1 session holding active loops; skipped 0')
    expect(
      describeRevival(2, [
        { id: 'x', reason: 'archived' },
        { id: 'y', reason: 'subagent' },
        { id: 'z', reason: 'archived' },
        { id: 'w', reason: 'unresolved' },
      ]),
    ).toBe(
      'brought back 2 sessions holding active loops; skipped 4 (archived in DSH web: 2, owned by a subagent: 1, the host could not bring it live: 1)',
    )
    expect(
      describeHolder({
        token: 't',
        host: 'box',
        pid: 42,
        startedAt: Date.parse('2026-11-30T00:00:00Z'),
        refreshedAt: 0,
      }),
    ).toBe(
      'DSH process 42 on box (started 2026-11-30T00:00:00.000Z) holds the loop lease on this DSH_HOME and brings back the sessions holding loops; this process brings none back and takes over when that one has gone',
    )
  })

  it('reads a lease strictly and calls it stale when its process is gone or it expired', () => {
    const record = { token: 't', host: 'box', pid: 42, startedAt: 1, refreshedAt: 1_000 }
    expect(parseLease(JSON.stringify(record))).toEqual(record)
    expect(parseLease('{')).toBeUndefined()
    expect(parseLease('null')).toBeUndefined()
    expect(parseLease(JSON.stringify({ ...record, token: 1 }))).toBeUndefined()
    expect(parseLease(JSON.stringify({ ...record, pid: 1.5 }))).toBeUndefined()
    expect(isLeaseStale(record, 2_000, 30_000, { host: 'box', pidAlive: false })).toBe(true)
    expect(isLeaseStale(record, 2_000, 30_000, { host: 'box', pidAlive: true })).toBe(false)
    // Another machine's pid says nothing here: only expiry counts.
    expect(isLeaseStale(record, 2_000, 30_000, { host: 'other', pidAlive: false })).toBe(false)
    expect(isLeaseStale(record, 31_001, 30_000, { host: 'other', pidAlive: true })).toBe(true)
  })
})

describe('hint files', () => {
  it('are written durably, read back with their time, survive a torn file and are dropped only when older than the read', async () => {
    const hints = new SessionHints(join(tempDir(), 'loop', 'sessions'))
    expect(await hints.read()).toEqual(new Map())
    await hints.note('session/with odd:id', 1_000)
    await hints.note('plain', 2_000)
    writeFileSync(join(hints.dir, 'torn.json'), '{"sessionId":')
    writeFileSync(join(hints.dir, 'odd.json'), '{"touchedAt":"x"}')
    writeFileSync(join(hints.dir, 'plain.json.1234.tmp'), 'partial')
    expect(await hints.read()).toEqual(
      new Map([
        ['odd', 0],
        ['plain', 2_000],
        ['session/with odd:id', 1_000],
        ['torn', 0],
      ]),
    )
    // A create in a session already hinted renews the hint's time (its rank at the next start).
    await hints.note('session/with odd:id', 3_000)
    expect((await hints.read()).get('session/with odd:id')).toBe(3_000)
    // Written within the margin before the read began (a create racing it): kept.
    await hints.drop('plain', Date.now() + HINT_DROP_MARGIN_MS - 1_000)
    expect((await hints.read()).has('plain')).toBe(true)
    await hints.drop('plain', Date.now() + HINT_DROP_MARGIN_MS + 1_000)
    await hints.drop('never-written', Date.now())
    expect((await hints.read()).has('plain')).toBe(false)
  })

  it('a hint that cannot be written refuses the create before anything is appended', async () => {
    const root = tempDir()
    writeFileSync(join(root, 'loop'), 'a file where the directory should be')
    const hints = new SessionHints(join(root, 'loop', 'sessions'))
    await expect(noteSessionHint(hints, 's')).rejects.toMatchObject({
      code: 'persistence_failed',
      message: expect.stringMatching(
        /^loop_create could not record this session for the next DSH start \(.*\); nothing was saved\. /,
      ),
    })
    await expect(hints.read()).rejects.toMatchObject({ code: 'ENOTDIR' })
  })
})

describe('the lease', () => {
  it('one holder at a time; a clean release hands over at once', async () => {
    const dir = join(tempDir(), 'loop')
    const first = new Lease(dir)
    const second = new Lease(dir)
    expect(await first.acquire()).toEqual({ held: true })
    expect(await first.acquire()).toEqual({ held: true })
    const refused = await second.acquire()
    expect(refused).toEqual({ held: false, holder: expect.objectContaining({ pid: process.pid }) })
    expect(await first.refresh()).toBe(true)
    expect(await second.refresh()).toBe(false)
    await second.release()
    expect(await first.read()).toBeDefined()
    await first.release()
    expect(await first.read()).toBeUndefined()
    expect(await second.acquire()).toEqual({ held: true })
  })

  it('a lease left by a killed process is taken over at once; one that stopped refreshing, after its time to live', async () => {
    const dir = join(tempDir(), 'loop')
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' })
    const pid = child.pid!
    expect(isProcessAlive(pid)).toBe(true)
    mkdirSync(dir, { recursive: true })
    const dead = {
      token: 'killed',
      host: (await import('node:os')).hostname(),
      pid,
      startedAt: 1,
      refreshedAt: Date.now(),
    }
    writeFileSync(join(dir, 'lease.json'), JSON.stringify(dead))
    expect(await new Lease(dir).acquire()).toEqual({ held: false, holder: dead })
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve())
      child.kill('SIGKILL')
    })
    expect(isProcessAlive(pid)).toBe(false)
    const taker = new Lease(dir)
    expect(await taker.acquire()).toEqual({ held: true })
    expect((await taker.read())?.pid).toBe(process.pid)

    // A live pid (ours, under another token) that stopped refreshing: stale only after the TTL.
    let now = Date.now()
    const later = new Lease(dir, () => now)
    expect((await later.acquire()).held).toBe(false)
    now += LEASE_TTL_MS + 1
    expect(await later.acquire()).toEqual({ held: true })
  })

  it('an unreadable lease is stale once older than the TTL; a takeover lock held by another taker refuses, and a stale lock is cleared', async () => {
    const dir = join(tempDir(), 'loop')
    mkdirSync(dir, { recursive: true })
    const file = join(dir, 'lease.json')
    writeFileSync(file, 'torn')
    const lease = new Lease(dir)
    expect(await lease.acquire()).toEqual({ held: false, holder: undefined })
    const old = (Date.now() - LEASE_TTL_MS - 5_000) / 1000
    utimesSync(file, old, old)
    mkdirSync(`${file}.takeover`)
    expect(await lease.acquire()).toEqual({ held: false, holder: undefined })
    utimesSync(`${file}.takeover`, old, old)
    // The stale lock is removed; the next attempt takes over.
    expect((await lease.acquire()).held).toBe(false)
    expect(await lease.acquire()).toEqual({ held: true })
    expect(parseLease(readFileSync(file, 'utf8'))?.pid).toBe(process.pid)
  })

  it('I/O failures other than a missing file propagate', async () => {
    const root = tempDir()
    writeFileSync(join(root, 'loop'), 'not a directory')
    const lease = new Lease(join(root, 'loop'))
    await expect(lease.acquire()).rejects.toMatchObject({ code: 'EEXIST' })
    await expect(lease.read()).rejects.toMatchObject({ code: 'ENOTDIR' })
  })
})

describe('resume on start in a real host with the host resolver', () => {
  it('brings back exactly the sessions holding loops, through the host resolver, and skips the rest with one line each', async () => {
    const root = tempDir()
    const home = tempDir('loop-home-')
    const first = await bootHost({ root, home })
    const withLoops = await createFakeAgent(first, 'session-loops')
    const second = await createFakeAgent(first, 'session-second')
    const stale = await createFakeAgent(first, 'session-stale')
    const plain = await createFakeAgent(first, 'session-plain')
    const corrupt = await createFakeAgent(first, 'session-corrupt')
    const archived = await createFakeAgent(first, 'session-archived')
    const refused = await createFakeAgent(first, 'session-refused-preset')
    const sub = await first.ctx.agents.create({
      sessionId: SessionId('session-sub'),
      meta: { cwd: root, origin: 'subagent' },
      agentOptions: { provider: 'deepseek-official', model: 'deepseek-chat' },
    })
    for (const fake of [withLoops, second, stale, archived, refused]) {
      expect(
        (await runTool(first, fake.agent, 'loop_create', { prompt: `P ${fake.agent.id}`, time_in_seconds: 1 })).isError,
      ).toBe(false)
    }
    const created = await runTool(first, stale.agent, 'loop_list', {})
    const staleId = (created as { value: { id: string }[] }).value[0]!.id
    expect((await runTool(first, stale.agent, 'loop_delete', { id: staleId })).isError).toBe(false)
    const hints = new SessionHints(join(home, 'storages', 'loop', 'sessions'))
    corrupt.agent.session.append('loop/change', { version: 1, operation: 'delete', id: 'loop_00000000' })
    await first.ctx.sessions.flush(corrupt.agent.session)
    await hints.note('session-corrupt', 1)
    await hints.note('session-gone', 1)
    await hints.note('session-sub', 1)
    await runCommand(first, sub.agent, '/loop list')
    await first.ctx.sessions.flush(sub.agent.session)
    // One command, so the loop-less session has a stored log of its own.
    await runCommand(first, plain.agent, '/loop list')
    await first.ctx.sessions.flush(plain.agent.session)
    await first.ctx.sessions.flush(plain.agent.session)
    // Archived through DSH web's own workspace registry.
    await first.ctx.workspaceRegistry.archiveSession(SessionId('session-archived'))
    // The checkpoint DSH writes at a turn end (or every 5 s) of a live session.
    await first.ctx.sessionProjectionCache.write(second.agent.session)
    await first.dispose()
    // A missing hint (an earlier build wrote none): the loops are still found through the projection checkpoint.
    await rm(join(hints.dir, 'session-second.json'))
    // Hints older than the drop margin, as after any real downtime.
    const aged = (Date.now() - HINT_DROP_MARGIN_MS - 5_000) / 1000
    for (const name of readdirSync(hints.dir)) utimesSync(join(hints.dir, name), aged, aged)
    const plainBytes = readFileSync(logFileOf(root, 'session-plain'))
    expect([...(await hints.read()).keys()].sort()).toEqual([
      'session-archived',
      'session-corrupt',
      'session-gone',
      'session-loops',
      'session-refused-preset',
      'session-stale',
      'session-sub',
    ])
    // Overdue at the next start.
    await new Promise((resolve) => setTimeout(resolve, 1_100))

    const lines = captureReport()
    const next = await bootHost({ root, home, loop: false })
    hosts.push(next)
    const fiber = next.ctx.plugin(loopPlugin)
    await fiber
    const summary = await until('the summary', () => lines.find((line) => line.startsWith('brought back')))
    expect(summary).toBe(
      'brought back 2 sessions holding active loops; skipped 6 (archived in DSH web: 1, owned by a subagent: 1, its session directory is gone: 1, its log cannot be read: 1, no active loop: 1, the host could not bring it live: 1)',
    )
    expect(lines.filter((line) => line.startsWith('session '))).toEqual(
      expect.arrayContaining([
        'session "session-gone" not brought back: its session directory is gone',
        'session "session-sub" not brought back: owned by a subagent',
        'session "session-stale" not brought back: no active loop',
        'session "session-archived" not brought back: archived in DSH web',
        expect.stringMatching(
          /^session "session-refused-preset" not brought back: the host could not bring it live \(internal: resume failed for session "session-refused-preset": Error: agent preset of session-refused-preset is no longer supplied\)$/,
        ),
        expect.stringMatching(/^session "session-corrupt" not brought back: its log cannot be read \(.*loop_00000000/),
      ]),
    )
    // Through the host's resolver: its setup ran (the preset's tool is there), and each overdue loop fires once.
    for (const id of ['session-loops', 'session-second']) {
      const fake = resolvedFakes.get(id)!
      expect(next.ctx.agents.get(SessionId(id))).toBe(fake.agent)
      await until(`${id}'s heartbeat`, () => (fake.send.mock.calls.length > 0 ? true : undefined))
      expect(fake.send.mock.calls[0]![1]).toBe('next-turn')
      expect(JSON.stringify(fake.send.mock.calls[0]![0])).toContain(`P ${id}`)
    }
    expect(
      (
        await next.ctx.tools.execute({
          callId: 'c1' as never,
          name: PRESET_TOOL,
          arguments: {},
          signal: new AbortController().signal,
          agent: resolvedFakes.get('session-loops')!.agent,
        })
      ).isError,
    ).toBe(false)
    // Untouched: no resume, not one byte changed; the stale and orphan hints are gone.
    expect(next.ctx.agents.get(SessionId('session-plain'))).toBeUndefined()
    expect(readFileSync(logFileOf(root, 'session-plain')).equals(plainBytes)).toBe(true)
    expect([...(await hints.read()).keys()].sort()).toEqual([
      'session-archived',
      'session-corrupt',
      'session-loops',
      'session-refused-preset',
      'session-sub',
    ])

    // The host owns them: unloading the plugin leaves them live, and a reload finds them live and brings nothing twice.
    await fiber.dispose()
    expect(next.ctx.agents.get(SessionId('session-loops'))).toBe(resolvedFakes.get('session-loops')!.agent)
    lines.length = 0
    await next.ctx.plugin(loopPlugin)
    expect(await until('the second summary', () => lines.find((line) => line.startsWith('brought back')))).toBe(
      'brought back 2 sessions holding active loops; skipped 4 (archived in DSH web: 1, owned by a subagent: 1, its log cannot be read: 1, the host could not bring it live: 1)',
    )
    expect(next.ctx.agents.roots().filter((agent) => agent.id === SessionId('session-loops'))).toHaveLength(1)
  })

  it('a second host on the same home names the holder and brings nothing back; resumeOnStart off and a one-shot run bring nothing back', async () => {
    const root = tempDir()
    const home = tempDir('loop-home-')
    const seed = await bootHost({ root, home })
    const fake = await createFakeAgent(seed, 'session-a')
    expect((await runTool(seed, fake.agent, 'loop_create', { prompt: 'A', time_in_seconds: 60 })).isError).toBe(false)
    await seed.dispose()

    const lines = captureReport()
    const holder = await bootHost({ root, home })
    hosts.push(holder)
    await until('the holder summary', () => lines.find((line) => line.startsWith('brought back 1 session')))
    const other = await bootHost({ root: tempDir(), home })
    hosts.push(other)
    expect(await until('the holder line', () => lines.find((line) => line.includes('holds the loop lease')))).toBe(
      describeHolder((await new Lease(join(home, 'storages', 'loop')).read())!),
    )
    expect(other.ctx.agents.roots()).toEqual([])

    lines.length = 0
    const off = await bootHost({ root, home: tempDir('loop-home-'), loopConfig: { resumeOnStart: false } })
    hosts.push(off)
    expect(await until('the off line', () => lines.find((line) => line.startsWith('resumeOnStart')))).toBe(
      'resumeOnStart is off: no session is brought back at start; sessions holding loops come back when opened',
    )
    const oneShot = await bootHost({ root, home: tempDir('loop-home-'), oneShot: true })
    hosts.push(oneShot)
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(oneShot.ctx.agents.roots()).toEqual([])
    expect(lines).toHaveLength(1)
  })
})

describe('resume on start: the other hosts and the background steps', () => {
  it('a home without the host resolver: the create still writes its hint durably before it returns, and nothing is brought back', async () => {
    const lines = captureReport()
    const home = tempDir('loop-home-')
    const host = await bootHost({ loop: false })
    hosts.push(host)
    host.ctx.provide('dshHomePath', (...segments: string[]) => join(home, ...segments))
    await host.ctx.plugin(loopPlugin)
    const fake = await createFakeAgent(host, 'session-hinted')
    const created = await runTool(host, fake.agent, 'loop_create', { prompt: 'P', time_in_seconds: 60 })
    expect(created.isError).toBe(false)
    expect(JSON.parse(readFileSync(join(home, 'storages', 'loop', 'sessions', 'session-hinted.json'), 'utf8'))).toEqual(
      {
        sessionId: 'session-hinted',
        touchedAt: expect.any(Number),
      },
    )
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(lines).toEqual([])
  })

  it('a hint that cannot be written refuses the create: nothing is appended', async () => {
    const home = tempDir('loop-home-')
    mkdirSync(join(home, 'storages'), { recursive: true })
    writeFileSync(join(home, 'storages', 'loop'), 'a file where the directory should be')
    const lines = captureReport()
    const host = await bootHost({ home })
    hosts.push(host)
    const fake = await createFakeAgent(host, 'session-unhinted')
    const created = await runTool(host, fake.agent, 'loop_create', { prompt: 'P', time_in_seconds: 60 })
    expect(created).toMatchObject({
      isError: true,
      error: {
        message: expect.stringMatching(/^loop_create could not record this session for the next DSH start/),
        info: { code: 'persistence_failed' },
      },
    })
    expect(fake.agent.session.events.filter((event) => event.type === 'loop/change')).toEqual([])
    // The start-up path failed too, and said so.
    expect(await until('the failure line', () => lines.find((line) => line.startsWith('resume on start: ')))).toMatch(
      /EEXIST|ENOTDIR/,
    )
  })

  it('without a resolver the lookup answers only live agents: a cold session is "could not bring it live"; a throwing lookup policy is reported', async () => {
    const root = tempDir()
    const home = tempDir('loop-home-')
    const seed = await bootHost({ root, home })
    for (const id of ['session-cold', 'session-throws']) {
      const fake = await createFakeAgent(seed, id)
      expect((await runTool(seed, fake.agent, 'loop_create', { prompt: 'P', time_in_seconds: 60 })).isError).toBe(false)
    }
    await seed.dispose()
    const lines = captureReport()
    const host = await bootHost({ root, home, resolver: false, loop: false })
    hosts.push(host)
    host.ctx.typert.lookups.configure('agent', async (sessionId) => {
      if (sessionId === 'session-throws') throw new Error('lookup policy exploded')
      return undefined as never
    })
    await host.ctx.plugin(loopPlugin)
    expect(await until('the summary', () => lines.find((line) => line.startsWith('brought back')))).toBe(
      'brought back 0 sessions holding active loops; skipped 2 (the host could not bring it live: 2)',
    )
    expect(lines).toEqual(
      expect.arrayContaining([
        'session "session-cold" not brought back: the host could not bring it live',
        'session "session-throws" not brought back: the host could not bring it live (lookup policy exploded)',
      ]),
    )
  })

  it('a host without persistence brings nothing back and says nothing', async () => {
    const lines = captureReport()
    const host = await bootHost({ home: tempDir('loop-home-'), persistence: false })
    hosts.push(host)
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(lines).toEqual([])
  })

  it('the holder refreshes its lease; the other polls, takes over after a release, and a holder whose lease was taken says so', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      const root = tempDir()
      const home = tempDir('loop-home-')
      const leaseFile = join(home, 'storages', 'loop', 'lease.json')
      const lines = captureReport()
      const holder = await bootHost({ root, home, loop: false })
      hosts.push(holder)
      const holderFiber = holder.ctx.plugin(loopPlugin)
      await holderFiber
      const waitLine = async (what: string, check: (line: string) => boolean) => {
        for (let round = 0; round < 500; round += 1) {
          const found = lines.find(check)
          if (found !== undefined) return found
          await vi.advanceTimersByTimeAsync(0)
          await realSleep(10)
        }
        throw new Error(`no line for ${what}: ${lines.join(' | ')}`)
      }
      await waitLine('holder summary', (line) => line.startsWith('brought back 0'))
      const firstRefresh = parseLease(readFileSync(leaseFile, 'utf8'))!
      await vi.advanceTimersByTimeAsync(10_000)
      await until('a refresh', () =>
        parseLease(readFileSync(leaseFile, 'utf8'))!.refreshedAt > firstRefresh.refreshedAt ? true : undefined,
      )

      const other = await bootHost({ root, home, loop: false })
      hosts.push(other)
      const otherFiber = other.ctx.plugin(loopPlugin)
      await otherFiber
      await waitLine('holder line', (line) => line.includes('holds the loop lease'))
      lines.length = 0
      await vi.advanceTimersByTimeAsync(5_000)
      // A clean stop of the holder releases the lease; the next poll of the other takes it.
      await holderFiber.dispose()
      await vi.advanceTimersByTimeAsync(5_000)
      await waitLine('takeover summary', (line) => line.startsWith('brought back 0'))
      expect(lines.filter((line) => line.includes('holds the loop lease'))).toEqual([])

      // Someone else rewrote the lease: the next refresh says this host lost it, and stops refreshing.
      writeFileSync(
        leaseFile,
        JSON.stringify({ ...parseLease(readFileSync(leaseFile, 'utf8'))!, token: 'someone-else' }),
      )
      await vi.advanceTimersByTimeAsync(10_000)
      expect(await waitLine('lost line', (line) => line.startsWith('the loop lease'))).toBe(
        'the loop lease on this DSH_HOME was taken over by another process; this one keeps the sessions it already brought back',
      )
      await otherFiber.dispose()
      // It no longer holds the lease, so it leaves the other's record alone.
      expect(parseLease(readFileSync(leaseFile, 'utf8'))!.token).toBe('someone-else')
    } finally {
      vi.useRealTimers()
    }
  })
})

describe('resume on start: disposal and partial hosts', () => {
  it('a plugin unloaded while its first acquire is in flight still releases the lease it took', async () => {
    const home = tempDir('loop-home-')
    const host = await bootHost({ home, loop: false })
    hosts.push(host)
    const fiber = host.ctx.plugin(loopPlugin)
    await fiber
    await fiber.dispose()
    expect(await new Lease(join(home, 'storages', 'loop')).read()).toBeUndefined()
  })

  it('a refresh in flight when the plugin unloads schedules nothing more', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      const lines = captureReport()
      const home = tempDir('loop-home-')
      const host = await bootHost({ home, loop: false })
      hosts.push(host)
      const fiber = host.ctx.plugin(loopPlugin)
      await fiber
      for (let round = 0; round < 500 && !lines.some((line) => line.startsWith('brought back')); round += 1)
        await realSleep(10)
      await vi.advanceTimersByTimeAsync(10_000)
      await fiber.dispose()
      expect(vi.getTimerCount()).toBe(0)
      expect(await new Lease(join(home, 'storages', 'loop')).read()).toBeUndefined()
    } finally {
      vi.useRealTimers()
    }
  })

  it('a lease being written by another host (unreadable, fresh) names no holder; without the web stores nothing is archived or checkpointed', async () => {
    const root = tempDir()
    const home = tempDir('loop-home-')
    const seed = await bootHost({ root, home })
    const fake = await createFakeAgent(seed, 'session-bare')
    expect((await runTool(seed, fake.agent, 'loop_create', { prompt: 'P', time_in_seconds: 60 })).isError).toBe(false)
    await seed.dispose()
    writeFileSync(join(home, 'storages', 'loop', 'lease.json'), '')
    const lines = captureReport()
    const blocked = await bootHost({ root, home, webStores: false })
    hosts.push(blocked)
    await realSleep(100)
    expect(lines).toEqual([])
    await rm(join(home, 'storages', 'loop', 'lease.json'))
    const bare = await bootHost({ root, home, webStores: false })
    hosts.push(bare)
    expect(await until('the summary', () => lines.find((line) => line.startsWith('brought back')))).toBe(
      'brought back 1 session holding active loops; skipped 0',
    )
  })

  it('a dangling symlink where the lease should be is replaced', async () => {
    const dir = join(tempDir(), 'loop')
    mkdirSync(dir, { recursive: true })
    symlinkSync(join(dir, 'nowhere'), join(dir, 'lease.json'))
    const lease = new Lease(dir)
    expect(await lease.acquire()).toEqual({ held: true })
    expect((await lease.read())?.pid).toBe(process.pid)
  })
})

describe('resume on start: what a start with nothing to bring back reads', () => {
  it('once the checkpoint scan is done, a start with no hint does not even list the headers', async () => {
    const root = tempDir()
    const home = tempDir('loop-home-')
    const lines = captureReport()
    const first = await bootHost({ root, home })
    await until('the first summary', () => lines.find((line) => line.startsWith('brought back')))
    await first.dispose()
    expect(await new SessionHints(join(home, 'storages', 'loop', 'sessions')).scanned()).toBe(true)
    lines.length = 0
    const next = await bootHost({ root, home, loop: false })
    hosts.push(next)
    const list = vi.spyOn(next.ctx.sessionPersistence, 'list')
    await next.ctx.plugin(loopPlugin)
    expect(await until('the summary', () => lines.find((line) => line.startsWith('brought back')))).toBe(
      'brought back 0 sessions holding active loops; skipped 0',
    )
    expect(list).not.toHaveBeenCalled()
  })
})

describe('lease and hint races', () => {
  it('a takeover that finds the lease changed under its lock yields; a release that cannot read is quiet', async () => {
    const dir = join(tempDir(), 'loop')
    mkdirSync(dir, { recursive: true })
    const stale = { token: 'stale', host: 'elsewhere', pid: 1, startedAt: 1, refreshedAt: 1 }
    const fresh = { ...stale, token: 'fresh', refreshedAt: Date.now() }
    writeFileSync(join(dir, 'lease.json'), JSON.stringify(stale))
    const lease = new Lease(dir)
    const read = vi.spyOn(lease, 'read')
    read.mockResolvedValueOnce(stale).mockResolvedValueOnce(fresh).mockResolvedValueOnce(fresh)
    expect(await lease.acquire()).toEqual({ held: false, holder: fresh })
    read.mockRestore()
    expect(parseLease(readFileSync(join(dir, 'lease.json'), 'utf8'))).toEqual(stale)

    const broken = join(tempDir(), 'loop')
    mkdirSync(join(broken, 'lease.json'), { recursive: true })
    await expect(new Lease(broken).release()).resolves.toBeUndefined()
  })

  it('a hint whose rename fails leaves no temporary file behind', async () => {
    const hints = new SessionHints(join(tempDir(), 'sessions'))
    mkdirSync(join(hints.dir, 'blocked.json', 'inside'), { recursive: true })
    await expect(hints.note('blocked', 1)).rejects.toMatchObject({
      code: expect.stringMatching(/EISDIR|ENOTEMPTY|EEXIST/),
    })
    expect(readdirSync(hints.dir)).toEqual(['blocked.json'])
  })
})

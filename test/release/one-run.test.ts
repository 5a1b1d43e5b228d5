/**
 * One release per home at a time (SPEC.md §13 "Leaving loop"): a second run, started at
 * any step of the first's replacement, refuses and writes nothing; a removal and an upgrade at
 * once are one run and one refusal; a run that died leaves a lock the next run takes over.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import * as fsPromises from 'node:fs/promises'
import { hostname } from 'node:os'
import { dirname, join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { LOCK_FILE, TAKEOVER_FILE, lockDecision, takeHomeLock, type LockHolder } from '../../src/release/home-lock.ts'
import { releaseHome, type HomeRefusal } from '../../src/release/home.ts'
import type { ReleaseFs } from '../../src/release/release-fs.ts'
import { RELEASE_MODES } from '../../src/release/modes.ts'
import { releaseLeftover } from '../../src/release/beside-log.ts'
import { releaseFile } from '../../src/release/release-file.ts'
import { useHosts } from '../support/host.ts'
import { digests, releaseDone, releaseOptions, releasedFile, useLoopedLog } from '../support/release-home.ts'
import { tempDir } from '../../harness/temp-dir.ts'

const looped = useLoopedLog(useHosts())
const homeWithLog = looped.homeWithLog

/** The real file system, paused before the `pauseAt`-th call until `resume` is called. */
function pausingFs(pauseAt: number): { fs: ReleaseFs; paused: Promise<string>; resume: () => void; steps: string[] } {
  const steps: string[] = []
  let resume: () => void = () => {}
  let reached: (step: string) => void = () => {}
  const paused = new Promise<string>((resolve) => {
    reached = resolve
  })
  const gate = async (step: string) => {
    steps.push(step)
    if (steps.length - 1 !== pauseAt) return
    reached(step)
    await new Promise<void>((resolve) => {
      resume = resolve
    })
  }
  const wrap = <T extends object>(target: T, prefix: string): T =>
    new Proxy(target, {
      get(object, key) {
        const value = Reflect.get(object, key) as unknown
        if (typeof value !== 'function' || typeof key !== 'string') return value
        return async (...args: unknown[]) => {
          await gate(`${prefix}.${key}`)
          const result = (await (value as (...a: unknown[]) => unknown).apply(object, args)) as unknown
          return result instanceof Object && 'fd' in result ? wrap(result, 'handle') : result
        }
      },
    })
  return { fs: wrap(fsPromises, 'fs') as ReleaseFs, paused, resume: () => resume(), steps }
}

describe('two runs on one home', () => {
  it('refuses the second at every step of the first, writing nothing, and the first finishes', async () => {
    const reference = homeWithLog()
    const counted = pausingFs(Number.POSITIVE_INFINITY)
    await releaseDone(reference.home, { fs: counted.fs })
    const released = readFileSync(reference.log)

    for (let step = 0; step < counted.steps.length; step += 1) {
      const { home, log } = homeWithLog()
      const first = pausingFs(step)
      const running = releaseHome(releaseOptions(home, { fs: first.fs }))
      const at = `second run while the first is at step ${step} (${counted.steps[step]})`
      const pausedAt = await Promise.race([first.paused, running.then(() => undefined)])
      expect(pausedAt, at).toBe(counted.steps[step])
      const before = digests(home)
      const second = await releaseHome(releaseOptions(home, { mode: step % 2 === 0 ? 'removal' : 'upgrade' }))
      // Before the first run's lock is in place the second run may be the one that holds it.
      if (second.kind === 'done') {
        expect(step, at).toBeLessThan(counted.steps.indexOf('fs.link') + 1)
        // …and has finished and let it go by the time the first goes on, which then finds nothing to do.
        const afterSecond = digests(join(home, 'sessions'))
        first.resume()
        expect(await running, at).toMatchObject({
          kind: 'done',
          files: [{ status: step % 2 === 0 ? 'already-released' : 'no-loops' }],
        })
        expect(digests(join(home, 'sessions')), at).toEqual(afterSecond)
        expect(
          readdirSync(home).filter((name) => name.startsWith(LOCK_FILE)),
          at,
        ).toEqual([])
        continue
      }
      expect(second, at).toEqual({
        kind: 'locked',
        lock: join(home, LOCK_FILE),
        holder: { pid: process.pid, host: hostname(), startedAt: new Date(0).toISOString(), mode: 'removal' },
      } satisfies HomeRefusal)
      expect(digests(home), at).toEqual(before)
      first.resume()
      expect((await running).kind, at).toBe('done')
      expect(readFileSync(log).equals(released), at).toBe(true)
      expect(
        readdirSync(dirname(log)).filter((name) => releaseLeftover(name) !== undefined),
        at,
      ).toEqual([])
      expect(readdirSync(home), at).toEqual(['sessions'])
    }
  })

  it('keeps a second run that dies right after its first open from touching the first run', async () => {
    const reference = homeWithLog()
    const counted = pausingFs(Number.POSITIVE_INFINITY)
    await releaseDone(reference.home, { fs: counted.fs })
    const { home, log } = homeWithLog()
    // The first run pauses with its temp file open, before its write (its first write is its lock's draft).
    const draft = counted.steps.indexOf('handle.writeFile')
    const first = pausingFs(counted.steps.indexOf('handle.writeFile', draft + 1) + 1)
    const running = releaseHome(releaseOptions(home, { fs: first.fs }))
    await first.paused
    // The second run opens its draft lock and dies right there.
    const dying = pausingFs(2)
    void releaseHome(releaseOptions(home, { fs: dying.fs, pid: 4_000_000 }))
    expect(await dying.paused).toBe('handle.writeFile')
    first.resume()
    expect((await running).kind).toBe('done')
    expect(readFileSync(log).equals(readFileSync(reference.log))).toBe(true)
    expect(readdirSync(dirname(log)).filter((name) => releaseLeftover(name) !== undefined)).toEqual([])
    // Its draft is litter of a dead process, which the next run clears.
    expect(readdirSync(home).filter((name) => name !== 'sessions')).toEqual([
      expect.stringMatching(/^loop-release\.lock\.4000000-[0-9a-f]{8}\.tmp$/),
    ])
    expect((await releaseDone(home)).files.map((file) => file.status)).toEqual(['already-released'])
    expect(readdirSync(home)).toEqual(['sessions'])
  })

  it("keeps each run's temp file its own: one that opens beside another's and dies leaves the other whole", async () => {
    const reference = homeWithLog()
    await releaseDone(reference.home)
    const { log } = homeWithLog()
    // Without the lock (as two runs of an earlier build met): the first has written its temp file whole…
    const counted = pausingFs(Number.POSITIVE_INFINITY)
    await releaseFile(homeWithLog().log, { mode: RELEASE_MODES.removal, fs: counted.fs, write: {} })
    const first = pausingFs(counted.steps.indexOf('handle.sync') + 1)
    const running = releasedFile(log, { mode: RELEASE_MODES.removal, fs: first.fs, write: {} })
    await first.paused
    // …when a second opens its own and dies there.
    const second = pausingFs(counted.steps.indexOf('fs.open', counted.steps.indexOf('handle.read') + 1) + 1)
    void releaseFile(log, { mode: RELEASE_MODES.removal, fs: second.fs, write: {} })
    await second.paused
    first.resume()
    expect(await running).toMatchObject({ status: 'released' })
    expect(readFileSync(log).equals(readFileSync(reference.log))).toBe(true)
  })

  it('takes over the lock of a run whose process is gone, and says so', async () => {
    const { home } = homeWithLog()
    const dead: LockHolder = {
      pid: 4_000_001,
      host: hostname(),
      startedAt: '2026-12-01T10:00:00.000Z',
      mode: 'upgrade',
    }
    writeFileSync(join(home, LOCK_FILE), JSON.stringify(dead))
    const release = await releaseDone(home)
    expect(release.tookOverFrom).toEqual(dead)
    expect(release.files.map((file) => file.status)).toEqual(['released'])
    expect(readdirSync(home)).toEqual(['sessions'])
  })

  it('refuses beside a lock it cannot read or one of another machine, which it cannot judge', async () => {
    const { home } = homeWithLog()
    writeFileSync(join(home, LOCK_FILE), 'not a lock')
    expect(await releaseHome(releaseOptions(home))).toEqual({ kind: 'locked', lock: join(home, LOCK_FILE) })
    const elsewhere: LockHolder = {
      pid: 1,
      host: 'another-box',
      startedAt: '2026-12-01T10:00:00.000Z',
      mode: 'removal',
    }
    writeFileSync(join(home, LOCK_FILE), JSON.stringify(elsewhere))
    expect(await releaseHome(releaseOptions(home, { isAlive: () => false }))).toEqual({
      kind: 'locked',
      lock: join(home, LOCK_FILE),
      holder: elsewhere,
    })
  })

  it('leaves a lock another run put in place after it was judged stale, and refuses', async () => {
    const home = tempDir('loop-lock-')
    const stale: LockHolder = { pid: 4_000_002, host: hostname(), startedAt: 'then', mode: 'removal' }
    const live: LockHolder = { pid: 4_000_003, host: hostname(), startedAt: 'now', mode: 'upgrade' }
    writeFileSync(join(home, LOCK_FILE), JSON.stringify(stale))
    // Between this run's judging the lock stale and its takeover, another run replaces it with its own.
    const fs = withCall('link', (real) => async (...args: never[]) => {
      if (String(args[1]).endsWith(TAKEOVER_FILE)) writeFileSync(join(home, LOCK_FILE), JSON.stringify(live))
      return real(...args)
    })
    const attempt = await takeHomeLock(home, { pid: 5, host: hostname(), startedAt: 'x', mode: 'removal' }, fs, (pid) =>
      [5, live.pid].includes(pid),
    )
    expect(attempt).toEqual({ kind: 'held', path: join(home, LOCK_FILE), holder: live })
    expect(JSON.parse(readFileSync(join(home, LOCK_FILE), 'utf8'))).toEqual(live)
    expect(readdirSync(home)).toEqual([LOCK_FILE])
  })

  it('lets one of three runs take over a stale lock, whose path is never empty meanwhile', async () => {
    const home = tempDir('loop-lock-')
    const lock = join(home, LOCK_FILE)
    const stale: LockHolder = { pid: 4_000_002, host: hostname(), startedAt: 'then', mode: 'removal' }
    writeFileSync(lock, JSON.stringify(stale))
    const emptied: string[] = []
    // Every call of the three runs, checked to leave the lock's path holding a lock.
    const fs = new Proxy(fsPromises, {
      get:
        (target, key) =>
        async (...args: unknown[]) => {
          const result = (await (Reflect.get(target, key) as (...a: unknown[]) => unknown).apply(
            target,
            args,
          )) as unknown
          if (!existsSync(lock)) emptied.push(`${String(key)} ${args.map(String).join(' ')}`)
          return result
        },
    }) as ReleaseFs
    const runs = [5, 6, 7].map((pid) => ({ pid, host: hostname(), startedAt: 'x', mode: 'removal' }))
    const attempts = await Promise.all(runs.map((run) => takeHomeLock(home, run, fs, (pid) => pid < 10)))
    expect(emptied).toEqual([])
    const taken = attempts.filter((attempt) => attempt.kind === 'taken')
    expect(taken).toEqual([{ kind: 'taken', tookOverFrom: stale, giveBack: expect.any(Function) }])
    const holder = runs[attempts.indexOf(taken[0]!)]
    expect(JSON.parse(readFileSync(lock, 'utf8'))).toEqual(holder)
    // A run refused at the lock names the run that took it; one refused at the takeover, that path.
    for (const attempt of attempts)
      if (attempt.kind === 'held' && !attempt.path.endsWith(TAKEOVER_FILE)) expect(attempt.holder).toEqual(holder)
    expect(readdirSync(home)).toEqual([LOCK_FILE])
  })

  it('refuses, naming the path, while another run takes over', async () => {
    const home = tempDir('loop-lock-')
    const stale: LockHolder = { pid: 4_000_002, host: hostname(), startedAt: 'then', mode: 'removal' }
    const other: LockHolder = { pid: 4_000_003, host: hostname(), startedAt: 'now', mode: 'upgrade' }
    writeFileSync(join(home, LOCK_FILE), JSON.stringify(stale))
    writeFileSync(join(home, TAKEOVER_FILE), JSON.stringify(other))
    expect(
      await takeHomeLock(home, { pid: 5, host: hostname(), startedAt: 'x', mode: 'removal' }, fsPromises, (pid) =>
        [5, other.pid].includes(pid),
      ),
    ).toEqual({ kind: 'held', path: join(home, TAKEOVER_FILE), holder: other })
    expect(readdirSync(home).sort()).toEqual([LOCK_FILE, TAKEOVER_FILE])
  })

  it('clears a takeover a killed run left, as a stale lock is, up to three deep', async () => {
    const home = tempDir('loop-lock-')
    const dead = (pid: number): LockHolder => ({ pid, host: hostname(), startedAt: 'then', mode: 'removal' })
    const self: LockHolder = { pid: 5, host: hostname(), startedAt: 'x', mode: 'removal' }
    writeFileSync(join(home, LOCK_FILE), JSON.stringify(dead(4_000_002)))
    writeFileSync(join(home, TAKEOVER_FILE), JSON.stringify(dead(4_000_003)))
    writeFileSync(join(home, `${TAKEOVER_FILE}.takeover`), JSON.stringify(dead(4_000_004)))
    const attempt = await takeHomeLock(home, self, fsPromises, (pid) => pid === 5)
    expect(attempt).toEqual({ kind: 'taken', tookOverFrom: dead(4_000_002), giveBack: expect.any(Function) })
    expect(readdirSync(home)).toEqual([LOCK_FILE])
    expect(JSON.parse(readFileSync(join(home, LOCK_FILE), 'utf8'))).toEqual(self)
    // Four levels of killed takeovers are past what kills inside each other's windows leave: named, not cleared.
    const deep = tempDir('loop-lock-')
    const names = [LOCK_FILE, TAKEOVER_FILE, `${TAKEOVER_FILE}.takeover`, `${TAKEOVER_FILE}.takeover.takeover`]
    names.forEach((name, index) => writeFileSync(join(deep, name), JSON.stringify(dead(4_000_010 + index))))
    expect(await takeHomeLock(deep, self, fsPromises, (pid) => pid === 5)).toEqual({
      kind: 'held',
      path: join(deep, names[3]!),
      holder: dead(4_000_013),
    })
    expect(readdirSync(deep).sort()).toEqual([...names].sort())
  })

  it('refuses within a second beside a dangling link, a folder, an unreadable file or a path that comes and goes', async () => {
    const self: LockHolder = { pid: 5, host: hostname(), startedAt: 'x', mode: 'removal' }
    const cases: [string, (lock: string) => ReleaseFs, string][] = [
      ['a link to nothing', (lock) => (symlinkSync(`${lock}.gone`, lock), fsPromises), 'a link to nothing'],
      ['a folder', (lock) => (mkdirSync(lock), fsPromises), 'a folder'],
      [
        'unreadable',
        (lock) => (
          writeFileSync(lock, 'x'),
          withCall('readFile', () => async () => {
            throw fault('EACCES')
          })
        ),
        'a file this user cannot read',
      ],
      [
        'comes and goes',
        (lock) => (
          writeFileSync(lock, 'x'),
          withCall('readFile', () => async () => {
            throw fault('ENOENT')
          })
        ),
        'a file that comes and goes',
      ],
    ]
    for (const [, make, unlike] of cases) {
      const home = tempDir('loop-lock-')
      const lock = join(home, LOCK_FILE)
      const fs = make(lock)
      const started = performance.now()
      expect(await takeHomeLock(home, self, fs, () => true)).toEqual({ kind: 'held', path: lock, unlike })
      expect(performance.now() - started).toBeLessThan(1_000)
      expect(readdirSync(home)).toEqual([LOCK_FILE])
    }
  })

  it('works on a file system without hard links, copying the lock into place exclusively', async () => {
    const home = tempDir('loop-lock-')
    const noLinks = withCall('link', () => async () => {
      throw fault('EPERM')
    })
    const self: LockHolder = { pid: 5, host: hostname(), startedAt: 'x', mode: 'removal' }
    const first = await takeHomeLock(home, self, noLinks, (pid) => pid === 5)
    expect(first).toMatchObject({ kind: 'taken' })
    expect(JSON.parse(readFileSync(join(home, LOCK_FILE), 'utf8'))).toEqual(self)
    expect(await takeHomeLock(home, { ...self, pid: 6 }, noLinks, (pid) => pid === 5)).toEqual({
      kind: 'held',
      path: join(home, LOCK_FILE),
      holder: self,
    })
    // Its process gone, the next run takes it over, still without a link.
    const next = await takeHomeLock(home, { ...self, pid: 6 }, noLinks, (pid) => pid === 6)
    expect(next).toMatchObject({ kind: 'taken', tookOverFrom: self })
    if (next.kind === 'taken') await next.giveBack()
    if (first.kind === 'taken') await first.giveBack()
    expect(readdirSync(home)).toEqual([])
    // A lock that cannot be created there is a failure, not a refusal.
    const readOnly = new Proxy(noLinks, {
      get: (target, key) =>
        key === 'copyFile'
          ? async (from: string, to: string, mode: number) => {
              if (to === join(home, LOCK_FILE)) throw fault('EROFS')
              return fsPromises.copyFile(from, to, mode)
            }
          : Reflect.get(target, key),
    })
    await expect(takeHomeLock(home, self, readOnly, () => true)).rejects.toThrow('EROFS: simulated')
    expect(readdirSync(home)).toEqual([])
  })
})

describe('lockDecision', () => {
  it('keeps a run out while the lock is live, unreadable or another machine’s, and not once its process is gone', () => {
    const holder: LockHolder = { pid: 9, host: 'box', startedAt: 't', mode: 'removal' }
    expect(lockDecision(holder, 'box', () => true)).toBe('held')
    expect(lockDecision(holder, 'box', () => false)).toBe('stale')
    expect(lockDecision(holder, 'other', () => false)).toBe('held')
    expect(lockDecision(undefined, 'box', () => false)).toBe('held')
  })
})

/** The real file system with one call replaced. */
function withCall(
  name: keyof ReleaseFs,
  replacement: (real: (...args: never[]) => unknown) => (...args: never[]) => unknown,
): ReleaseFs {
  return new Proxy(fsPromises, {
    get: (target, key) =>
      key === name
        ? replacement((Reflect.get(target, key) as (...args: never[]) => unknown).bind(target))
        : Reflect.get(target, key),
  }) as ReleaseFs
}

const fault = (code: string) => Object.assign(new Error(`${code}: simulated`), { code })

describe('taking the lock when the file system moves under it', () => {
  const self: LockHolder = { pid: 5, host: hostname(), startedAt: 'now', mode: 'removal' }
  const stale: LockHolder = { pid: 4_000_004, host: hostname(), startedAt: 'then', mode: 'removal' }
  const alive = (pid: number) => pid === self.pid

  it('takes a lock that went between its link and its read, or between its read and its move', async () => {
    for (const call of ['readFile', 'rename'] as const) {
      const home = tempDir('loop-lock-')
      writeFileSync(join(home, LOCK_FILE), JSON.stringify(stale))
      let once = false
      const fs = withCall(call, (real) => async (...args: never[]) => {
        // Another run finishes and removes the lock right before this call.
        if (!once) rmSync(join(home, LOCK_FILE), { force: true })
        once = true
        return real(...args)
      })
      const attempt = await takeHomeLock(home, self, fs, alive)
      expect(attempt).toMatchObject({ kind: 'taken' })
      expect(JSON.parse(readFileSync(join(home, LOCK_FILE), 'utf8'))).toEqual(self)
      if (attempt.kind === 'taken') await attempt.giveBack()
      expect(readdirSync(home)).toEqual([])
    }
  })

  it('fails, leaving no draft, when the lock cannot be linked or replaced', async () => {
    for (const [call, code] of [
      ['link', 'EACCES'],
      ['rename', 'EACCES'],
      ['readFile', 'EIO'],
    ] as const) {
      const home = tempDir('loop-lock-')
      writeFileSync(join(home, LOCK_FILE), JSON.stringify(stale))
      const fs = withCall(call, () => async () => {
        throw fault(code)
      })
      await expect(takeHomeLock(home, self, fs, alive)).rejects.toThrow(`${code}: simulated`)
      expect(readdirSync(home)).toEqual([LOCK_FILE])
    }
  })

  it('gives back only its own lock', async () => {
    const home = tempDir('loop-lock-')
    const attempt = await takeHomeLock(home, self, fsPromises, alive)
    expect(attempt.kind).toBe('taken')
    // Someone deleted it and another run took the home meanwhile.
    writeFileSync(join(home, LOCK_FILE), JSON.stringify({ ...self, pid: 6 }))
    if (attempt.kind === 'taken') await attempt.giveBack()
    expect(JSON.parse(readFileSync(join(home, LOCK_FILE), 'utf8'))).toEqual({ ...self, pid: 6 })
    // A lock someone deleted is nothing to give back.
    rmSync(join(home, LOCK_FILE))
    if (attempt.kind === 'taken') await attempt.giveBack()
    expect(readdirSync(home)).toEqual([])
  })
})

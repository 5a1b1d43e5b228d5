/**
 * A release under faults (SPEC.md §13 "Leaving loop"): a kill at each step of a file's
 * replacement, a failing write, no permission, a corrupt or torn log among good ones, a log
 * that grows while the release runs. Each leaves every file either as it was or released whole.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync, truncateSync, writeFileSync } from 'node:fs'
import * as fsPromises from 'node:fs/promises'
import { basename, dirname, join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'
import { releaseLeftover } from '../../src/release/beside-log.ts'
import { LOCK_FILE } from '../../src/release/home-lock.ts'
import { releaseHome } from '../../src/release/home.ts'
import { releaseFile } from '../../src/release/release-file.ts'
import { PROJECTION_CACHE } from '../../src/release/run-writes.ts'
import { RELEASE_MODES, type ReleaseModeName } from '../../src/release/modes.ts'
import { syncedCopy, type ReleaseFs } from '../../src/release/release-fs.ts'
import { useHosts } from '../support/host.ts'
import { gatedFs, releaseDone, releaseOptions, releasedFile, reportOf, useLoopedLog } from '../support/release-home.ts'
import { tempDir } from '../../harness/temp-dir.ts'

/** The release temp files beside a log. */
function tempsBeside(log: string): string[] {
  return readdirSync(dirname(log)).filter((name) => releaseLeftover(name) !== undefined)
}

const looped = useLoopedLog(useHosts())
const copyOfLog = looped.homeWithLog

const error = (code: string): NodeJS.ErrnoException => Object.assign(new Error(`${code}: simulated`), { code })

/** A pid no process of the test has: the killed run's, whose lock the rerun finds. */
const KILLED_PID = 2 ** 22 + 17

/**
 * Start a release of a home that dies at its `kill`-th file system call: nothing after it runs,
 * no clean-up included, and its descriptors close as the OS closes a dead process's.
 */
async function killedRelease(home: string, mode: ReleaseModeName, kill: number): Promise<void> {
  let calls = 0
  let killed: () => void = () => {}
  const reached = new Promise<void>((resolve) => {
    killed = resolve
  })
  const opened: fsPromises.FileHandle[] = []
  const running = new Set<Promise<unknown>>()
  const run = releaseHome(
    releaseOptions(home, {
      mode,
      pid: KILLED_PID,
      fs: gatedFs(
        () => {
          if (calls++ < kill) return
          killed()
          return new Promise<void>(() => {})
        },
        opened,
        running,
      ),
    }),
  )
  await Promise.race([reached, run])
  await Promise.allSettled(running)
  await Promise.all(opened.map((handle) => handle.close().catch(() => {})))
}

describe('a kill at each step of a release', () => {
  it.each(['removal', 'upgrade'] as const)(
    '%s: leaves each file as it was or whole, and the next run finishes the job and says so',
    async (mode) => {
      const reference = copyOfLog()
      writeCheckpoints(reference.home)
      const steps: string[] = []
      await releaseDone(reference.home, { mode, fs: gatedFs((step) => void steps.push(step)) })
      const released = readFileSync(reference.log)
      expect(released.equals(looped.written())).toBe(false)
      expect(steps).toEqual(expect.arrayContaining(['fs.stat', 'handle.writeFile', 'handle.sync', 'fs.rename']))

      for (let kill = 0; kill < steps.length; kill += 1) {
        const { home, log } = copyOfLog()
        writeCheckpoints(home)
        await killedRelease(home, mode, kill)
        const at = `kill at step ${kill} (${steps[kill]})`
        const left = readFileSync(log)
        expect(left.equals(looped.written()) || left.equals(released), at).toBe(true)
        // No renumbered log ever sits beside checkpoints of the old numbering.
        if (mode === 'upgrade' && left.equals(released))
          expect(existsSync(join(home, PROJECTION_CACHE)), at).toBe(false)
        const lockLeft = existsSync(join(home, LOCK_FILE))
        const tempsLeft = tempsBeside(log)

        const keptBefore = existsSync(killedFolder(home))
        const rerun = await releaseDone(home, { mode, startedAt: new Date(1) })
        expect(
          rerun.files.map((file) => file.status),
          at,
        ).toEqual([left.equals(looped.written()) ? 'released' : mode === 'removal' ? 'already-released' : 'no-loops'])
        // Nothing the killed run did is forgotten: the loops it removed, and the folder of originals it left.
        expect(rerun.earlierRemoved, at).toEqual(
          mode === 'upgrade' && !left.equals(looped.written())
            ? [
                {
                  path: log,
                  folder: killedFolder(home),
                  loops: [{ id: expect.any(String), time_in_seconds: 2, prompt: 'check the build' }],
                },
              ]
            : [],
        )
        if (mode === 'upgrade' && !left.equals(looped.written()))
          expect(reportOf(rerun), at).toContain(
            `${relative(home, log)}: 1 active loops were removed by an earlier upgrade release (its original is in ${relative(home, killedFolder(home))}); ` +
              'to recreate them in this session after the upgrade:\n            /loop 2 check the build',
          )
        expect(rerun.earlierFolders, at).toEqual(keptBefore ? [killedFolder(home)] : [])
        expect(rerun.tookOverFrom !== undefined, at).toBe(lockLeft)
        expect(
          rerun.leftovers.map((path) => basename(path)),
          at,
        ).toEqual(tempsLeft)
        expect(readFileSync(log).equals(released), at).toBe(true)
        expect(tempsBeside(log), at).toEqual([])
        // No lock, and no draft of one: a killed run's went with it.
        expect(
          readdirSync(home).filter((name) => name.startsWith(LOCK_FILE)),
          at,
        ).toEqual([])
        if (mode === 'upgrade') expect(existsSync(join(home, PROJECTION_CACHE)), at).toBe(false)
      }
    },
  )
})

/** The folder of originals a killed run (started at the epoch) left. */
function killedFolder(home: string): string {
  return join(home, 'loop-release-backup', '1970-01-01T00-00-00-000Z')
}

/** DSH's projection checkpoints in a home. */
function writeCheckpoints(home: string): void {
  mkdirSync(join(home, 'storages'), { recursive: true })
  writeFileSync(join(home, PROJECTION_CACHE), '{"checkpoints":"of the old numbering"}')
}

describe('a folder of originals on another device', () => {
  it('takes the projection checkpoints there as a synced copy, and the upgrade goes on', async () => {
    const { home, log } = copyOfLog()
    writeCheckpoints(home)
    const crossDevice = gatedFs((step, args) => {
      if (step === 'fs.rename' && args[0] === join(home, PROJECTION_CACHE)) throw error('EXDEV')
    })
    const release = await releaseDone(home, { mode: 'upgrade', fs: crossDevice })
    expect(release.files).toMatchObject([{ path: log, status: 'released' }])
    expect(release.projectionCache).toBe(join(killedFolder(home), PROJECTION_CACHE))
    expect(readFileSync(release.projectionCache!, 'utf8')).toBe('{"checkpoints":"of the old numbering"}')
    expect(existsSync(join(home, PROJECTION_CACHE))).toBe(false)
  })
})

describe('a failing call', () => {
  it.each([
    ['handle.writeFile', 'ENOSPC', /^the disk is full: ENOSPC: simulated$/],
    ['fs.open', 'EACCES', /^no permission: EACCES: simulated$/],
    ['fs.rename', 'EIO', /^EIO: simulated$/],
  ])('%s failing with %s leaves the log as it was and no temp file', async (failing, code, reason) => {
    const { log } = copyOfLog()
    const outcome = await releasedFile(log, {
      mode: RELEASE_MODES.removal,
      write: {},
      fs: gatedFs((step) => {
        if (step === failing) throw error(code)
      }),
    })
    expect(outcome).toMatchObject({ status: 'left', reason: expect.stringMatching(reason) })
    expect(readFileSync(log).equals(looped.written())).toBe(true)
    expect(tempsBeside(log)).toEqual([])
  })

  it('keeps the first failure as the reason when the clean-up fails too', async () => {
    const { log } = copyOfLog()
    const outcome = await releasedFile(log, {
      mode: RELEASE_MODES.removal,
      write: {},
      fs: gatedFs((step) => {
        if (step === 'handle.writeFile') throw error('ENOSPC')
        if (step === 'fs.rm') throw error('EIO')
      }),
    })
    expect(outcome).toMatchObject({ status: 'left', reason: 'the disk is full: ENOSPC: simulated' })
    expect(readFileSync(log).equals(looped.written())).toBe(true)
  })
})

describe('a failure after the rename', () => {
  it.each([
    ['removal', 'already-released'],
    ['upgrade', 'no-loops'],
  ] as const)(
    '%s: says the log was replaced, not that it is as it was, and the next run checks it',
    async (mode, rerunStatus) => {
      const reference = copyOfLog()
      await releaseDone(reference.home, { mode })
      const released = readFileSync(reference.log)
      const { home, log } = copyOfLog()
      let renamed = false
      const release = await releaseDone(home, {
        mode,
        // The folder's fsync after the log's rename fails (an upgrade renames the checkpoints first).
        fs: gatedFs((step, args) => {
          if (step === 'fs.rename' && args[1] === log) renamed = true
          else if (renamed && step === 'handle.sync') throw error('EIO')
        }),
      })
      expect(release.files).toEqual([
        { path: log, sessionId: expect.any(String), status: 'left', reason: 'EIO: simulated', replaced: true },
      ])
      expect(reportOf(release)).toContain(
        `: EIO: simulated; this came after the log was replaced: run the release again to check it\n`,
      )
      expect(readFileSync(log).equals(released)).toBe(true)
      expect(tempsBeside(log)).toEqual([])
      const rerun = await releaseDone(home, { mode, startedAt: new Date(1) })
      expect(rerun.files.map((file) => file.status)).toEqual([rerunStatus])
      expect(readFileSync(log).equals(released)).toBe(true)
    },
  )
  it('without a journal: a log released alone is left saying so, with no journal line to name', async () => {
    const { log } = copyOfLog()
    let renamed = false
    const done = await releaseFile(log, {
      mode: RELEASE_MODES.removal,
      write: {},
      fs: gatedFs((step) => {
        if (step === 'fs.rename') renamed = true
        else if (renamed && step === 'handle.sync') throw error('EIO')
      }),
    })
    expect(done).toEqual({
      outcome: { path: log, sessionId: 'session-looped', status: 'left', reason: 'EIO: simulated', replaced: true },
    })
  })
})

describe('a log that changes while the release runs', () => {
  it('is left as it was when it grew after it was read', async () => {
    const { log } = copyOfLog()
    let closes = 0
    const outcome = await releasedFile(log, {
      mode: RELEASE_MODES.removal,
      write: {},
      fs: gatedFs((step) => {
        // The first close is the reader's, at the end of the log: DSH appends a batch right then.
        if (step === 'handle.close' && closes++ === 0) appendFileSync(log, looped.written().subarray(-40))
      }),
    })
    expect(outcome).toMatchObject({
      status: 'left',
      reason: 'the log changed while the release ran: stop DSH, then run the release again',
    })
    expect(tempsBeside(log)).toEqual([])
  })
})

describe('bad logs among good ones', () => {
  it('leaves each bad log as it was, with its reason, and releases the others', async () => {
    const home = tempDir('loop-release-mixed-')
    const folder = (id: string) => join(home, 'sessions', '--project--', id)
    const place = (id: string, name: string, bytes: Buffer | string): string => {
      mkdirSync(folder(id), { recursive: true })
      writeFileSync(join(folder(id), name), bytes)
      return join(folder(id), name)
    }
    const good = place('session-good', 'session.jsonl.zstd', looped.written())
    const torn = place('session-torn', 'session.jsonl.zstd', looped.written())
    truncateSync(torn, looped.written().length - 3)
    const notJson = place(
      'session-bad',
      'session.jsonl',
      '{"type":"session","version":0,"id":"session-bad"}\n{"type":"loop/change","seq":0,"data":{\n',
    )
    const later = place('session-later', 'session.jsonl', '{"type":"session","version":4,"id":"session-later"}\n')
    const plainTorn = place(
      'session-plain',
      'session.jsonl',
      '{"type":"session","version":0,"id":"session-plain"}\n{"type":"x"',
    )
    const notZstd = place('session-zz', 'session.jsonl.zstd', 'not a frame at all')
    const badUtf8 = place(
      'session-utf',
      'session.jsonl',
      Buffer.from(
        '{"type":"session","version":0,"id":"session-utf"}\n{"type":"loop/change","seq":0,"data":{}}\n{"type":"user/message","seq":1,"time":1,"data":"\xff"}\n',
        'latin1',
      ),
    )
    const empty = place('session-empty', 'session.jsonl.zstd', '')
    const snapshot = [torn, notJson, later, plainTorn, notZstd].map((path) => readFileSync(path))

    const release = await releaseDone(home)
    // An empty log holds no loop/change row, in either mode.
    expect(await releasedFile(empty, { mode: RELEASE_MODES.upgrade, write: {}, fs: fsPromises })).toMatchObject({
      status: 'no-loops',
      sessionId: undefined,
    })
    const byPath = new Map(release.files.map((file) => [file.path, file]))
    expect(byPath.get(good)).toMatchObject({ status: 'released' })
    expect(byPath.get(torn)).toMatchObject({
      status: 'left',
      reason: expect.stringMatching(/^its last write was cut short/),
    })
    expect(byPath.get(notJson)).toMatchObject({ status: 'left', reason: 'row 1 does not end as a JSON object does' })
    expect(byPath.get(later)).toMatchObject({ status: 'later-format', sessionId: 'session-later' })
    expect(byPath.get(plainTorn)).toMatchObject({
      status: 'left',
      reason: expect.stringMatching(/^its last write was cut short/),
    })
    expect(byPath.get(notZstd)).toMatchObject({
      status: 'left',
      reason: 'the Zstandard frame at byte 0 does not start with the frame magic',
    })
    expect(byPath.get(empty)).toMatchObject({ status: 'no-loops', sessionId: undefined })
    // The removal reads no row but the loop rows; the upgrade reads every row after one, as text where it must parse it.
    expect(byPath.get(badUtf8)).toMatchObject({ status: 'released' })
    expect(await releasedFile(badUtf8, { mode: RELEASE_MODES.upgrade, write: {}, fs: fsPromises })).toMatchObject({
      status: 'left',
      reason: 'row 2 holds bytes that are not UTF-8',
    })
    expect([torn, notJson, later, plainTorn, notZstd].map((path) => readFileSync(path))).toEqual(snapshot)
  })
})

describe('a write the system cuts short', () => {
  it('still leaves a whole copy: a kept original is written until every byte is', async () => {
    const folder = tempDir('loop-short-write-')
    const source = join(folder, 'original')
    writeFileSync(source, Buffer.alloc(300_000, 'x'))
    // A file system whose write() takes only the first half of what it is given, as one near full may.
    const halving: ReleaseFs = {
      ...fsPromises,
      open: (async (path: string, flags: string) => {
        const handle = await fsPromises.open(path, flags)
        return new Proxy(handle, {
          get: (target, key) =>
            key === 'write'
              ? (bytes: Buffer) => target.write(bytes.subarray(0, bytes.length >> 1))
              : (Reflect.get(target, key) as unknown),
        })
      }) as typeof fsPromises.open,
    }
    const from = await fsPromises.open(source, 'r')
    try {
      await syncedCopy(halving, from, join(folder, 'copy'), 'wx')
    } finally {
      await from.close()
    }
    expect(readFileSync(join(folder, 'copy')).equals(readFileSync(source))).toBe(true)
  })
})

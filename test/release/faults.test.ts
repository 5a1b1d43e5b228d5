/**
 * A release under faults (SPEC.md §13 "Leaving loop"): a kill at each step of a file's
 * replacement, a failing write, no permission, a corrupt or torn log among good ones, a log
 * that grows while the release runs. Each leaves every file either as it was or released whole.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, truncateSync, writeFileSync, appendFileSync } from 'node:fs'
import * as fsPromises from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { releaseFile, tempPathOf, type ReleaseFs } from '../../src/release/release-file.ts'
import { releaseHome } from '../../src/release/home.ts'
import { useHosts } from '../support/host.ts'
import { logOf, writeHome } from '../support/release-home.ts'
import { tempDir } from '../support/temp-dir.ts'

/** Runs before each file-system call a release makes, named `fs.open`, `handle.write`, …; may throw or never settle. */
type Gate = (step: string) => void | Promise<void>

/**
 * The real file system with a gate before every call, the calls on open handles included.
 * @param gate - runs before each call.
 * @param opened - collects every handle opened, for a test that plays a kill to close as the OS would.
 */
function gatedFs(gate: Gate, opened: fsPromises.FileHandle[] = []): ReleaseFs {
  const wrapHandle = (handle: fsPromises.FileHandle): fsPromises.FileHandle =>
    new Proxy(handle, {
      get(target, key) {
        const value = Reflect.get(target, key) as unknown
        if (typeof value !== 'function') return value
        return async (...args: unknown[]) => {
          if (['read', 'write', 'sync', 'close'].includes(String(key))) await gate(`handle.${String(key)}`)
          return (value as (...a: unknown[]) => unknown).apply(target, args)
        }
      },
    })
  return {
    open: (async (...args: Parameters<typeof fsPromises.open>) => {
      await gate('fs.open')
      const handle = await fsPromises.open(...args)
      opened.push(handle)
      return wrapHandle(handle)
    }) as typeof fsPromises.open,
    stat: (async (...args: Parameters<typeof fsPromises.stat>) => {
      await gate('fs.stat')
      return fsPromises.stat(...args)
    }) as typeof fsPromises.stat,
    rename: async (...args) => {
      await gate('fs.rename')
      return fsPromises.rename(...args)
    },
    link: async (...args) => {
      await gate('fs.link')
      return fsPromises.link(...args)
    },
    mkdir: (async (...args: Parameters<typeof fsPromises.mkdir>) => {
      await gate('fs.mkdir')
      return fsPromises.mkdir(...args)
    }) as typeof fsPromises.mkdir,
    rm: async (...args) => {
      await gate('fs.rm')
      return fsPromises.rm(...args)
    },
  }
}

const hosts = useHosts()
let written: string
let original: Buffer

beforeAll(async () => {
  // One real log with loops, copied fresh for each case.
  written = logOf((await writeHome(hosts)).home, 'session-looped')
  original = readFileSync(written)
})

/** A fresh copy of the real log, alone in a home of its own. */
function copyOfLog(): { home: string; log: string } {
  const home = tempDir('loop-release-fault-')
  const log = join(home, 'sessions', '--project--', 'session-looped', 'session.jsonl.zstd')
  mkdirSync(dirname(log), { recursive: true })
  copyFileSync(written, log)
  return { home, log }
}

const error = (code: string): NodeJS.ErrnoException => Object.assign(new Error(`${code}: simulated`), { code })

describe('a kill at each step of the replacement', () => {
  it('leaves the log as it was or released whole, and the next run finishes the job', async () => {
    const reference = copyOfLog()
    const steps: string[] = []
    const done = await releaseFile(reference.log, {
      mode: 'removal',
      fs: gatedFs((step) => void steps.push(step)),
      dryRun: false,
    })
    expect(done.status).toBe('released')
    const released = readFileSync(reference.log)
    expect(released.equals(original)).toBe(false)
    expect(steps).toEqual(expect.arrayContaining(['fs.stat', 'handle.write', 'handle.sync', 'fs.rename']))

    for (let kill = 0; kill < steps.length; kill += 1) {
      const { log } = copyOfLog()
      let calls = 0
      let killed: () => void = () => {}
      const reached = new Promise<void>((resolve) => {
        killed = resolve
      })
      // The process dies at this call: nothing after it runs, no clean-up included.
      const opened: fsPromises.FileHandle[] = []
      void releaseFile(log, {
        mode: 'removal',
        dryRun: false,
        fs: gatedFs(() => {
          if (calls++ < kill) return
          killed()
          return new Promise<void>(() => {})
        }, opened),
      })
      await reached
      // What the OS does for a killed process: its descriptors close.
      await Promise.all(opened.map((handle) => handle.close().catch(() => {})))
      const left = readFileSync(log)
      expect(left.equals(original) || left.equals(released), `kill at step ${kill} (${steps[kill]})`).toBe(true)
      const rerun = await releaseFile(log, { mode: 'removal', fs: fsPromises, dryRun: false })
      expect(rerun.status).toBe(left.equals(original) ? 'released' : 'already-released')
      expect(readFileSync(log).equals(released)).toBe(true)
      expect(existsSync(tempPathOf(log))).toBe(false)
    }
  })
})

describe('a failing call', () => {
  it.each([
    ['handle.write', 'ENOSPC', /^the disk is full: ENOSPC: simulated$/],
    ['fs.open', 'EACCES', /^no permission: EACCES: simulated$/],
    ['fs.rename', 'EIO', /^EIO: simulated$/],
  ])('%s failing with %s leaves the log as it was and no temp file', async (failing, code, reason) => {
    const { log } = copyOfLog()
    const outcome = await releaseFile(log, {
      mode: 'removal',
      dryRun: false,
      fs: gatedFs((step) => {
        if (step === failing) throw error(code)
      }),
    })
    expect(outcome).toMatchObject({ status: 'left', reason: expect.stringMatching(reason) })
    expect(readFileSync(log).equals(original)).toBe(true)
    expect(existsSync(tempPathOf(log))).toBe(false)
  })

  it('keeps the first failure as the reason when the clean-up fails too', async () => {
    const { log } = copyOfLog()
    const outcome = await releaseFile(log, {
      mode: 'removal',
      dryRun: false,
      fs: gatedFs((step) => {
        if (step === 'handle.write') throw error('ENOSPC')
        if (step === 'fs.rm') throw error('EIO')
      }),
    })
    expect(outcome).toMatchObject({ status: 'left', reason: 'the disk is full: ENOSPC: simulated' })
    expect(readFileSync(log).equals(original)).toBe(true)
  })
})

describe('a log that changes while the release runs', () => {
  it('is left as it was when it grew after it was read', async () => {
    const { log } = copyOfLog()
    let closes = 0
    const outcome = await releaseFile(log, {
      mode: 'removal',
      dryRun: false,
      fs: gatedFs((step) => {
        // The first close is the reader's, at the end of the log: DSH appends a batch right then.
        if (step === 'handle.close' && closes++ === 0) appendFileSync(log, original.subarray(-40))
      }),
    })
    expect(outcome).toMatchObject({
      status: 'left',
      reason: 'the log changed while the release ran: stop DSH, then run the release again',
    })
    expect(existsSync(tempPathOf(log))).toBe(false)
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
    const good = place('session-good', 'session.jsonl.zstd', original)
    const torn = place('session-torn', 'session.jsonl.zstd', original)
    truncateSync(torn, original.length - 3)
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

    const release = await releaseHome({ home, mode: 'removal', dryRun: false, fs: fsPromises, startedAt: new Date(0) })
    expect(await releaseFile(empty, { mode: 'upgrade', dryRun: false, fs: fsPromises })).toMatchObject({
      status: 'left',
      reason: 'the log is empty',
    })
    const byPath = new Map(release.files.map((file) => [file.path, file]))
    expect(byPath.get(good)).toMatchObject({ status: 'released' })
    expect(byPath.get(torn)).toMatchObject({
      status: 'left',
      reason: expect.stringMatching(/^its last write was cut short/),
    })
    expect(byPath.get(notJson)).toMatchObject({ status: 'left', reason: 'row 1 does not end as a JSON object does' })
    expect(byPath.get(later)).toMatchObject({
      status: 'left',
      reason: 'the log is session format 4, not 0 (DSH 0.1.0-rc.8): a later DSH wrote or migrated it',
    })
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
    expect(await releaseFile(badUtf8, { mode: 'upgrade', dryRun: false, fs: fsPromises })).toMatchObject({
      status: 'left',
      reason: 'row 2 holds bytes that are not UTF-8',
    })
    expect([torn, notJson, later, plainTorn, notZstd].map((path) => readFileSync(path))).toEqual(snapshot)
  })
})

/** Where a home keeps its session logs, and whether a look for DSH lets a release go on (SPEC.md §13 "Leaving loop"). */
import { mkdirSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import * as fsPromises from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { exitCodeOf } from '../../src/release/cli.ts'
import { formatRefusal } from '../../src/release/report-text.ts'
import { dshDecision } from '../../src/release/dsh-processes.ts'
import { findSessionLogs, releaseHome, sessionFolderName, type HomeRefusal } from '../../src/release/home.ts'
import { roomNeeded } from '../../src/release/room.ts'
import { digests, releaseOptions } from '../support/release-home.ts'
import { tempDir } from '../../harness/temp-dir.ts'

describe('sessionFolderName', () => {
  it('names a session folder as DSH JSONL backend does', () => {
    expect(sessionFolderName('session-0a1b_C.d')).toBe('session-0a1b_C.d')
    expect(sessionFolderName('a/b~c d')).toBe('a~002Fb~007Ec~0020d')
    expect(sessionFolderName('.')).toBe('~002E')
    expect(sessionFolderName('..')).toBe('~002E~002E')
  })
})

describe('findSessionLogs', () => {
  it('finds plain and Zstandard logs of every project, in order, and one session on request', async () => {
    const home = tempDir('loop-home-')
    for (const [project, id, name] of [
      ['--b--', 'session-2', 'session.jsonl.zstd'],
      ['--a--', 'session-1', 'session.jsonl'],
      ['--a--', 'a~002Fb', 'session.jsonl'],
    ] as const) {
      mkdirSync(join(home, 'sessions', project, id), { recursive: true })
      writeFileSync(join(home, 'sessions', project, id, name), '')
    }
    mkdirSync(join(home, 'sessions', '--a--', 'no-log'))
    // An interrupted run's temp files, under this build's names and the earlier build's.
    writeFileSync(join(home, 'sessions', '--a--', 'session-1', 'session.jsonl.loop-release.tmp'), '')
    writeFileSync(join(home, 'sessions', '--b--', 'session-2', 'session.jsonl.zstd.loop-release-12-0a1b2c3d.tmp'), '')
    writeFileSync(join(home, 'sessions', '--b--', 'session-2', 'session.jsonl.zstd.other.tmp'), '')
    // An original a killed run held beside its log while it copied it.
    writeFileSync(join(home, 'sessions', '--b--', 'session-2', 'session.jsonl.zstd.loop-release-12-0a1b2c3d.hold'), '')
    expect(await findSessionLogs(home, fsPromises)).toEqual({
      logs: [
        join(home, 'sessions', '--a--', 'a~002Fb', 'session.jsonl'),
        join(home, 'sessions', '--a--', 'session-1', 'session.jsonl'),
        join(home, 'sessions', '--b--', 'session-2', 'session.jsonl.zstd'),
      ],
      temps: [
        join(home, 'sessions', '--a--', 'session-1', 'session.jsonl.loop-release.tmp'),
        join(home, 'sessions', '--b--', 'session-2', 'session.jsonl.zstd.loop-release-12-0a1b2c3d.tmp'),
      ],
      holds: [join(home, 'sessions', '--b--', 'session-2', 'session.jsonl.zstd.loop-release-12-0a1b2c3d.hold')],
    })
    expect(await findSessionLogs(home, fsPromises, 'a/b')).toEqual({
      logs: [join(home, 'sessions', '--a--', 'a~002Fb', 'session.jsonl')],
      temps: [],
      holds: [],
    })
  })

  it('finds the logs of a project or session folder that is a link, and none behind a dangling link', async () => {
    const home = tempDir('loop-home-')
    const elsewhere = tempDir('loop-elsewhere-')
    mkdirSync(join(elsewhere, 'session-1'), { recursive: true })
    writeFileSync(join(elsewhere, 'session-1', 'session.jsonl'), '')
    mkdirSync(join(home, 'sessions', '--a--'), { recursive: true })
    symlinkSync(join(elsewhere, 'session-1'), join(home, 'sessions', '--a--', 'session-1'))
    symlinkSync(join(elsewhere, 'gone'), join(home, 'sessions', '--a--', 'session-2'))
    symlinkSync(elsewhere, join(home, 'sessions', '--b--'))
    expect((await findSessionLogs(home, fsPromises)).logs).toEqual([
      join(home, 'sessions', '--a--', 'session-1', 'session.jsonl'),
      join(home, 'sessions', '--b--', 'session-1', 'session.jsonl'),
    ])
  })
})

describe('dshDecision', () => {
  const ours = { pid: 10, command: 'node bin.js web', home: '/h' }
  const unread = { pid: 11, command: 'node bin.js web' }
  it('goes on only with no DSH on the home, and lets the user vouch for what the system cannot show', () => {
    expect(dshDecision({ kind: 'looked', running: [] }, false)).toBeUndefined()
    expect(dshDecision({ kind: 'looked', running: [ours, unread] }, false)).toEqual({
      kind: 'dsh-running',
      running: [ours, unread],
    })
    expect(dshDecision({ kind: 'looked', running: [ours, unread] }, true)).toEqual({
      kind: 'dsh-running',
      running: [ours],
    })
    expect(dshDecision({ kind: 'looked', running: [unread] }, true)).toBeUndefined()
    expect(dshDecision({ kind: 'cannot-look', why: 'no /proc' }, false)).toEqual({
      kind: 'cannot-look',
      why: 'no /proc',
    })
    expect(dshDecision({ kind: 'cannot-look', why: 'no /proc' }, true)).toBeUndefined()
  })
})

describe('roomNeeded', () => {
  it('counts every log an upgrade rewrites, and a removal only the largest two looks’ worth', () => {
    const sizes = [5, 50, 1, 40, 30, 20, 10, 2, 3, 4]
    expect(roomNeeded(sizes, true, 4)).toBe(165)
    // Two looks' worth of four logs at once: the eight largest.
    expect(roomNeeded(sizes, false, 4)).toBe(165 - 1 - 2)
    expect(roomNeeded(sizes, false, 1)).toBe(50 + 40)
    expect(roomNeeded([], true, 4)).toBe(0)
  })
})

describe('a disk short of room', () => {
  it.each(['removal', 'upgrade'] as const)(
    '%s: refuses before writing anything, saying how much it needs and has',
    async (mode) => {
      const home = tempDir('loop-room-')
      const logs = ['a', 'b'].map((id) => {
        const log = join(home, 'sessions', '--p--', id, 'session.jsonl')
        mkdirSync(join(home, 'sessions', '--p--', id), { recursive: true })
        writeFileSync(
          log,
          `{"type":"session","version":0,"id":"${id}","createdAt":1,"delegationDepth":0}\n` +
            '{"type":"loop/change","seq":0,"time":1,"data":{"version":1,"operation":"delete","id":"loop_1"}}\n',
        )
        return log
      })
      const digest = digests(home)
      const statfs = (async () => ({ bavail: 1, bsize: 100 })) as unknown as typeof fsPromises.statfs
      for (const dryRun of [false, true]) {
        const refusal = await releaseHome(releaseOptions(home, { mode, dryRun, fs: { ...fsPromises, statfs } }))
        const needed = logs.length * statSync(logs[0]!).size
        expect(refusal).toEqual({ kind: 'no-room', needed, free: 100 })
        expect(exitCodeOf(refusal)).toBe(2)
        expect(formatRefusal(refusal as HomeRefusal)).toBe(
          `the release may need ${(needed / 1e6).toFixed(1)} MB free on the home's disk (each log is written anew before its original goes; an upgrade keeps every original), and it has 0.0 MB: free some room, or release one session at a time with --session ID, then run it again. Nothing was written.`,
        )
        // Nothing written: no lock, no folder of originals, every log as it was.
        expect(readdirSync(home)).toEqual(['sessions'])
        expect(digests(home)).toEqual(digest)
      }
    },
  )
})

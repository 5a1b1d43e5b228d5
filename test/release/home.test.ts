/** Where a home keeps its session logs, and whether a look for DSH lets a release go on (SPEC.md §13 "Leaving loop"). */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import * as fsPromises from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { dshDecision, findSessionLogs, sessionFolderName } from '../../src/release/home.ts'
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

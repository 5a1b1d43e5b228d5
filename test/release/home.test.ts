/** Where a home keeps its session logs (SPEC.md §13 "Leaving loop"). */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { findSessionLogs, sessionFolderName } from '../../src/release/home.ts'
import { tempDir } from '../support/temp-dir.ts'

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
    expect(await findSessionLogs(home)).toEqual([
      join(home, 'sessions', '--a--', 'a~002Fb', 'session.jsonl'),
      join(home, 'sessions', '--a--', 'session-1', 'session.jsonl'),
      join(home, 'sessions', '--b--', 'session-2', 'session.jsonl.zstd'),
    ])
    expect(await findSessionLogs(home, 'a/b')).toEqual([join(home, 'sessions', '--a--', 'a~002Fb', 'session.jsonl')])
  })

  it('refuses a home whose sessions entry is not a folder', async () => {
    const home = tempDir('loop-home-')
    writeFileSync(join(home, 'sessions'), '')
    await expect(findSessionLogs(home)).rejects.toThrow(`no DSH home at ${home}: it has no sessions folder`)
  })
})

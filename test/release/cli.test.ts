/** The `dsh-plugin-loop` command: its arguments, its report and its exit codes (SPEC.md §13 "Leaving loop"). */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { USAGE, formatReport, parseArguments, runCli, type CliProcess } from '../../src/release/cli.ts'
import type { HomeRelease } from '../../src/release/home.ts'
import { nodeRefusal } from '../../src/release/node-version.ts'
import { tempDir } from '../support/temp-dir.ts'

describe('parseArguments', () => {
  it('reads every option', () => {
    expect(parseArguments(['release'])).toEqual({
      kind: 'release',
      forUpgrade: false,
      home: undefined,
      session: undefined,
      dryRun: false,
      json: false,
    })
    expect(
      parseArguments(['release', '--for-upgrade', '--home', '/h', '--session', 'session-1', '--dry-run', '--json']),
    ).toEqual({ kind: 'release', forUpgrade: true, home: '/h', session: 'session-1', dryRun: true, json: true })
  })

  it('answers help, and names what it cannot take', () => {
    expect(parseArguments([])).toEqual({ kind: 'help' })
    expect(parseArguments(['release', '--help'])).toEqual({ kind: 'help' })
    expect(parseArguments(['-h'])).toEqual({ kind: 'help' })
    expect(parseArguments(['remove'])).toEqual({ kind: 'usage-error', message: 'unknown command "remove"' })
    expect(parseArguments(['release', '--home'])).toEqual({ kind: 'usage-error', message: '--home needs a value' })
    expect(parseArguments(['release', '--session', '--json'])).toEqual({
      kind: 'usage-error',
      message: '--session needs a value',
    })
    expect(parseArguments(['release', '--json', '--json'])).toEqual({
      kind: 'usage-error',
      message: 'unknown or repeated option "--json"',
    })
    expect(parseArguments(['release', '--force'])).toEqual({
      kind: 'usage-error',
      message: 'unknown or repeated option "--force"',
    })
  })
})

const tally = (counts: Partial<{ rows: number; marked: number; alreadyMarked: number; removed: number }>) => ({
  rows: 10,
  marked: 0,
  alreadyMarked: 0,
  removed: 0,
  ...counts,
})

describe('formatReport', () => {
  it('says per log what was done and totals it', () => {
    const release: HomeRelease = {
      home: '/h',
      mode: 'removal',
      dryRun: false,
      files: [
        { path: '/h/sessions/p/a/session.jsonl.zstd', sessionId: 'a', status: 'released', tally: tally({ marked: 3 }) },
        {
          path: '/h/sessions/p/b/session.jsonl.zstd',
          sessionId: 'b',
          status: 'released',
          tally: tally({ marked: 2, alreadyMarked: 4 }),
        },
        {
          path: '/h/sessions/p/c/session.jsonl',
          sessionId: 'c',
          status: 'already-released',
          tally: tally({ alreadyMarked: 5 }),
        },
        { path: '/h/sessions/p/d/session.jsonl', sessionId: 'd', status: 'no-loops', tally: tally({}) },
        {
          path: '/h/sessions/p/e/session.jsonl',
          sessionId: undefined,
          status: 'left',
          tally: tally({ rows: 0 }),
          reason: 'the first line is not a session header',
        },
      ],
    }
    expect(formatReport(release)).toBe(
      [
        'released  a  sessions/p/a/session.jsonl.zstd: 3 loop/change rows marked ignorable',
        'released  b  sessions/p/b/session.jsonl.zstd: 2 loop/change rows marked ignorable (4 already were)',
        'already   c  sessions/p/c/session.jsonl: all 5 loop/change rows already marked; nothing written',
        'no loops  d  sessions/p/d/session.jsonl: no loop/change rows; nothing written',
        'LEFT      (unreadable header)  sessions/p/e/session.jsonl: the first line is not a session header; the file is as it was',
        '5 session logs: 2 released (5 loop/change rows), 1 already released, 1 without loops, 1 left unreleased.',
        'Fix what each LEFT line says, then run the release again: released logs are not touched twice.',
      ].join('\n'),
    )
  })

  it('says what an upgrade release removed, where the originals are, and what a dry run would do', () => {
    const file = {
      path: '/h/sessions/p/a/session.jsonl.zstd',
      sessionId: 'a',
      status: 'released' as const,
      tally: tally({ removed: 4 }),
    }
    expect(
      formatReport({
        home: '/h',
        mode: 'upgrade',
        dryRun: false,
        files: [{ ...file, backup: '/h/loop-release-backup/t/sessions/p/a/session.jsonl.zstd' }],
        backupFolder: '/h/loop-release-backup/t',
      }),
    ).toBe(
      [
        'released  a  sessions/p/a/session.jsonl.zstd: 4 loop/change rows removed, 6 rows kept; the original is loop-release-backup/t/sessions/p/a/session.jsonl.zstd',
        '1 session logs: 1 released (4 loop/change rows), 0 already released, 0 without loops, 0 left unreleased.',
        'The originals are in /h/loop-release-backup/t; delete it once the upgraded DSH has opened these sessions.',
      ].join('\n'),
    )
    expect(formatReport({ home: '/h', mode: 'upgrade', dryRun: true, files: [file] })).toBe(
      [
        'released  a  sessions/p/a/session.jsonl.zstd: 4 loop/change rows would be removed, 6 rows kept',
        'Dry run, nothing written: 1 session logs: 1 released (4 loop/change rows), 0 already released, 0 without loops, 0 left unreleased.',
      ].join('\n'),
    )
  })
})

/** A process whose output the test reads. */
function captured(env: Record<string, string | undefined> = {}): CliProcess & { out: string; err: string } {
  const io = {
    out: '',
    err: '',
    stdout: (text: string) => {
      io.out += text
    },
    stderr: (text: string) => {
      io.err += text
    },
    env,
    now: () => new Date(0),
  }
  return io
}

describe('runCli', () => {
  it('prints help with 0 and a usage error with 2', async () => {
    const help = captured()
    expect(await runCli(['--help'], help)).toBe(0)
    expect(help.out).toBe(`${USAGE}\n`)
    const wrong = captured()
    expect(await runCli(['release', '--force'], wrong)).toBe(2)
    expect(wrong.err).toBe(`dsh-plugin-loop: unknown or repeated option "--force"\n${USAGE}\n`)
  })

  it('exits 2 without a home, and names the home from DSH_HOME', async () => {
    const io = captured({ DSH_HOME: '/nonexistent/dsh-home' })
    expect(await runCli(['release'], io)).toBe(2)
    expect(io.err).toBe(
      'dsh-plugin-loop: no DSH home at /nonexistent/dsh-home: it has no sessions folder (name the home with --home DIR or DSH_HOME)\n',
    )
    const defaultHome = captured()
    vi.stubEnv('HOME', '/nonexistent/user')
    expect(await runCli(['release'], defaultHome)).toBe(2)
    vi.unstubAllEnvs()
    expect(defaultHome.err).toContain('no DSH home at /nonexistent/user/.dsh:')
  })

  it('exits 2 for a session the home does not hold', async () => {
    const home = tempDir('loop-cli-')
    mkdirSync(join(home, 'sessions'))
    const io = captured()
    expect(await runCli(['release', '--home', home, '--session', 'session-x'], io)).toBe(2)
    expect(io.err).toBe(`dsh-plugin-loop: no session session-x in ${home}\n`)
  })

  it('exits 1 when a log was left, and prints JSON on request', async () => {
    const home = tempDir('loop-cli-')
    const folder = join(home, 'sessions', '--p--', 'session-a')
    mkdirSync(folder, { recursive: true })
    writeFileSync(join(folder, 'session.jsonl'), '{"type":"session","version":2,"id":"session-a"}\n')
    const io = captured()
    expect(await runCli(['release', '--home', home, '--json'], io)).toBe(1)
    expect(JSON.parse(io.out)).toEqual({
      home,
      mode: 'removal',
      dryRun: false,
      files: [
        {
          path: join(folder, 'session.jsonl'),
          status: 'left',
          tally: { rows: 0, marked: 0, alreadyMarked: 0, removed: 0 },
          reason: 'the log is session format 2, not 0 (DSH 0.1.0-rc.8): a later DSH wrote or migrated it',
        },
      ],
    })
  })

  it('exits 0 when every log is released or has nothing to release', async () => {
    const home = tempDir('loop-cli-')
    const folder = join(home, 'sessions', '--p--', 'session-a')
    mkdirSync(folder, { recursive: true })
    writeFileSync(join(folder, 'session.jsonl'), '{"type":"session","version":0,"id":"session-a"}\n')
    const io = captured()
    expect(await runCli(['release', '--home', home, '--session', 'session-a'], io)).toBe(0)
    expect(io.out).toBe(
      'no loops  session-a  sessions/--p--/session-a/session.jsonl: no loop/change rows; nothing written\n' +
        '1 session logs: 0 released (0 loop/change rows), 0 already released, 1 without loops, 0 left unreleased.\n',
    )
  })
})

/** A home holding one plain-text log with a loop row, and DSH's projection checkpoints. */
function homeWithLoopRow(): { home: string; log: string } {
  const home = tempDir('loop-cli-')
  const folder = join(home, 'sessions', '--p--', 'session-a')
  mkdirSync(folder, { recursive: true })
  const log = join(folder, 'session.jsonl')
  writeFileSync(
    log,
    [
      '{"type":"session","version":0,"id":"session-a","createdAt":1,"delegationDepth":0}',
      '{"type":"loop/change","seq":0,"time":1,"data":{"version":1,"operation":"delete","id":"loop_1"}}',
      '{"type":"command/run","seq":1,"time":2,"data":{"commandId":"c","name":"loop","args":" list","source":{"kind":"user"}}}',
      '',
    ].join('\n'),
  )
  return { home, log }
}

describe('runCli for an upgrade', () => {
  it('exits 0 without projection checkpoints to set aside', async () => {
    const { home, log } = homeWithLoopRow()
    const io = captured()
    expect(await runCli(['release', '--for-upgrade', '--home', home], io)).toBe(0)
    const backup = join(home, 'loop-release-backup', '1970-01-01T00-00-00-000Z')
    expect(io.out).toBe(
      'released  session-a  sessions/--p--/session-a/session.jsonl: 1 loop/change rows removed, 1 rows kept; ' +
        'the original is loop-release-backup/1970-01-01T00-00-00-000Z/sessions/--p--/session-a/session.jsonl\n' +
        '1 session logs: 1 released (1 loop/change rows), 0 already released, 0 without loops, 0 left unreleased.\n' +
        `The originals are in ${backup}; delete it once the upgraded DSH has opened these sessions.\n`,
    )
    expect(readFileSync(log, 'utf8')).toBe(
      '{"type":"session","version":0,"id":"session-a","createdAt":1,"delegationDepth":0}\n' +
        '{"type":"command/run","seq":0,"time":2,"data":{"commandId":"c","name":"loop","args":" list","source":{"kind":"user"}}}\n',
    )
  })

  it('exits 1 when the projection checkpoints cannot be set aside, and says to delete them', async () => {
    const { home } = homeWithLoopRow()
    mkdirSync(join(home, 'storages'))
    writeFileSync(join(home, 'storages', 'session_projcache.json'), '{}')
    // Where the checkpoints would go is taken by a file.
    mkdirSync(join(home, 'loop-release-backup', '1970-01-01T00-00-00-000Z'), { recursive: true })
    writeFileSync(join(home, 'loop-release-backup', '1970-01-01T00-00-00-000Z', 'storages'), '')
    const io = captured()
    expect(await runCli(['release', '--for-upgrade', '--home', home], io)).toBe(1)
    expect(io.out).toMatch(
      /\nCould not set aside DSH's projection checkpoints \(storages\/session_projcache\.json\): EEXIST: [^\n]+\. Delete that file before starting DSH: it counts events the old way\.\n/,
    )
    expect(readFileSync(join(home, 'storages', 'session_projcache.json'), 'utf8')).toBe('{}')
  })

  it('sets them aside with the originals, and says so', () => {
    expect(
      formatReport({
        home: '/h',
        mode: 'upgrade',
        dryRun: false,
        files: [],
        backupFolder: '/h/b',
        projectionCache: { movedTo: '/h/b/storages/session_projcache.json' },
      }),
    ).toBe(
      [
        '0 session logs: 0 released (0 loop/change rows), 0 already released, 0 without loops, 0 left unreleased.',
        "DSH's projection checkpoints (storages/session_projcache.json) went with them: they count events the old way, and DSH rebuilds them.",
        'The originals are in /h/b; delete it once the upgraded DSH has opened these sessions.',
      ].join('\n'),
    )
  })
})

describe('nodeRefusal', () => {
  it('runs on Node 22.19 and later, and names the Node it will not run on', () => {
    for (const version of ['22.19.0', '22.23.3', '24.1.0', '26.0.0']) expect(nodeRefusal(version)).toBeUndefined()
    for (const version of ['20.20.2', '22.18.9', '18.0.0', ''])
      expect(nodeRefusal(version)).toBe(
        `dsh-plugin-loop needs Node 22.19 or later, as DSH does, and this is Node ${version}: run it with the node that runs DSH`,
      )
  })
})

describe('the executable', () => {
  it('runs the command with the process arguments, streams and environment, and sets the exit code', async () => {
    const argv = process.argv
    const node = process.versions.node
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true)
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true)
    try {
      process.argv = ['node', 'dsh-plugin-loop', '--help']
      await import('../../src/release/bin.ts')
      expect(process.exitCode).toBe(0)
      expect(out).toHaveBeenCalledWith(`${USAGE}\n`)
      vi.resetModules()
      vi.stubEnv('DSH_HOME', '/nonexistent/dsh-home')
      process.argv = ['node', 'dsh-plugin-loop', 'release']
      await import('../../src/release/bin.ts')
      expect(process.exitCode).toBe(2)
      expect(err).toHaveBeenCalledWith(
        'dsh-plugin-loop: no DSH home at /nonexistent/dsh-home: it has no sessions folder (name the home with --home DIR or DSH_HOME)\n',
      )
      // On an older Node it says so, without loading the command.
      vi.resetModules()
      Object.defineProperty(process.versions, 'node', { value: '20.20.2' })
      await import('../../src/release/bin.ts')
      expect(process.exitCode).toBe(2)
      expect(err).toHaveBeenLastCalledWith(`${nodeRefusal('20.20.2')}\n`)
    } finally {
      Object.defineProperty(process.versions, 'node', { value: node })
      process.argv = argv
      out.mockRestore()
      err.mockRestore()
      vi.unstubAllEnvs()
      process.exitCode = undefined
    }
  })
})

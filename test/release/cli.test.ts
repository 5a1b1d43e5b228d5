/** The `dsh-plugin-loop` command: its arguments, its report and its exit codes (SPEC.md §13 "Leaving loop"). */
import { appendFileSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { join, relative } from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { USAGE, parseArguments, runCli, type CliProcess } from '../../src/release/cli.ts'
import type { DshLookout, DshProcess } from '../../src/release/dsh-processes.ts'
import type { HomeRelease } from '../../src/release/home.ts'
import { formatRefusal, formatReport, progressLine } from '../../src/release/report-text.ts'
import { RELEASE_MODES, type Tally } from '../../src/release/modes.ts'
import { nodeRefusal } from '../../src/release/node-version.ts'
import { NO_DSH } from '../support/release-home.ts'
import { tempDir } from '../../harness/temp-dir.ts'

describe('parseArguments', () => {
  it('reads every option', () => {
    expect(parseArguments(['release'])).toEqual({
      kind: 'release',
      mode: RELEASE_MODES.removal,
      home: undefined,
      session: undefined,
      dryRun: false,
      json: false,
      dshStopped: false,
    })
    expect(
      parseArguments([
        'release',
        '--for-upgrade',
        '--home',
        '/h',
        '--session=session-1',
        '--dry-run',
        '--json',
        '--dsh-stopped',
      ]),
    ).toEqual({
      kind: 'release',
      mode: RELEASE_MODES.upgrade,
      home: '/h',
      session: 'session-1',
      dryRun: true,
      json: true,
      dshStopped: true,
    })
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
    expect(parseArguments(['release', '--home='])).toEqual({ kind: 'usage-error', message: '--home needs a value' })
    expect(parseArguments(['release', '--json=yes'])).toEqual({ kind: 'usage-error', message: '--json takes no value' })
    expect(parseArguments(['release', 'now'])).toEqual({
      kind: 'usage-error',
      message: 'unknown command "release now"',
    })
    expect(parseArguments(['release', '--force'])).toEqual({ kind: 'usage-error', message: 'unknown option "--force"' })
  })
})

const tally = (counts: Partial<Tally>): Tally => ({ rows: 10, loopRows: 0, ...counts })

/** A release's report fields for a run that wrote, found and left nothing beside its logs. */
const QUIET_RUN = {
  kind: 'done',
  dryRun: false,
  untouched: [],
  earlierFolders: [],
  unfitting: [],
  earlierRemoved: [],
  leftovers: [],
} as const

describe('formatReport', () => {
  it('says per log what was done and totals only what was written', () => {
    const release: HomeRelease = {
      ...QUIET_RUN,
      home: '/h',
      mode: 'removal',
      leftovers: ['/h/sessions/p/a/session.jsonl.zstd.loop-release-7-0a0b0c0d.tmp'],
      tookOverFrom: { pid: 7, host: 'box', startedAt: '2026-12-01T10:00:00.000Z', mode: 'removal' },
      files: [
        {
          path: '/h/sessions/p/a/session.jsonl.zstd',
          sessionId: 'a',
          status: 'released',
          tally: tally({ loopRows: 3 }),
        },
        {
          path: '/h/sessions/p/b/session.jsonl.zstd',
          sessionId: 'b',
          status: 'released',
          tally: tally({ loopRows: 2, alreadyMarked: 4 }),
        },
        {
          path: '/h/sessions/p/c/session.jsonl',
          sessionId: 'c',
          status: 'already-released',
          tally: tally({ alreadyMarked: 5 }),
        },
        { path: '/h/sessions/p/d/session.jsonl', sessionId: 'd', status: 'no-loops', tally: tally({}) },
        { path: '/h/sessions/p/f/session.jsonl', sessionId: undefined, status: 'no-loops', tally: tally({ rows: 0 }) },
        { path: '/h/sessions/p/g/session.jsonl', sessionId: 'g', status: 'later-format', tally: tally({ rows: 0 }) },
        {
          path: '/h/sessions/p/e/session.jsonl',
          sessionId: undefined,
          status: 'left',
          reason: 'the first line is not a session header',
        },
      ],
    }
    expect(formatReport(release, RELEASE_MODES.removal)).toBe(
      [
        'An earlier release (pid 7, since 2026-12-01T10:00:00.000Z) stopped before it finished; this run takes over.',
        'removed  sessions/p/a/session.jsonl.zstd.loop-release-7-0a0b0c0d.tmp: a temp file an interrupted release left',
        'released  a  sessions/p/a/session.jsonl.zstd: 3 loop/change rows marked ignorable',
        'released  b  sessions/p/b/session.jsonl.zstd: 2 loop/change rows marked ignorable (4 already were)',
        'already   c  sessions/p/c/session.jsonl: all 5 loop/change rows already marked; nothing written',
        'no loops  d  sessions/p/d/session.jsonl: no loop/change rows; nothing written',
        'no loops  (no header)  sessions/p/f/session.jsonl: no loop/change rows; nothing written',
        'later     g  sessions/p/g/session.jsonl: already migrated by a later DSH; nothing to do',
        'LEFT      (no header)  sessions/p/e/session.jsonl: the first line is not a session header; the file is as it was',
        '7 session logs: 2 released (5 loop/change rows), 1 already released, 2 without loops, 1 already migrated, 1 left unreleased.',
        'Fix what each LEFT line says, then run the release again: released logs are not touched twice.',
      ].join('\n'),
    )
  })

  it('says what an upgrade release removed, where the originals are, and what a dry run would do', () => {
    const file = {
      path: '/h/sessions/p/a/session.jsonl.zstd',
      sessionId: 'a',
      status: 'released' as const,
      tally: tally({ loopRows: 4 }),
    }
    expect(
      formatReport(
        {
          ...QUIET_RUN,
          home: '/h',
          mode: 'upgrade',
          files: [
            { ...file, original: '/h/loop-release-backup/t/sessions/p/a/session.jsonl.zstd' },
            {
              ...file,
              path: '/h/sessions/p/b/session.jsonl',
              original: '/h/loop-release-backup/t/sessions/p/b/session.jsonl',
              copied: true,
            },
          ],
          backupFolder: '/h/loop-release-backup/t',
          projectionCache: '/h/loop-release-backup/t/storages/session_projcache.json',
        },
        RELEASE_MODES.upgrade,
      ),
    ).toBe(
      [
        'released  a  sessions/p/a/session.jsonl.zstd: 4 loop/change rows removed, 6 rows kept; the original is loop-release-backup/t/sessions/p/a/session.jsonl.zstd',
        'released  a  sessions/p/b/session.jsonl: 4 loop/change rows removed, 6 rows kept; the original is loop-release-backup/t/sessions/p/b/session.jsonl (a copy: no hard link could be made there)',
        '2 session logs: 2 released (8 loop/change rows), 0 already released, 0 without loops, 0 already migrated, 0 left unreleased.',
        "DSH's projection checkpoints (storages/session_projcache.json) went with the originals: they count events the old way, and DSH rebuilds them.",
        'The originals are in loop-release-backup/t; delete it once the upgraded DSH has opened these sessions.',
      ].join('\n'),
    )
    expect(
      formatReport(
        {
          ...QUIET_RUN,
          home: '/h',
          mode: 'upgrade',
          dryRun: true,
          files: [
            { ...file, removedLoops: [{ id: 'loop_1', time_in_seconds: 90, prompt: 'check' }] },
            { ...file, sessionId: 'b', unreadableLoops: 'corrupt loop/change record: invalid id' },
            { ...file, sessionId: 'c', removedLoops: [] },
          ],
          leftovers: ['/h/sessions/p/a/session.jsonl.zstd.loop-release.tmp'],
        },
        RELEASE_MODES.upgrade,
      ),
    ).toBe(
      [
        'would remove  sessions/p/a/session.jsonl.zstd.loop-release.tmp: a temp file an interrupted release left',
        'released  a  sessions/p/a/session.jsonl.zstd: 4 loop/change rows would be removed, 6 rows kept',
        '          1 active loops would be removed; to recreate them in this session after the upgrade:',
        '            /loop 90 check',
        'released  b  sessions/p/a/session.jsonl.zstd: 4 loop/change rows would be removed, 6 rows kept',
        '          its loops could not be read to name them (corrupt loop/change record: invalid id)',
        'released  c  sessions/p/a/session.jsonl.zstd: 4 loop/change rows would be removed, 6 rows kept',
        'Dry run, nothing written: 3 session logs: 3 released (12 loop/change rows), 0 already released, 0 without loops, 0 already migrated, 0 left unreleased.',
      ].join('\n'),
    )
  })
})

describe('formatRefusal', () => {
  it('names the run that holds the home, the DSH that runs on it, or why it could not look', () => {
    expect(
      formatRefusal({
        kind: 'locked',
        lock: '/h/loop-release.lock',
        holder: { pid: 7, host: 'box', startedAt: '2026-12-01T10:00:00.000Z', mode: 'upgrade' },
      }),
    ).toBe(
      'another release runs on this home (pid 7 on box, upgrade, since 2026-12-01T10:00:00.000Z): wait for it to finish. ' +
        'If it no longer runs, delete /h/loop-release.lock. Nothing was written.',
    )
    expect(formatRefusal({ kind: 'locked', lock: '/h/loop-release.lock' })).toBe(
      'another release holds /h/loop-release.lock, which cannot be read; if no release runs, delete that file and run the release again. Nothing was written.',
    )
    expect(
      formatRefusal({
        kind: 'dsh-running',
        running: [
          { pid: 40, command: 'node /x/@deepseek-ai/dsh/lib/bin.js web', home: '/h' },
          { pid: 41, command: 'dsh --profile headless' },
        ],
      }),
    ).toBe(
      [
        'DSH is running on this home: stop it, then run the release again. Nothing was written.',
        '  pid 40: node /x/@deepseek-ai/dsh/lib/bin.js web',
        '  pid 41: dsh --profile headless (its home could not be read)',
        "A DSH whose home could not be read (another user's) may run on another home: if every DSH on this home is stopped, run the release again with --dsh-stopped.",
      ].join('\n'),
    )
    expect(
      formatRefusal({
        kind: 'dsh-running',
        running: [{ pid: 40, command: 'node /x/@deepseek-ai/dsh/lib/bin.js web', home: '/h' }],
      }),
    ).toBe(
      'DSH is running on this home: stop it, then run the release again. Nothing was written.\n' +
        '  pid 40: node /x/@deepseek-ai/dsh/lib/bin.js web',
    )
    expect(
      formatRefusal({
        kind: 'dsh-running',
        running: [{ pid: 40, command: 'node /x/@deepseek-ai/dsh/lib/bin.js web', home: '/h', startedRelease: true }],
      }),
    ).toBe(
      "The release was started by DSH (pid 40), which writes this session's log after the release ends: run it from a terminal, with DSH stopped.\n" +
        'DSH is running on this home: stop it, then run the release again. Nothing was written.\n' +
        '  pid 40: node /x/@deepseek-ai/dsh/lib/bin.js web',
    )
    expect(formatRefusal({ kind: 'locked', lock: '/h/loop-release.lock', unlike: 'a link to nothing' })).toBe(
      "/h/loop-release.lock is in the way of the release's lock: it is a link to nothing, not a lock a release wrote. " +
        'If no release runs, remove it and run the release again. Nothing was written.',
    )
    expect(formatRefusal({ kind: 'cannot-look', why: 'the release cannot list the processes of win32' })).toBe(
      'the release cannot list the processes of win32, so it cannot tell whether DSH is running on this home. ' +
        'Stop DSH, then run the release again with --dsh-stopped. Nothing was written.',
    )
  })
})

/** A process whose output the test reads: no DSH runs, and no other pid. */
function captured(
  env: Record<string, string | undefined> = {},
  process: Partial<CliProcess> = {},
): CliProcess & { out: string; err: string } {
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
    cwd: '/',
    now: () => new Date(0),
    pid: 1,
    isAlive: () => false,
    lookForDsh: NO_DSH,
    ...process,
  }
  return io
}

describe('progressLine', () => {
  it('rewrites one terminal line: logs done of all and the current one, then clears it', () => {
    expect(progressLine('/h', 3, 2_000, '/h/sessions/p/s/session.jsonl.zstd')).toBe(
      '\r\u001b[K3 of 2000 logs: sessions/p/s/session.jsonl.zstd',
    )
    expect(progressLine('/h', 2_000, 2_000, undefined)).toBe('\r\u001b[K')
  })
})

describe('runCli', () => {
  it('prints help with 0 and a usage error with 2', async () => {
    const help = captured()
    expect(await runCli(['--help'], help)).toBe(0)
    expect(help.out).toBe(`${USAGE}\n`)
    const wrong = captured()
    expect(await runCli(['release', '--force'], wrong)).toBe(2)
    expect(wrong.err).toBe(`dsh-plugin-loop: unknown option "--force"\n${USAGE}\n`)
  })

  it('exits 2 without a home, and names the home as DSH does: DSH_HOME, ~ expanded, relative to the folder', async () => {
    const io = captured({ DSH_HOME: '/nonexistent/dsh-home' })
    expect(await runCli(['release'], io)).toBe(2)
    expect(io.err).toBe(
      'dsh-plugin-loop: no DSH home at /nonexistent/dsh-home: it has no sessions folder (name the home with --home DIR or DSH_HOME)\n',
    )
    for (const [env, home] of [
      [{ HOME: '/nonexistent/user' }, '/nonexistent/user/.dsh'],
      [{ HOME: '/nonexistent/user', DSH_HOME: '  ' }, '/nonexistent/user/.dsh'],
      [{ HOME: '/nonexistent/user', DSH_HOME: '~/h' }, '/nonexistent/user/h'],
      [{ DSH_HOME: 'rel/h' }, '/rel/h'],
    ] as const) {
      const named = captured(env)
      expect(await runCli(['release'], named)).toBe(2)
      expect(named.err).toContain(`no DSH home at ${home}:`)
    }
  })

  it('exits 2 for a session the home does not hold', async () => {
    const home = tempDir('loop-cli-')
    mkdirSync(join(home, 'sessions'))
    const io = captured()
    expect(await runCli(['release', '--home', home, '--session', 'session-x'], io)).toBe(2)
    expect(io.err).toBe(`dsh-plugin-loop: no session session-x in ${home}\n`)
    expect(readdirSync(home)).toEqual(['sessions'])
  })

  it('exits 1 when a log was left, and prints JSON on request', async () => {
    const home = tempDir('loop-cli-')
    const folder = join(home, 'sessions', '--p--', 'session-a')
    mkdirSync(folder, { recursive: true })
    writeFileSync(join(folder, 'session.jsonl'), '{"type":"session","version":-2,"id":"session-a"}\n')
    const io = captured()
    expect(await runCli(['release', '--home', home, '--json'], io)).toBe(1)
    expect(JSON.parse(io.out)).toEqual({
      ...QUIET_RUN,
      home,
      mode: 'removal',
      files: [
        {
          path: join(folder, 'session.jsonl'),
          status: 'left',
          reason: "the log's session format is -2, which no DSH writes (DSH 0.1.0-rc.8 writes 0)",
        },
      ],
    })
    // The lock went with the run.
    expect(readdirSync(home)).toEqual(['sessions'])
  })

  it('exits 0 when every log is released, has nothing to release, or a later DSH migrated it', async () => {
    const home = tempDir('loop-cli-')
    for (const [id, version] of [
      ['session-a', 0],
      ['session-b', 1],
    ] as const) {
      mkdirSync(join(home, 'sessions', '--p--', id), { recursive: true })
      writeFileSync(
        join(home, 'sessions', '--p--', id, 'session.jsonl'),
        `{"type":"session","version":${version},"id":"${id}"}\n`,
      )
    }
    for (const mode of [[], ['--for-upgrade']]) {
      const io = captured()
      expect(await runCli(['release', '--home', home, ...mode], io)).toBe(0)
      // Each log's line as it is done (logs are released several at once, so in either order), the summary last.
      const lines = io.out.split('\n')
      expect(lines.slice(0, 2).sort()).toEqual([
        'later     session-b  sessions/--p--/session-b/session.jsonl: already migrated by a later DSH; nothing to do',
        'no loops  session-a  sessions/--p--/session-a/session.jsonl: no loop/change rows; nothing written',
      ])
      expect(lines.slice(2)).toEqual([
        '2 session logs: 0 released (0 loop/change rows), 0 already released, 1 without loops, 1 already migrated, 0 left unreleased.',
        '',
      ])
    }
  })

  it('exits 3 while another release holds the home, and 4 while DSH runs on it, writing nothing', async () => {
    const { home, log } = homeWithLoopRow()
    const original = readFileSync(log)
    writeFileSync(
      join(home, 'loop-release.lock'),
      JSON.stringify({ pid: 7, host: hostname(), startedAt: '2026-12-01T10:00:00.000Z', mode: 'removal' }),
    )
    const locked = captured({}, { isAlive: (pid) => pid === 7 })
    expect(await runCli(['release', '--home', home], locked)).toBe(3)
    expect(locked.err).toBe(
      `dsh-plugin-loop: another release runs on this home (pid 7 on ${hostname()}, removal, since 2026-12-01T10:00:00.000Z): ` +
        `wait for it to finish. If it no longer runs, delete ${join(home, 'loop-release.lock')}. Nothing was written.\n`,
    )
    rmSync(join(home, 'loop-release.lock'))
    mkdirSync(join(home, 'loop-release.lock'))
    const folder = captured()
    expect(await runCli(['release', '--home', home], folder)).toBe(3)
    expect(folder.err).toBe(
      `dsh-plugin-loop: ${formatRefusal({ kind: 'locked', lock: join(home, 'loop-release.lock'), unlike: 'a folder' })}\n`,
    )
    rmSync(join(home, 'loop-release.lock'), { recursive: true })
    const dsh: DshProcess = { pid: 40, command: 'node /x/@deepseek-ai/dsh/lib/bin.js web', home }
    for (const json of [[], ['--json']]) {
      const running = captured({}, { lookForDsh: async () => ({ kind: 'looked', running: [dsh] }) })
      expect(await runCli(['release', '--for-upgrade', '--home', home, ...json], running)).toBe(4)
      expect(running.err).toBe(`dsh-plugin-loop: ${formatRefusal({ kind: 'dsh-running', running: [dsh] })}\n`)
      expect(running.out).toBe(
        json.length === 0 ? '' : `${JSON.stringify({ kind: 'dsh-running', running: [dsh] }, null, 2)}\n`,
      )
    }
    // A DSH whose home cannot be read (another user's): refused, until the user says DSH is stopped on this home;
    // one on this home is refused all the same.
    const theirs: DshProcess = { pid: 41, command: 'node /x/@deepseek-ai/dsh/lib/bin.js web' }
    const unread = () => captured({}, { lookForDsh: async () => ({ kind: 'looked', running: [dsh, theirs] }) })
    expect(await runCli(['release', '--home', home], unread())).toBe(4)
    const stillOurs = unread()
    expect(await runCli(['release', '--home', home, '--dsh-stopped'], stillOurs)).toBe(4)
    expect(stillOurs.err).toBe(`dsh-plugin-loop: ${formatRefusal({ kind: 'dsh-running', running: [dsh] })}\n`)
    expect(readdirSync(home)).toEqual(['sessions'])
    expect(readFileSync(log).equals(original)).toBe(true)
    // Where the system gives no way to look, the user's word goes.
    const blind = () => captured({}, { lookForDsh: async () => ({ kind: 'cannot-look', why: 'no way' }) })
    const refused = blind()
    expect(await runCli(['release', '--home', home], refused)).toBe(4)
    expect(readdirSync(home)).toEqual(['sessions'])
    expect(readFileSync(log).equals(original)).toBe(true)
    const confirmed = blind()
    expect(await runCli(['release', '--home', home, '--dsh-stopped'], confirmed)).toBe(0)
    expect(confirmed.out).toContain('1 released (1 loop/change rows)')
    const another = captured({}, { lookForDsh: async () => ({ kind: 'looked', running: [theirs] }) })
    expect(await runCli(['release', '--for-upgrade', '--home', home, '--dsh-stopped'], another)).toBe(0)
    expect(another.out).toContain('1 released (1 loop/change rows)')
  })
})

/** A home holding one plain-text log with a loop row. */
function homeWithLoopRow(): { home: string; log: string } {
  const home = tempDir('loop-cli-')
  const folder = join(home, 'sessions', '--p--', 'session-a')
  mkdirSync(folder, { recursive: true })
  const log = join(folder, 'session.jsonl')
  writeFileSync(
    log,
    [
      '{"type":"session","version":0,"id":"session-a","createdAt":1,"delegationDepth":0}',
      '{"type":"loop/change","seq":0,"time":1,"data":{"version":1,"operation":"create","loop":{"id":"loop_1","prompt":"check the build\\n\\tand say so \\u202etxt.exe","time_in_seconds":30,"next_at":30001}}}',
      '{"type":"command/run","seq":1,"time":2,"data":{"commandId":"c","name":"loop","args":" list","source":{"kind":"user"}}}',
      '',
    ].join('\n'),
  )
  return { home, log }
}

describe('runCli for an upgrade', () => {
  it('shows its progress on a terminal, one rewritten line on stderr, and nothing of it elsewhere', async () => {
    const { home } = homeWithLoopRow()
    const writes: [string, string][] = []
    const terminal = captured(
      {},
      {
        stderrIsTerminal: true,
        stdout: (text) => void writes.push(['out', text]),
        stderr: (text) => void writes.push(['err', text]),
      },
    )
    expect(await runCli(['release', '--home', home], terminal)).toBe(0)
    // The log's line is printed as soon as it is done, in the progress line's place; the summary last.
    expect(writes).toEqual([
      ['err', '\r\u001b[K0 of 1 logs: sessions/--p--/session-a/session.jsonl'],
      ['err', '\r\u001b[K'],
      ['out', 'released  session-a  sessions/--p--/session-a/session.jsonl: 1 loop/change rows marked ignorable\n'],
      ['err', '\r\u001b[K'],
      [
        'out',
        '1 session logs: 1 released (1 loop/change rows), 0 already released, 0 without loops, 0 already migrated, 0 left unreleased.\n',
      ],
    ])
    const piped = captured()
    expect(await runCli(['release', '--home', home], piped)).toBe(0)
    expect(piped.err).toBe('')
  })

  it('prints a dry run as it goes too, in its own words, writing nothing', async () => {
    const { home, log } = homeWithLoopRow()
    const before = readFileSync(log)
    for (const [flags, line] of [
      [[], '1 loop/change rows would be marked ignorable'],
      [['--for-upgrade'], '1 loop/change rows would be removed, 1 rows kept'],
    ] as const) {
      const io = captured()
      expect(await runCli(['release', '--dry-run', ...flags, '--home', home], io)).toBe(0)
      expect(io.out.split('\n')[0]).toBe(`released  session-a  sessions/--p--/session-a/session.jsonl: ${line}`)
      expect(io.out).toContain(
        'Dry run, nothing written: 1 session logs: 1 released (1 loop/change rows), 0 already released',
      )
    }
    expect(readFileSync(log).equals(before)).toBe(true)
  })

  it('prints a log again, under a heading, when the end of the run finds it written meanwhile', async () => {
    const { home, log } = homeWithLoopRow()
    let looks = 0
    // The third look is the last, at the end: a DSH appends to the released log right then.
    const lookForDsh: DshLookout = async () => {
      if ((looks += 1) === 3)
        appendFileSync(
          log,
          '{"type":"command/run","seq":2,"time":3,"data":{"commandId":"d","name":"loop","args":" list","source":{"kind":"user"}}}\n',
        )
      return { kind: 'looked', running: [] }
    }
    const io = captured({}, { lookForDsh })
    expect(await runCli(['release', '--home', home], io)).toBe(1)
    const kept = join('loop-release-backup', '1970-01-01T00-00-00-000Z')
    expect(io.out).toBe(
      'released  session-a  sessions/--p--/session-a/session.jsonl: 1 loop/change rows marked ignorable\n' +
        'Since their lines above, at the end of the run:\n' +
        'WRITTEN   session-a  sessions/--p--/session-a/session.jsonl: a DSH wrote to it while the release ran, so it is not released; ' +
        `its original, with every event DSH wrote to it, is ${join(kept, 'sessions/--p--/session-a/session.jsonl')}\n` +
        '1 session logs: 0 released (0 loop/change rows), 0 already released, 0 without loops, 0 already migrated, 0 left unreleased, 1 written by a DSH meanwhile.\n' +
        'A DSH ran on this home during the release: with DSH stopped, run the release again; it rebuilds each WRITTEN log with every event.\n' +
        `The originals are in ${kept}; keep it: the next run rebuilds from it what DSH wrote meanwhile.\n`,
    )
  })

  it('exits 0 without projection checkpoints to set aside', async () => {
    const { home, log } = homeWithLoopRow()
    const io = captured()
    expect(await runCli(['release', '--for-upgrade', '--home', home], io)).toBe(0)
    const backup = join(home, 'loop-release-backup', '1970-01-01T00-00-00-000Z')
    expect(io.out).toBe(
      'released  session-a  sessions/--p--/session-a/session.jsonl: 1 loop/change rows removed, 1 rows kept; ' +
        'the original is loop-release-backup/1970-01-01T00-00-00-000Z/sessions/--p--/session-a/session.jsonl\n' +
        '          1 active loops were removed; to recreate them in this session after the upgrade:\n' +
        '            /loop 30 check the build\n' +
        '                     \\u{9}and say so \\u{202e}txt.exe\n' +
        '1 session logs: 1 released (1 loop/change rows), 0 already released, 0 without loops, 0 already migrated, 0 left unreleased.\n' +
        `The originals are in ${relative(home, backup)}; delete it once the upgraded DSH has opened these sessions.\n`,
    )
    expect(readFileSync(log, 'utf8')).toBe(
      '{"type":"session","version":0,"id":"session-a","createdAt":1,"delegationDepth":0}\n' +
        '{"type":"command/run","seq":0,"time":2,"data":{"commandId":"c","name":"loop","args":" list","source":{"kind":"user"}}}\n',
    )
  })

  it('leaves the log when the projection checkpoints cannot be set aside first, and exits 1', async () => {
    const backup = join('loop-release-backup', '1970-01-01T00-00-00-000Z')
    // Where the checkpoints would go is taken: by a file where their folder goes, or by a folder of that name.
    for (const [taken, reason] of [
      [(home: string) => writeFileSync(join(home, backup, 'storages'), ''), 'EEXIST'],
      [
        (home: string) => {
          mkdirSync(join(home, backup, 'storages', 'session_projcache.json'), { recursive: true })
          writeFileSync(join(home, backup, 'storages', 'session_projcache.json', 'x'), '')
        },
        'EISDIR',
      ],
    ] as const) {
      const { home, log } = homeWithLoopRow()
      const original = readFileSync(log)
      mkdirSync(join(home, 'storages'))
      writeFileSync(join(home, 'storages', 'session_projcache.json'), '{}')
      mkdirSync(join(home, backup), { recursive: true })
      taken(home)
      const io = captured()
      expect(await runCli(['release', '--for-upgrade', '--home', home], io)).toBe(1)
      expect(io.out).toMatch(
        new RegExp(
          `^LEFT {6}session-a {2}sessions/--p--/session-a/session\\.jsonl: ${reason}: [^\\n]+; the file is as it was\\n`,
        ),
      )
      expect(readFileSync(join(home, 'storages', 'session_projcache.json'), 'utf8')).toBe('{}')
      expect(readFileSync(log).equals(original)).toBe(true)
    }
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
      // Its pid check: a lock whose process runs keeps it out; one whose process is gone is taken over.
      const home = tempDir('loop-bin-')
      mkdirSync(join(home, 'sessions'))
      for (const [pid, code] of [
        [process.pid, 3],
        [2 ** 22 + 5, 0],
      ] as const) {
        writeFileSync(
          join(home, 'loop-release.lock'),
          JSON.stringify({ pid, host: hostname(), startedAt: 'then', mode: 'removal' }),
        )
        vi.resetModules()
        process.argv = ['node', 'dsh-plugin-loop', 'release', '--home', home]
        await import('../../src/release/bin.ts')
        expect(process.exitCode).toBe(code)
      }
      expect(readdirSync(home)).toEqual(['sessions'])
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

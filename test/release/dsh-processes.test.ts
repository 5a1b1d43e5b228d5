/** Looking for a DSH on the home before a release writes (SPEC.md §13 "Leaving loop"). */
import { spawn } from 'node:child_process'
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  dshHomeOf,
  dshProcessesOn,
  createDshLookout,
  isDshCommand,
  mayWrite,
  parsePsList,
  psEnvironment,
  SYSTEM_PROCESSES,
  type ProcessEntry,
  type ProcessSource,
} from '../../src/release/dsh-processes.ts'
import { tempDir } from '../../harness/temp-dir.ts'

const BIN = '/usr/lib/node_modules/.pnpm/@deepseek-ai+dsh@0.1.0-rc.8/node_modules/@deepseek-ai/dsh/lib/bin.js'

describe('isDshCommand', () => {
  it('knows DSH by its entry or its launcher, in any mode', () => {
    expect(isDshCommand(['node', BIN, 'web'])).toBe(true)
    expect(isDshCommand(['/usr/bin/node', 'C:\\x\\@deepseek-ai\\dsh\\lib\\bin.js'])).toBe(true)
    expect(isDshCommand(['/usr/local/bin/dsh', '--profile', 'headless'])).toBe(true)
    expect(isDshCommand(['node', '/usr/local/bin/dsh'])).toBe(true)
    expect(isDshCommand(['node', '/x/dsh-plugin-loop/lib/cli.js', 'release'])).toBe(false)
    expect(isDshCommand(['vim', 'dsh.txt'])).toBe(false)
    expect(isDshCommand([])).toBe(false)
  })

  it('finds the entry after Node options, and never takes a file named dsh for DSH', () => {
    expect(isDshCommand(['node', '--max-old-space-size=512', BIN, 'web'])).toBe(true)
    expect(isDshCommand(['/opt/node22/bin/node22', '--enable-source-maps', '-r', './preload.cjs', BIN])).toBe(true)
    expect(isDshCommand(['node.exe', '--import', 'tsx', '--', BIN])).toBe(true)
    expect(isDshCommand(['nodejs', '--title', 'dsh', '/usr/local/bin/dsh', 'web'])).toBe(true)
    // The launcher script, as the kernel runs it (pnpm's shim is a shell script).
    expect(isDshCommand(['/bin/sh', '/home/u/.local/share/pnpm/dsh', 'web'])).toBe(true)
    expect(isDshCommand(['tail', 'dsh', '-f'])).toBe(false)
    expect(isDshCommand(['less', '/x/@deepseek-ai/dsh/lib/bin.js'])).toBe(false)
    expect(isDshCommand(['node', '-e', 'require("x")', BIN])).toBe(false)
    expect(isDshCommand(['node', '--print', '1'])).toBe(false)
    expect(isDshCommand(['node', '--inspect'])).toBe(false)
    expect(isDshCommand(['node', '-', BIN])).toBe(false)
    expect(isDshCommand(['node', '--'])).toBe(false)
  })
})

describe('mayWrite', () => {
  const folder = { uid: 1000, gid: 100, mode: 0o40755 }
  it('reads the permission bits as the system does, root writing everywhere', () => {
    expect(mayWrite({ uid: 0, gids: [0] }, folder)).toBe(true)
    expect(mayWrite({ uid: 1000, gids: [5] }, folder)).toBe(true)
    expect(mayWrite({ uid: 1000 }, { ...folder, mode: 0o40555 })).toBe(false)
    expect(mayWrite({ uid: 1001, gids: [100] }, folder)).toBe(false)
    expect(mayWrite({ uid: 1001, gids: [100] }, { ...folder, mode: 0o40775 })).toBe(true)
    // Groups unknown (macOS): a group-writable folder may be theirs.
    expect(mayWrite({ uid: 1001 }, { ...folder, mode: 0o40775 })).toBe(true)
    expect(mayWrite({ uid: 1001, gids: [7] }, { ...folder, mode: 0o40775 })).toBe(false)
    expect(mayWrite({ uid: 1001, gids: [7] }, { ...folder, mode: 0o40777 })).toBe(true)
  })
})

describe('dshHomeOf', () => {
  it('names the home as DSH does: DSH_HOME unless blank, ~ expanded, relative to the folder; else ~/.dsh', () => {
    expect(dshHomeOf({ HOME: '/u' }, '/w', '/fallback')).toBe('/u/.dsh')
    expect(dshHomeOf({}, '/w', '/fallback')).toBe('/fallback/.dsh')
    expect(dshHomeOf({ HOME: '/u', DSH_HOME: ' ' }, '/w', '/fallback')).toBe('/u/.dsh')
    expect(dshHomeOf({ HOME: '/u', DSH_HOME: '~' }, '/w', '/fallback')).toBe('/u')
    expect(dshHomeOf({ HOME: '/u', DSH_HOME: '~/h/' }, '/w', '/fallback')).toBe('/u/h')
    expect(dshHomeOf({ DSH_HOME: '/h/../g' }, undefined, '/fallback')).toBe('/g')
    expect(dshHomeOf({ DSH_HOME: 'h' }, '/w', '/fallback')).toBe('/w/h')
    expect(dshHomeOf({ DSH_HOME: 'h' }, undefined, '/fallback')).toBeUndefined()
  })
})

describe('dshProcessesOn', () => {
  const processes: ProcessEntry[] = [
    { pid: 1, ppid: 0, argv: ['init'] },
    { pid: 10, ppid: 1, argv: ['node', BIN, 'web'] },
    { pid: 11, ppid: 1, argv: ['node', BIN, 'web'] },
    { pid: 12, ppid: 1, argv: ['dsh'] },
    // `dsh plugin --profile web exec dsh-plugin-loop release`: the release's ancestors wait for it.
    { pid: 20, ppid: 1, argv: ['node', BIN, 'plugin', '--profile', 'web', 'exec', 'dsh-plugin-loop', 'release'] },
    { pid: 21, ppid: 20, argv: ['pnpm', 'exec', 'dsh-plugin-loop', 'release'] },
    { pid: 22, ppid: 21, argv: ['node', 'cli.js', 'release'] },
    // Other users' DSH processes, whose homes cannot be read: root's may write any folder, uid 1001 not this one.
    { pid: 30, ppid: 1, argv: ['node', BIN, 'web'], user: { uid: 0, gids: [0] } },
    { pid: 31, ppid: 1, argv: ['node', BIN, 'web'], user: { uid: 1001, gids: [1001] } },
  ]
  const homes: Record<number, string | undefined> = { 10: '/home', 11: '/other', 12: undefined, 20: '/home' }
  const sessions = { uid: 1000, gid: 1000, mode: 0o40755 }

  it('names every DSH process on the home or of a home it cannot read, but itself and its ancestors', () => {
    expect(dshProcessesOn('/home', processes, 22, (entry) => homes[entry.pid], sessions)).toEqual([
      { pid: 10, command: `node ${BIN} web`, home: '/home' },
      { pid: 12, command: 'dsh' },
      { pid: 30, command: `node ${BIN} web` },
    ])
    // The same `dsh plugin exec` not among the release's ancestors is a DSH on the home.
    expect(dshProcessesOn('/home', processes, 1, (entry) => homes[entry.pid], sessions).map((dsh) => dsh.pid)).toEqual([
      10, 12, 20, 30,
    ])
    // A sessions folder uid 1001 may write: its DSH may be on this home.
    expect(
      dshProcessesOn('/home', processes, 22, (entry) => homes[entry.pid], { ...sessions, mode: 0o40777 }).map(
        (dsh) => dsh.pid,
      ),
    ).toEqual([10, 12, 30, 31])
  })
})

describe('the ps listing of macOS', () => {
  it('reads pid, parent and command line, and the homes `ps -E` shows', () => {
    expect(parsePsList(`  501     1   501 /usr/local/bin/node ${BIN} web\n  7 501 0 ps -axww\nbad line\n`)).toEqual([
      { pid: 501, ppid: 1, user: { uid: 501 }, argv: ['/usr/local/bin/node', BIN, 'web'] },
      { pid: 7, ppid: 501, user: { uid: 0 }, argv: ['ps', '-axww'] },
    ])
    expect(psEnvironment(`node ${BIN} web TERM=xterm DSH_HOME=/Users/a/h HOME=/Users/a`)).toEqual({
      DSH_HOME: '/Users/a/h',
      HOME: '/Users/a',
    })
    expect(psEnvironment('node bin.js web XDSH_HOME=/x')).toEqual({})
  })
})

/** A `/proc` of the test's making. */
function fakeProc(entries: FakeProcess[], proc = tempDir('loop-proc-')): string {
  mkdirSync(join(proc, 'self'), { recursive: true })
  for (const { pid, ppid, argv, env, cwd, retitled, status } of entries) {
    const folder = join(proc, String(pid))
    mkdirSync(folder)
    writeFileSync(join(folder, 'stat'), `${pid} (a) b) S ${ppid} 1 1 0`)
    // A process that rewrote its title has no NUL at the end.
    writeFileSync(join(folder, 'cmdline'), `${argv.join('\0')}${retitled === true ? '' : '\0'}`)
    if (env !== undefined) writeFileSync(join(folder, 'environ'), `${env.join('\0')}\0`)
    if (cwd !== undefined) symlinkSync(cwd, join(folder, 'cwd'))
    if (status !== undefined) writeFileSync(join(folder, 'status'), status)
  }
  return proc
}

/** One process of a fake `/proc`. */
interface FakeProcess {
  pid: number
  ppid: number
  argv: string[]
  env?: string[]
  cwd?: string
  retitled?: boolean
  status?: string
}

describe('createDshLookout', () => {
  const home = tempDir('loop-dsh-home-')
  mkdirSync(join(home, 'sessions'), { mode: 0o755 })
  const run: ProcessSource['run'] = async () => {
    throw new Error('not on this platform')
  }

  it('on Linux reads /proc: command line, parent, environment and folder', async () => {
    const proc = fakeProc([
      { pid: 10, ppid: 1, argv: ['node', BIN, 'web'], env: [`DSH_HOME=${home}`, 'NOT_A_PAIR'] },
      { pid: 11, ppid: 1, argv: ['node', BIN, 'web'], env: ['DSH_HOME=.'], cwd: home },
      { pid: 12, ppid: 1, argv: ['node', BIN, 'web'], env: ['DSH_HOME=/elsewhere'] },
      { pid: 13, ppid: 1, argv: ['dsh', 'web'] },
      { pid: 14, ppid: 1, argv: ['node', BIN], env: ['DSH_HOME=rel'] },
      { pid: 15, ppid: 1, argv: ['sleep', '9'] },
      { pid: 16, ppid: 1, argv: ['dsh: web'], retitled: true },
      // Another user's DSH, its environment unreadable: uid 4001 may not write this home's sessions; root may.
      {
        pid: 17,
        ppid: 1,
        argv: ['node', BIN, 'web'],
        status: 'Name:\tnode\nUid:\t4001\t4001\t4001\t4001\nGid:\t4001\t4001\t4001\t4001\nGroups:\t4001 27 \n',
      },
      { pid: 18, ppid: 1, argv: ['node', BIN, 'web'], status: 'Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\n' },
      { pid: 19, ppid: 1, argv: ['node', BIN, 'web'], status: 'Uid:\t4001\n' },
      { pid: 21, ppid: 1, argv: ['node', BIN, 'web'], status: 'Uid:\t4001\t4001\nGid:\t4001\t4001\n' },
    ])
    // Processes that ended while they were read: one gone whole, one gone after its stat.
    mkdirSync(join(proc, '90'))
    mkdirSync(join(proc, '91'))
    writeFileSync(join(proc, '91', 'stat'), '91 (node) S 1 1 1 0')
    const look = createDshLookout({ platform: 'linux', proc, run, self: 15 })
    expect(await look(home)).toEqual({
      kind: 'looked',
      running: [
        { pid: 10, command: `node ${BIN} web`, home },
        { pid: 11, command: `node ${BIN} web`, home },
        { pid: 13, command: 'dsh web' },
        { pid: 14, command: `node ${BIN}` },
        { pid: 18, command: `node ${BIN} web` },
        { pid: 19, command: `node ${BIN} web` },
      ],
    })
    // A home without a sessions folder (refused before a look matters) is one anyone may write.
    expect(await look(tempDir('loop-dsh-bare-'))).toMatchObject({
      running: [13, 14, 17, 18, 19, 21].map((pid) => ({ pid })),
    })
    // Looked again: a DSH started since is found, one that ended is gone.
    rmSync(join(proc, '10'), { recursive: true })
    rmSync(join(proc, '15'), { recursive: true })
    fakeProc(
      [{ pid: 20, ppid: 1, argv: ['node', '--max-old-space-size=512', BIN, 'web'], env: [`DSH_HOME=${home}`] }],
      proc,
    )
    expect(await look(home)).toMatchObject({
      running: [11, 13, 14, 18, 19, 20].map((pid) => ({ pid })),
    })
  })

  it('on macOS asks ps', async () => {
    const calls: string[] = []
    const ps: ProcessSource['run'] = async (_file, args) => {
      calls.push(args.join(' '))
      if (args[0] === '-axww')
        return `10 1 501 node ${BIN} web\n11 1 501 node ${BIN} web\n12 1 0 node ${BIN} web\n13 1 501 zsh\n`
      if (args.at(-1) === '10') return `node ${BIN} web DSH_HOME=${home} HOME=/Users/a`
      if (args.at(-1) === '11') return `node ${BIN} web`
      throw new Error('no such process')
    }
    expect(await createDshLookout({ platform: 'darwin', proc: '/nonexistent', run: ps, self: 13 })(home)).toEqual({
      kind: 'looked',
      running: [
        { pid: 10, command: `node ${BIN} web`, home },
        // 11 shows no environment, and uid 501 may not write this home's sessions (root's): not on this home.
        { pid: 12, command: `node ${BIN} web` },
      ],
    })
    expect(calls).toEqual([
      '-axww -o pid=,ppid=,uid=,command=',
      '-E -ww -o command= -p 10',
      '-E -ww -o command= -p 11',
      '-E -ww -o command= -p 12',
    ])
  })

  it('runs ps as a command, with its output or its failure', async () => {
    expect(await SYSTEM_PROCESSES.run('echo', ['-n', 'a b'])).toBe('a b')
    await expect(SYSTEM_PROCESSES.run('false', [])).rejects.toThrow(/Command failed: false/)
  })

  it('says when the system gives no way to look', async () => {
    expect(await createDshLookout({ platform: 'win32', proc: '/proc', run, self: 1 })(home)).toEqual({
      kind: 'cannot-look',
      why: 'the release cannot list the processes of win32',
    })
    expect(await createDshLookout({ platform: 'linux', proc: '/nonexistent/proc', run, self: 1 })(home)).toEqual({
      kind: 'cannot-look',
      why: expect.stringMatching(/^the process list could not be read \(ENOENT: /),
    })
  })

  it('finds a real DSH process on this system by its entry and DSH_HOME, and not one on another home', async () => {
    // A process that runs a file named as DSH's entry, as `dsh web` does; it only waits.
    const entry = join(tempDir('loop-fake-dsh-'), 'node_modules', '@deepseek-ai', 'dsh', 'lib', 'bin.js')
    mkdirSync(join(entry, '..'), { recursive: true })
    writeFileSync(entry, 'setTimeout(() => {}, 60_000)\n')
    const other = tempDir('loop-dsh-other-')
    const children = [home, other].map((dshHome) =>
      spawn(process.execPath, [entry, 'web'], { env: { DSH_HOME: dshHome, HOME: homedir() }, stdio: 'ignore' }),
    )
    try {
      await new Promise((resolve) => setTimeout(resolve, 200))
      const look = await createDshLookout()(home)
      expect(look).toEqual({
        kind: 'looked',
        running: [{ pid: children[0]!.pid, command: `${process.execPath} ${entry} web`, home }],
      })
    } finally {
      for (const child of children) child.kill()
    }
  })
})

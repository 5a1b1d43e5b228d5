/** Looking for a DSH on the home before a release writes (SPEC.md §13 "Leaving loop"). */
import { spawn } from 'node:child_process'
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  dshHomeOf,
  dshProcessesOn,
  isDshCommand,
  lookForDsh,
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
  ]
  const homes: Record<number, string | undefined> = { 10: '/home', 11: '/other', 12: undefined, 20: '/home' }

  it('names every DSH process on the home or of a home it cannot read, but itself and its ancestors', () => {
    expect(dshProcessesOn('/home', processes, 22, (entry) => homes[entry.pid])).toEqual([
      { pid: 10, command: `node ${BIN} web`, home: '/home' },
      { pid: 12, command: 'dsh' },
    ])
    // The same `dsh plugin exec` not among the release's ancestors is a DSH on the home.
    expect(dshProcessesOn('/home', processes, 1, (entry) => homes[entry.pid]).map((dsh) => dsh.pid)).toEqual([
      10, 12, 20,
    ])
  })
})

describe('the ps listing of macOS', () => {
  it('reads pid, parent and command line, and the homes `ps -E` shows', () => {
    expect(parsePsList(`  501     1 /usr/local/bin/node ${BIN} web\n  7 501 ps -axww\nbad line\n`)).toEqual([
      { pid: 501, ppid: 1, argv: ['/usr/local/bin/node', BIN, 'web'] },
      { pid: 7, ppid: 501, argv: ['ps', '-axww'] },
    ])
    expect(psEnvironment(`node ${BIN} web TERM=xterm DSH_HOME=/Users/a/h HOME=/Users/a`)).toEqual({
      DSH_HOME: '/Users/a/h',
      HOME: '/Users/a',
    })
    expect(psEnvironment('node bin.js web XDSH_HOME=/x')).toEqual({})
  })
})

/** A `/proc` of the test's making. */
function fakeProc(
  entries: { pid: number; ppid: number; argv: string[]; env?: string[]; cwd?: string; retitled?: boolean }[],
): string {
  const proc = tempDir('loop-proc-')
  mkdirSync(join(proc, 'self'))
  for (const { pid, ppid, argv, env, cwd, retitled } of entries) {
    const folder = join(proc, String(pid))
    mkdirSync(folder)
    writeFileSync(join(folder, 'stat'), `${pid} (a) b) S ${ppid} 1 1 0`)
    // A process that rewrote its title has no NUL at the end.
    writeFileSync(join(folder, 'cmdline'), `${argv.join('\0')}${retitled === true ? '' : '\0'}`)
    if (env !== undefined) writeFileSync(join(folder, 'environ'), `${env.join('\0')}\0`)
    if (cwd !== undefined) symlinkSync(cwd, join(folder, 'cwd'))
  }
  return proc
}

describe('lookForDsh', () => {
  const home = tempDir('loop-dsh-home-')
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
    ])
    expect(await lookForDsh(home, { platform: 'linux', proc, run, self: 15 })).toEqual({
      kind: 'looked',
      running: [
        { pid: 10, command: `node ${BIN} web`, home },
        { pid: 11, command: `node ${BIN} web`, home },
        { pid: 13, command: 'dsh web' },
        { pid: 14, command: `node ${BIN}` },
      ],
    })
  })

  it('on macOS asks ps', async () => {
    const calls: string[] = []
    const ps: ProcessSource['run'] = async (_file, args) => {
      calls.push(args.join(' '))
      if (args[0] === '-axww') return `10 1 node ${BIN} web\n11 1 node ${BIN} web\n12 1 node ${BIN} web\n13 1 zsh\n`
      if (args.at(-1) === '10') return `node ${BIN} web DSH_HOME=${home} HOME=/Users/a`
      if (args.at(-1) === '11') return `node ${BIN} web`
      throw new Error('no such process')
    }
    expect(await lookForDsh(home, { platform: 'darwin', proc: '/nonexistent', run: ps, self: 13 })).toEqual({
      kind: 'looked',
      running: [
        { pid: 10, command: `node ${BIN} web`, home },
        { pid: 11, command: `node ${BIN} web` },
        { pid: 12, command: `node ${BIN} web` },
      ],
    })
    expect(calls).toEqual([
      '-axww -o pid=,ppid=,command=',
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
    expect(await lookForDsh(home, { platform: 'win32', proc: '/proc', run, self: 1 })).toEqual({
      kind: 'cannot-look',
      why: 'the release cannot list the processes of win32',
    })
    expect(await lookForDsh(home, { platform: 'linux', proc: '/nonexistent/proc', run, self: 1 })).toEqual({
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
      const look = await lookForDsh(home)
      expect(look).toEqual({
        kind: 'looked',
        running: [{ pid: children[0]!.pid, command: `${process.execPath} ${entry} web`, home }],
      })
    } finally {
      for (const child of children) child.kill()
    }
  })
})

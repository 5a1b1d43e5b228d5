/** Looking for a DSH on the home before a release writes (SPEC.md §13 "Leaving loop"). */
import { spawn } from 'node:child_process'
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  dshHomeOf,
  dshProcessesOn,
  isDshCommand,
  mayWrite,
  parsePsList,
  psEnvironment,
  type ArgumentFile,
  type ProcessEntry,
} from '../../src/release/dsh-processes.ts'
import { createDshLookout, SYSTEM_PROCESSES, type ProcessSource } from '../../src/release/process-table.ts'
import { tempDir } from '../../harness/temp-dir.ts'

const BIN = '/usr/lib/node_modules/.pnpm/@deepseek-ai+dsh@0.1.0-rc.8/node_modules/@deepseek-ai/dsh/lib/bin.js'

/**
 * A machine's files as a process sees them: a link to DSH's entry under another name, the
 * entry reached through `..` or from its own folder, pnpm's launcher script; anything else is
 * the path as given.
 */
function resolvedOn(cwd: string): (argument: string) => ArgumentFile {
  const links: Record<string, string> = {
    '/usr/local/bin/dsh': BIN,
    '/opt/bin/run-agent': BIN,
    [BIN.replace('/lib/bin.js', '/lib/../lib/bin.js')]: BIN,
  }
  return (argument) => {
    const path = argument.startsWith('/') ? argument : `${cwd}/${argument.replace(/^\.\//, '')}`
    if (path === '/home/u/.local/share/pnpm/dsh')
      return { path, head: `#!/bin/sh\nexec node "$basedir/../@deepseek-ai/dsh/lib/bin.js" "$@"\n` }
    if (path === '/w/dsh') return { path, head: 'notes about dsh\n' }
    return { path: links[path] ?? path }
  }
}

describe('isDshCommand', () => {
  const at = resolvedOn('/w')
  it('knows DSH by an argument that resolves to its entry or launcher, whatever comes before it', () => {
    expect(isDshCommand(['node', BIN, 'web'], at)).toBe(true)
    expect(isDshCommand(['/usr/bin/node', 'C:\\x\\@deepseek-ai\\dsh\\lib\\bin.js'], at)).toBe(true)
    expect(isDshCommand(['node', '/usr/local/bin/dsh', '--profile', 'headless'], at)).toBe(true)
    expect(isDshCommand(['node', '--unhandled-rejections', 'strict', BIN, 'web'], at)).toBe(true)
    expect(isDshCommand(['node', '--dns-result-order', 'ipv4first', BIN, 'web'], at)).toBe(true)
    expect(isDshCommand(['node', '--openssl-config', '/etc/ssl/x.cnf', BIN], at)).toBe(true)
    // `exec -a dsh-web node bin.js web`, a renamed link, a path through `..`, and `node ./bin.js` from DSH's lib folder.
    expect(isDshCommand(['dsh-web', BIN, 'web'], at)).toBe(true)
    expect(isDshCommand(['node', '/opt/bin/run-agent', 'web'], at)).toBe(true)
    expect(isDshCommand(['node', BIN.replace('/lib/bin.js', '/lib/../lib/bin.js'), 'web'], at)).toBe(true)
    expect(isDshCommand(['node', './bin.js', 'web'], resolvedOn(BIN.slice(0, -'/bin.js'.length)))).toBe(true)
    // The launcher script, as the kernel runs it (pnpm's shim is a shell script).
    expect(isDshCommand(['/bin/sh', '/home/u/.local/share/pnpm/dsh', 'web'], at)).toBe(true)
  })

  it('never takes a file merely named dsh, an option, or another program for DSH', () => {
    expect(isDshCommand(['tail', 'dsh', '-f'], at)).toBe(false)
    expect(isDshCommand(['dsh', 'web'], resolvedOn('/elsewhere'))).toBe(false)
    expect(isDshCommand(['node', '/x/dsh-plugin-loop/lib/cli.js', 'release'], at)).toBe(false)
    expect(isDshCommand(['node', `--require=${BIN}`, '-', ''], at)).toBe(false)
    expect(isDshCommand(['vim', 'dsh.txt'], at)).toBe(false)
    expect(isDshCommand([], at)).toBe(false)
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
  const dsh = (pid: number, ppid: number, argv: string[], user?: ProcessEntry['user']) => ({
    pid,
    ppid,
    argv,
    dsh: true,
    ...(user === undefined ? {} : { user }),
  })
  const other = (pid: number, ppid: number, argv: string[]) => ({ pid, ppid, argv, dsh: false })
  const processes = [
    other(1, 0, ['init']),
    dsh(10, 1, ['node', BIN, 'web']),
    dsh(11, 1, ['node', BIN, 'web']),
    dsh(12, 1, ['node', '/usr/local/bin/dsh']),
    // `dsh plugin --profile web exec dsh-plugin-loop release`: the release's ancestor waits for it.
    dsh(20, 1, ['node', BIN, 'plugin', '--profile', 'web', 'exec', 'dsh-plugin-loop', 'release']),
    other(21, 20, ['pnpm', 'exec', 'dsh-plugin-loop', 'release']),
    other(22, 21, ['node', 'cli.js', 'release']),
    // Other users' DSH processes, whose homes cannot be read: root's may write any folder, uid 1001 not this one.
    dsh(30, 1, ['node', BIN, 'web'], { uid: 0, gids: [0] }),
    dsh(31, 1, ['node', BIN, 'web'], { uid: 1001, gids: [1001] }),
    // The agent of a `dsh web` on this home ran the release with its bash tool, and will log its result.
    dsh(40, 1, ['node', BIN, 'web']),
    other(41, 40, ['/bin/bash', '-c', 'dsh-plugin-loop release --for-upgrade']),
    other(42, 41, ['node', 'cli.js', 'release', '--for-upgrade']),
    // …or ran `dsh plugin exec`, which ran the release.
    other(43, 40, ['/bin/bash', '-c', 'dsh plugin --profile web exec dsh-plugin-loop release']),
    dsh(44, 43, ['node', BIN, 'plugin', '--profile', 'web', 'exec', 'dsh-plugin-loop', 'release']),
    other(45, 44, ['node', 'cli.js', 'release']),
  ]
  const homes: Record<number, string | undefined> = {
    10: '/home',
    11: '/other',
    12: undefined,
    20: '/home',
    40: '/home',
    44: '/home',
  }
  const sessions = { uid: 1000, gid: 1000, mode: 0o40755 }
  const on = (self: number, folder = sessions) =>
    dshProcessesOn('/home', processes, self, (entry) => homes[entry.pid], folder)

  it('names every DSH process on the home or of a home it cannot read, but the dsh plugin exec that runs it', () => {
    expect(on(22)).toEqual([
      { pid: 10, command: `node ${BIN} web`, home: '/home' },
      { pid: 12, command: 'node /usr/local/bin/dsh' },
      { pid: 30, command: `node ${BIN} web` },
      { pid: 40, command: `node ${BIN} web`, home: '/home' },
      { pid: 44, command: `node ${BIN} plugin --profile web exec dsh-plugin-loop release`, home: '/home' },
    ])
    // The same `dsh plugin exec` not among the release's ancestors is a DSH on the home.
    expect(on(1).map((found) => found.pid)).toEqual([10, 12, 20, 30, 40, 44])
    // A sessions folder uid 1001 may write: its DSH may be on this home.
    expect(on(22, { ...sessions, mode: 0o40777 }).map((found) => found.pid)).toEqual([10, 12, 30, 31, 40, 44])
  })

  it('counts a DSH that started the release, directly or through dsh plugin exec, and says so', () => {
    for (const self of [42, 45])
      expect(on(self).filter((found) => found.startedRelease === true)).toEqual([
        { pid: 40, command: `node ${BIN} web`, home: '/home', startedRelease: true },
      ])
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
    // An install: DSH's entry, a link to it named dsh, pnpm's launcher script, and notes in a file named dsh.
    const install = tempDir('loop-dsh-install-')
    const lib = join(install, 'node_modules', '@deepseek-ai', 'dsh', 'lib')
    for (const folder of [lib, join(install, 'bin'), join(install, 'shim'), join(install, 'notes')])
      mkdirSync(folder, { recursive: true })
    writeFileSync(join(lib, 'bin.js'), '')
    symlinkSync(join(lib, 'bin.js'), join(install, 'bin', 'dsh'))
    writeFileSync(join(install, 'shim', 'dsh'), `#!/bin/sh\nexec node "$basedir/../@deepseek-ai/dsh/lib/bin.js" "$@"\n`)
    writeFileSync(join(install, 'notes', 'dsh'), 'notes\n')
    const proc = fakeProc([
      { pid: 10, ppid: 1, argv: ['node', BIN, 'web'], env: [`DSH_HOME=${home}`, 'NOT_A_PAIR'] },
      { pid: 11, ppid: 1, argv: ['node', BIN, 'web'], env: ['DSH_HOME=.'], cwd: home },
      { pid: 12, ppid: 1, argv: ['node', BIN, 'web'], env: ['DSH_HOME=/elsewhere'] },
      { pid: 13, ppid: 1, argv: ['node', join(install, 'bin', 'dsh'), 'web'] },
      { pid: 14, ppid: 1, argv: ['node', BIN], env: ['DSH_HOME=rel'] },
      { pid: 22, ppid: 1, argv: ['node', './bin.js', 'web'], env: [`DSH_HOME=${home}`], cwd: lib },
      { pid: 23, ppid: 1, argv: ['/bin/sh', join(install, 'shim', 'dsh'), 'web'], env: [`DSH_HOME=${home}`] },
      { pid: 24, ppid: 1, argv: ['tail', 'dsh', '-f'], cwd: join(install, 'notes') },
      { pid: 25, ppid: 1, argv: ['node', join(install, 'gone', 'dsh')] },
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
        { pid: 13, command: `node ${join(install, 'bin', 'dsh')} web` },
        { pid: 14, command: `node ${BIN}` },
        { pid: 18, command: `node ${BIN} web` },
        { pid: 19, command: `node ${BIN} web` },
        { pid: 22, command: 'node ./bin.js web', home },
        { pid: 23, command: `/bin/sh ${join(install, 'shim', 'dsh')} web`, home },
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
      running: [11, 13, 14, 18, 19, 20, 22, 23].map((pid) => ({ pid })),
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

/**
 * This system's process table as the release reads it (SPEC.md §13 "Leaving loop"): `/proc` on Linux,
 * `ps` on macOS. What the processes mean (is it DSH, on which home, may it write) is
 * `dsh-processes.ts`'s.
 * @module dsh-plugin-loop/release/process-table
 */
import { execFile } from 'node:child_process'
import { closeSync, openSync, readFileSync, readSync, readdirSync, readlinkSync, realpathSync, statSync } from 'node:fs'
import { homedir } from 'node:os'
import { basename, isAbsolute, join, resolve } from 'node:path'
import {
  dshHomeOf,
  dshProcessesOn,
  isDshCommand,
  parsePsList,
  psEnvironment,
  type ArgumentFile,
  type DshLookout,
  type LookedProcess,
  type ProcessUser,
} from './dsh-processes.ts'

/** A path with its links resolved, or as it is when it does not exist. */
function realPathOf(path: string): string {
  try {
    return realpathSync(path)
  } catch {
    return path
  }
}

/** A file's content, or `undefined` when it cannot be read (a process that ended, or another user's). */
function readIfAllowed<T>(read: () => T): T | undefined {
  try {
    return read()
  } catch {
    return undefined
  }
}

/** NUL-separated fields, as `/proc/<pid>/cmdline` and `environ` hold them. */
function nulFields(bytes: Buffer): string[] {
  const fields = bytes.toString('utf8').split('\0')
  if (fields.at(-1) === '') fields.pop()
  return fields
}

/** `NAME=value` fields as an environment. */
function environmentOf(fields: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {}
  for (const field of fields) {
    const equals = field.indexOf('=')
    if (equals > 0) env[field.slice(0, equals)] = field.slice(equals + 1)
  }
  return env
}

/** A `/proc/<pid>/status` line's numbers: `Uid:` real, effective, …; `Groups:` every one. */
function statusNumbers(status: string, field: string): number[] | undefined {
  const line = status.split('\n').find((candidate) => candidate.startsWith(`${field}:`))
  return line
    ?.slice(field.length + 1)
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    .map(Number)
}

/** A DSH process's user from `/proc/<pid>/status`: effective uid, and its groups. */
function userOf(status: string): ProcessUser | undefined {
  const uid = statusNumbers(status, 'Uid')?.[1]
  const gid = statusNumbers(status, 'Gid')?.[1]
  if (uid === undefined || gid === undefined) return undefined
  return { uid, gids: [gid, ...(statusNumbers(status, 'Groups') ?? [])] }
}

/** How much of a file named `dsh` is read to tell a launcher script. */
const LAUNCHER_HEAD_BYTES = 4096

/**
 * What an argument names on this machine: resolved against the process's folder (when it is
 * known), through links; as given where it cannot be resolved.
 * @param argument - the argument.
 * @param cwd - the process's working folder, read when first needed; `undefined` when hidden.
 */
function resolveOnThisMachine(argument: string, cwd: () => string | undefined): ArgumentFile {
  const folder = isAbsolute(argument) ? '/' : cwd()
  if (folder === undefined) return { path: argument }
  const path = resolve(folder, argument)
  const real = readIfAllowed(() => realpathSync(path)) ?? path
  if (basename(real) !== 'dsh') return { path: real }
  const head = readIfAllowed(() => {
    const bytes = Buffer.alloc(LAUNCHER_HEAD_BYTES)
    const handle = openSync(real, 'r')
    try {
      return bytes.toString('latin1', 0, readSync(handle, bytes, 0, LAUNCHER_HEAD_BYTES, 0))
    } finally {
      closeSync(handle)
    }
  })
  return head === undefined ? { path: real } : { path: real, head }
}

/**
 * Linux: every process of `/proc`; a DSH process's environment, folder and user where the
 * system shows them. `/proc` is the kernel's, in memory: it is read synchronously, a look
 * before every replaced log costing a fraction of a millisecond. A process already read (by its
 * pid) is not read again: most processes outlive the run.
 */
function linuxProcesses(proc: string, known: Map<number, LookedProcess>): LookedProcess[] {
  const entries: LookedProcess[] = []
  const live = new Set<number>()
  for (const name of readdirSync(proc)) {
    if (!/^\d+$/.test(name)) continue
    const pid = Number(name)
    live.add(pid)
    const seen = known.get(pid)
    if (seen !== undefined) {
      entries.push(seen)
      continue
    }
    const folder = join(proc, name)
    const stat = readIfAllowed(() => readFileSync(join(folder, 'stat'), 'latin1'))
    const cmdline = readIfAllowed(() => readFileSync(join(folder, 'cmdline')))
    // The process ended while it was read.
    if (stat === undefined || cmdline === undefined) continue
    // After the command name in parentheses (which may hold anything): state, then ppid.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
    const argv = nulFields(cmdline)
    let cwd: string | undefined | null = null
    const cwdOnce = () => (cwd === null ? (cwd = readIfAllowed(() => readlinkSync(join(folder, 'cwd')))) : cwd)
    const entry: LookedProcess = isDshCommand(argv, (argument) => resolveOnThisMachine(argument, cwdOnce))
      ? dshEntry(folder, pid, ppid, argv, cwdOnce())
      : { pid, ppid, argv, dsh: false }
    known.set(pid, entry)
    entries.push(entry)
  }
  for (const pid of known.keys()) if (!live.has(pid)) known.delete(pid)
  return entries
}

/** A DSH process of `/proc`, with its environment, folder and user where the system shows them. */
function dshEntry(folder: string, pid: number, ppid: number, argv: string[], cwd: string | undefined): LookedProcess {
  const env = readIfAllowed(() => environmentOf(nulFields(readFileSync(join(folder, 'environ')))))
  const status = readIfAllowed(() => readFileSync(join(folder, 'status'), 'latin1'))
  const user = status === undefined ? undefined : userOf(status)
  return {
    pid,
    ppid,
    argv,
    dsh: true,
    ...(env === undefined ? {} : { env }),
    ...(cwd === undefined ? {} : { cwd }),
    ...(user === undefined ? {} : { user }),
  }
}

/** Run a command and return its standard output. */
type RunCommand = (file: string, args: readonly string[]) => Promise<string>

const runCommand: RunCommand = (file, args) =>
  new Promise((done, fail) =>
    execFile(file, [...args], { maxBuffer: 64 << 20 }, (error, stdout) => (error ? fail(error) : done(stdout))),
  )

/**
 * macOS: every process from `ps`, and each DSH process's environment from `ps -E`. `ps` shows
 * no working folder: an absolute argument is resolved, a relative one read as it is.
 */
async function macProcesses(run: RunCommand): Promise<LookedProcess[]> {
  const entries = parsePsList(await run('ps', ['-axww', '-o', 'pid=,ppid=,uid=,command=']))
  return Promise.all(
    entries.map(async (entry) => {
      if (!isDshCommand(entry.argv, (argument) => resolveOnThisMachine(argument, () => undefined)))
        return { ...entry, dsh: false }
      const line = await run('ps', ['-E', '-ww', '-o', 'command=', '-p', String(entry.pid)]).catch(() => undefined)
      // Without HOME, ps showed no environment (another user's process): the home is unknown.
      const env = line === undefined ? undefined : psEnvironment(line)
      return env === undefined || env['HOME'] === undefined ? { ...entry, dsh: true } : { ...entry, env, dsh: true }
    }),
  )
}

/** Where the release looks, for the tests: the platform, `/proc`, and how `ps` runs. */
export interface ProcessSource {
  readonly platform: NodeJS.Platform
  readonly proc: string
  readonly run: RunCommand
  readonly self: number
}

/** This system's processes, as the release reads them. */
export const SYSTEM_PROCESSES: ProcessSource = {
  platform: process.platform,
  proc: '/proc',
  run: runCommand,
  self: process.pid,
}

/**
 * Start looking for DSH processes: one lookout per run, which remembers the processes it read.
 * @param source - where to look.
 * @returns the lookout.
 */
export function createDshLookout(source: ProcessSource = SYSTEM_PROCESSES): DshLookout {
  const known = new Map<number, LookedProcess>()
  return async (home) => {
    let processes: LookedProcess[]
    try {
      if (source.platform === 'linux') processes = linuxProcesses(source.proc, known)
      else if (source.platform === 'darwin') processes = await macProcesses(source.run)
      else return { kind: 'cannot-look', why: `the release cannot list the processes of ${source.platform}` }
    } catch (error) {
      return { kind: 'cannot-look', why: `the process list could not be read (${(error as Error).message})` }
    }
    const realHome = realPathOf(home)
    const homes = new Map<number, string | undefined>()
    for (const entry of processes) {
      if (!entry.dsh || entry.env === undefined) continue
      const theirs = dshHomeOf(entry.env, entry.cwd, homedir())
      homes.set(entry.pid, theirs === undefined ? undefined : realPathOf(theirs))
    }
    // A home without a readable sessions folder is refused before a look matters; until then anyone may write it.
    const sessions = readIfAllowed(() => statSync(join(realHome, 'sessions'))) ?? { uid: -1, gid: -1, mode: 0o777 }
    return {
      kind: 'looked',
      running: dshProcessesOn(realHome, processes, source.self, (entry) => homes.get(entry.pid), sessions),
    }
  }
}

/**
 * Whether a DSH process runs on a home. rc.8 leaves no lock, pid file or open descriptor in
 * its home while it runs, so the release looks at processes: a command line that runs DSH,
 * and an environment that names the home (SPEC.md §13 "Leaving loop").
 * @module dsh-plugin-loop/release/dsh-processes
 */
import { execFile } from 'node:child_process'
import { readFile, readdir, readlink, realpath } from 'node:fs/promises'
import { homedir } from 'node:os'
import { basename, isAbsolute, join, resolve } from 'node:path'

/** A process as the release reads it; `env` and `cwd` are absent when the system would not show them. */
export interface ProcessEntry {
  readonly pid: number
  readonly ppid: number
  readonly argv: readonly string[]
  readonly env?: Readonly<Record<string, string>>
  readonly cwd?: string
}

/** A DSH process that may write the home: its home is absent when its environment could not be read. */
export interface DshProcess {
  readonly pid: number
  readonly command: string
  readonly home?: string
}

/** What looking for DSH found: the processes on this home, or why the system gave no way to look. */
export type DshLook =
  | { readonly kind: 'looked'; readonly running: readonly DshProcess[] }
  | { readonly kind: 'cannot-look'; readonly why: string }

/**
 * Whether a command line runs DSH: its entry `@deepseek-ai/dsh/lib/bin.js`, or the `dsh` launcher.
 * @param argv - the process's arguments, its program first.
 * @returns true for `dsh web`, the terminal UI, `dsh --profile headless` and `dsh plugin …` alike.
 */
export function isDshCommand(argv: readonly string[]): boolean {
  const runs = (arg: string | undefined) =>
    arg !== undefined && (arg.replaceAll('\\', '/').endsWith('@deepseek-ai/dsh/lib/bin.js') || basename(arg) === 'dsh')
  return runs(argv[0]) || runs(argv[1])
}

/**
 * The home a DSH with this environment uses, by DSH's own rule (`dsh-home-paths`): `DSH_HOME`
 * unless blank, `~` expanded, relative to the process's folder; else `~/.dsh`.
 * @param env - the process's environment.
 * @param cwd - its working folder, for a relative `DSH_HOME`.
 * @param fallbackHome - the user's home when `HOME` is not set (this process's own user).
 * @returns the home's path, or `undefined` when a relative `DSH_HOME` meets an unknown folder.
 */
export function dshHomeOf(
  env: Readonly<Record<string, string | undefined>>,
  cwd: string | undefined,
  fallbackHome: string,
): string | undefined {
  const userHome = env['HOME'] !== undefined && env['HOME'] !== '' ? env['HOME'] : fallbackHome
  const configured = env['DSH_HOME']
  if (configured === undefined || configured.trim() === '') return join(userHome, '.dsh')
  const expanded =
    configured === '~'
      ? userHome
      : configured.startsWith('~/') || configured.startsWith('~\\')
        ? join(userHome, configured.slice(2))
        : configured
  if (isAbsolute(expanded)) return resolve(expanded)
  return cwd === undefined ? undefined : resolve(cwd, expanded)
}

/**
 * The DSH processes that may write a home: every DSH process but this one and its ancestors
 * (`dsh plugin exec` runs the release as its child and waits), whose home is this one or
 * cannot be read.
 * @param home - the home, as a real path.
 * @param processes - every process of the system.
 * @param self - this process's pid.
 * @param realHomeOf - a DSH process's home as a real path, or `undefined` when it cannot be read.
 * @returns the processes that keep the release out.
 */
export function dshProcessesOn(
  home: string,
  processes: readonly ProcessEntry[],
  self: number,
  realHomeOf: (entry: ProcessEntry) => string | undefined,
): DshProcess[] {
  const byPid = new Map(processes.map((entry) => [entry.pid, entry]))
  const ancestors = new Set<number>()
  for (let pid: number | undefined = self; pid !== undefined && !ancestors.has(pid); pid = byPid.get(pid)?.ppid)
    ancestors.add(pid)
  const running: DshProcess[] = []
  for (const entry of processes) {
    if (ancestors.has(entry.pid) || !isDshCommand(entry.argv)) continue
    const command = entry.argv.join(' ')
    const theirs = realHomeOf(entry)
    if (theirs === undefined) running.push({ pid: entry.pid, command })
    else if (theirs === home) running.push({ pid: entry.pid, command, home: theirs })
  }
  return running
}

/** A path with its links resolved, or as it is when it does not exist. */
async function realPathOf(path: string): Promise<string> {
  return realpath(path).catch(() => path)
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

/** Linux: every process of `/proc`; a DSH process's environment and folder where the system shows them. */
async function linuxProcesses(proc: string): Promise<ProcessEntry[]> {
  const entries: ProcessEntry[] = []
  for (const name of await readdir(proc)) {
    if (!/^\d+$/.test(name)) continue
    const folder = join(proc, name)
    try {
      const stat = await readFile(join(folder, 'stat'), 'latin1')
      // After the command name in parentheses (which may hold anything): state, then ppid.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      const argv = nulFields(await readFile(join(folder, 'cmdline')))
      if (!isDshCommand(argv)) {
        entries.push({ pid: Number(name), ppid, argv })
        continue
      }
      const env = await readFile(join(folder, 'environ'))
        .then(nulFields)
        .then(environmentOf, () => undefined)
      const cwd = await readlink(join(folder, 'cwd')).catch(() => undefined)
      entries.push({
        pid: Number(name),
        ppid,
        argv,
        ...(env === undefined ? {} : { env }),
        ...(cwd === undefined ? {} : { cwd }),
      })
    } catch {
      // The process ended while it was read.
    }
  }
  return entries
}

/** macOS: `ps` lists every process; `ps -E` shows a process's environment after its command line. */
export function parsePsList(text: string): ProcessEntry[] {
  const entries: ProcessEntry[] = []
  for (const line of text.split('\n')) {
    const match = /^\s*(\d+)\s+(\d+)\s(.*)$/.exec(line)
    if (match !== null)
      entries.push({ pid: Number(match[1]), ppid: Number(match[2]), argv: match[3]!.trim().split(/\s+/) })
  }
  return entries
}

/**
 * The `DSH_HOME` and `HOME` a `ps -E` line shows after the command line (values without spaces;
 * a value with one is cut at it, and then names no home the release looks for).
 * @param line - `ps -E -o command=` of one process.
 * @returns the two variables, where present.
 */
export function psEnvironment(line: string): Record<string, string> {
  const env: Record<string, string> = {}
  for (const name of ['DSH_HOME', 'HOME']) {
    const match = new RegExp(`(?:^|\\s)${name}=(\\S*)`).exec(line)
    if (match !== null) env[name] = match[1]!
  }
  return env
}

/** Run a command and return its standard output. */
type RunCommand = (file: string, args: readonly string[]) => Promise<string>

const runCommand: RunCommand = (file, args) =>
  new Promise((done, fail) =>
    execFile(file, [...args], { maxBuffer: 64 << 20 }, (error, stdout) => (error ? fail(error) : done(stdout))),
  )

/** macOS: every process from `ps`, and each DSH process's environment from `ps -E`. */
async function macProcesses(run: RunCommand): Promise<ProcessEntry[]> {
  const entries = parsePsList(await run('ps', ['-axww', '-o', 'pid=,ppid=,command=']))
  return Promise.all(
    entries.map(async (entry) => {
      if (!isDshCommand(entry.argv)) return entry
      const line = await run('ps', ['-E', '-ww', '-o', 'command=', '-p', String(entry.pid)]).catch(() => undefined)
      // Without HOME, ps showed no environment (another user's process): the home is unknown.
      const env = line === undefined ? undefined : psEnvironment(line)
      return env === undefined || env['HOME'] === undefined ? entry : { ...entry, env }
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
 * Look for DSH processes on a home.
 * @param home - the home.
 * @param source - where to look.
 * @returns the DSH processes on it, or why there was no way to look.
 */
export async function lookForDsh(home: string, source: ProcessSource = SYSTEM_PROCESSES): Promise<DshLook> {
  let processes: ProcessEntry[]
  try {
    if (source.platform === 'linux') processes = await linuxProcesses(source.proc)
    else if (source.platform === 'darwin') processes = await macProcesses(source.run)
    else return { kind: 'cannot-look', why: `the release cannot list the processes of ${source.platform}` }
  } catch (error) {
    return { kind: 'cannot-look', why: `the process list could not be read (${(error as Error).message})` }
  }
  const realHome = await realPathOf(home)
  const homes = new Map<number, string | undefined>()
  for (const entry of processes) {
    if (!isDshCommand(entry.argv) || entry.env === undefined) continue
    const theirs = dshHomeOf(entry.env, entry.cwd, homedir())
    homes.set(entry.pid, theirs === undefined ? undefined : await realPathOf(theirs))
  }
  return { kind: 'looked', running: dshProcessesOn(realHome, processes, source.self, (entry) => homes.get(entry.pid)) }
}

/**
 * Whether a DSH process runs on a home. rc.8 leaves no lock, pid file or open descriptor in
 * its home while it runs, so the release looks at processes: a command line that runs DSH,
 * and an environment that names the home (SPEC.md §13 "Leaving loop"). Plain functions of what
 * `process-table.ts` read.
 * @module dsh-plugin-loop/release/dsh-processes
 */
import { basename, isAbsolute, join, resolve } from 'node:path'

/** A process as the release reads it; `env`, `cwd` and its user are absent when the system would not show them. */
export interface ProcessEntry {
  readonly pid: number
  readonly ppid: number
  readonly argv: readonly string[]
  readonly env?: Readonly<Record<string, string>>
  readonly cwd?: string
  readonly user?: ProcessUser
}

/** A process as a look found it: whether it runs DSH, decided once when it was first read. */
export type LookedProcess = ProcessEntry & { readonly dsh: boolean }

/** Who a process runs as: its effective user, and its groups when the system shows them. */
export interface ProcessUser {
  readonly uid: number
  readonly gids?: readonly number[]
}

/** A folder's owner and permission bits. */
export interface FolderAccess {
  readonly uid: number
  readonly gid: number
  readonly mode: number
}

/** A DSH process that may write the home: its home is absent when its environment could not be read. */
export interface DshProcess {
  readonly pid: number
  readonly command: string
  readonly home?: string
  /** It is among the release's ancestors: the release was started by it (its `bash` tool). */
  readonly startedRelease?: true
}

/** What looking for DSH found: the processes on this home, or why the system gave no way to look. */
export type DshLook =
  | { readonly kind: 'looked'; readonly running: readonly DshProcess[] }
  | { readonly kind: 'cannot-look'; readonly why: string }

/** DSH's entry, as every install lays it out. */
const DSH_ENTRY = '@deepseek-ai/dsh/lib/bin.js'

/**
 * What a command-line argument names on disk, as the process that holds it sees it: the real
 * path (relative to its working folder, through links), or the path as given where it cannot be
 * resolved (a file gone since, another user's folder); and, for a file named `dsh`, its first bytes.
 */
export interface ArgumentFile {
  readonly path: string
  readonly head?: string
}

/**
 * Whether a file is DSH: its entry (`lib/bin.js`, under any name that links to it), or a `dsh`
 * launcher script that runs it (pnpm's shim).
 * @param file - what an argument names.
 * @returns true for DSH's entry or launcher.
 */
function isDshFile(file: ArgumentFile): boolean {
  const slashed = file.path.replaceAll('\\', '/')
  return slashed.endsWith(`/${DSH_ENTRY}`) || (basename(slashed) === 'dsh' && file.head?.includes(DSH_ENTRY) === true)
}

/**
 * Whether a command line runs DSH: any of its arguments (options aside) names DSH's entry or
 * its launcher, once resolved as the process sees it. No table of Node's options: the entry is
 * found wherever it stands, and a file merely named `dsh` is not DSH.
 * @param argv - the process's arguments, its program first.
 * @param resolveArgument - what an argument names on disk.
 * @returns true for `dsh web`, `node --any-option value …/bin.js web`, a renamed link to
 *   `bin.js`, the terminal UI, `dsh --profile headless` and `dsh plugin …` alike; false for `tail dsh -f`.
 */
export function isDshCommand(argv: readonly string[], resolveArgument: (argument: string) => ArgumentFile): boolean {
  return argv.some((argument) => argument !== '' && !argument.startsWith('-') && isDshFile(resolveArgument(argument)))
}

/**
 * Whether a DSH command line is `dsh plugin … exec …`, which runs a plugin's bin (the release)
 * as its child and waits: the one DSH process that may be the release's ancestor.
 * @param argv - a DSH process's arguments.
 * @returns true for `dsh plugin --profile web exec dsh-plugin-loop release`.
 */
function isPluginExec(argv: readonly string[]): boolean {
  const plugin = argv.indexOf('plugin')
  return plugin !== -1 && argv.indexOf('exec', plugin + 1) !== -1
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
 * Whether a user may write a folder, by its permission bits (root may write any).
 * @param user - the process's user; groups unknown count as the folder's.
 * @param folder - the folder's owner and mode.
 * @returns true when the user could create or append a session there.
 */
export function mayWrite(user: ProcessUser, folder: FolderAccess): boolean {
  if (user.uid === 0) return true
  if (user.uid === folder.uid) return (folder.mode & 0o200) !== 0
  if (user.gids === undefined || user.gids.includes(folder.gid)) return (folder.mode & 0o020) !== 0
  return (folder.mode & 0o002) !== 0
}

/**
 * The DSH processes that may write a home: every DSH process whose home is this one, or cannot
 * be read while its user may write the home's sessions folder. Among the release's ancestors
 * only `dsh plugin … exec` is passed over; a `dsh web`, terminal UI or headless DSH that started
 * the release (its `bash` tool) writes the session after the release ends, so it counts, marked.
 * @param home - the home, as a real path.
 * @param processes - every process of the system, each with whether it runs DSH.
 * @param self - this process's pid.
 * @param realHomeOf - a DSH process's home as a real path, or `undefined` when it cannot be read.
 * @param sessions - the home's sessions folder's owner and mode.
 * @returns the processes that keep the release out.
 */
export function dshProcessesOn(
  home: string,
  processes: readonly LookedProcess[],
  self: number,
  realHomeOf: (entry: ProcessEntry) => string | undefined,
  sessions: FolderAccess,
): DshProcess[] {
  const byPid = new Map(processes.map((entry) => [entry.pid, entry]))
  const ancestors = new Set<number>()
  for (let pid: number | undefined = self; pid !== undefined && !ancestors.has(pid); pid = byPid.get(pid)?.ppid)
    ancestors.add(pid)
  const running: DshProcess[] = []
  for (const entry of processes) {
    if (!entry.dsh || entry.pid === self) continue
    const ancestor = ancestors.has(entry.pid)
    if (ancestor && isPluginExec(entry.argv)) continue
    const found = {
      pid: entry.pid,
      command: entry.argv.join(' '),
      ...(ancestor ? { startedRelease: true as const } : {}),
    }
    const theirs = realHomeOf(entry)
    if (theirs === undefined) {
      if (entry.user === undefined || mayWrite(entry.user, sessions)) running.push(found)
    } else if (theirs === home) running.push({ ...found, home: theirs })
  }
  return running
}

/**
 * macOS: `ps -o pid=,ppid=,uid=,command=` lists every process (its groups it does not show).
 * @param text - the listing.
 * @returns each process with its parent, user and arguments (split at white space).
 */
export function parsePsList(text: string): ProcessEntry[] {
  const entries: ProcessEntry[] = []
  for (const line of text.split('\n')) {
    const match = /^\s*(\d+)\s+(\d+)\s+(\d+)\s(.*)$/.exec(line)
    if (match !== null)
      entries.push({
        pid: Number(match[1]),
        ppid: Number(match[2]),
        user: { uid: Number(match[3]) },
        argv: match[4]!.trim().split(/\s+/),
      })
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

/** Looks for DSH processes on a home; each look after the first reads only the processes that are new. */
export type DshLookout = (home: string) => Promise<DshLook>

/** Why a look for DSH keeps the release from going on. */
export type DshRefusal =
  | { readonly kind: 'dsh-running'; readonly running: readonly DshProcess[] }
  | { readonly kind: 'cannot-look'; readonly why: string }

/**
 * Whether a look for DSH lets the release go on: no DSH process on the home, and (unless the
 * user says DSH is stopped) none whose home cannot be read, and a system that could be looked at.
 * @param look - what the look found.
 * @param dshStopped - the user says DSH is stopped on this home.
 * @returns `undefined` to go on, else the refusal.
 */
export function dshDecision(look: DshLook, dshStopped: boolean): DshRefusal | undefined {
  if (look.kind === 'cannot-look') return dshStopped ? undefined : look
  const running = dshStopped ? look.running.filter((dsh) => dsh.home !== undefined) : look.running
  return running.length === 0 ? undefined : { kind: 'dsh-running', running }
}

/**
 * Homes for the release's tests: written by a real host with `loop`, and read back file by file.
 * @module test/support/release-home
 */
import { createHash } from 'node:crypto'
import { copyFileSync, mkdirSync, readFileSync, readdirSync } from 'node:fs'
import * as fsPromises from 'node:fs/promises'
import { hostname } from 'node:os'
import { dirname, join, relative } from 'node:path'
import { KNOWN_SESSION_EVENT_TYPES } from '@deepseek-ai/dsh-session'
import { afterEach, beforeAll, expect } from 'vitest'
import { LOOP_CHANGE_EVENT } from '../../src/fold.ts'
import { formatReport } from '../../src/release/report-text.ts'
import { releaseHome, type HomeRelease, type HomeReleaseOptions } from '../../src/release/home.ts'
import { LogRefusal } from '../../src/release/refusals.ts'
import { releaseFile, type FileOutcome, type ReleaseFileOptions } from '../../src/release/release-file.ts'
import { RELEASE_MODES, type ReleaseModeName, type Tally } from '../../src/release/modes.ts'
import type { ReleaseFs } from '../../src/release/release-fs.ts'
import { readFrames } from '../../src/release/zstd-frames.ts'
import {
  advance,
  createFakeAgent,
  createLoop,
  createRelatedFakeAgent,
  runCommand,
  runTool,
  type Hosts,
} from './host.ts'
import { tempDir } from '../../harness/temp-dir.ts'

/** sha256 of every file under a folder, by path relative to it. */
export function digests(root: string): Record<string, string> {
  return Object.fromEntries(
    readdirSync(root, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => join(entry.parentPath, entry.name))
      .map((path) => [relative(root, path), createHash('sha256').update(readFileSync(path)).digest('hex')]),
  )
}

/** The session ids of {@link writeHome}, in the order a release reports them (by folder name). */
export const HOME_SESSIONS = ['session-fork', 'session-looped', 'session-plain'] as const

/**
 * A home written by a real host with `loop` on the fake clock: a session with a 2 s loop that
 * fired and a 1 s loop that fired and was deleted, its fork (which names the inherited loops in
 * a record of its own), and a session that never held a loop (a command's run and done are its
 * events).
 * @param hosts - the test file's hosts.
 * @returns the home and the active loop's id.
 */
export async function writeHome(hosts: Hosts): Promise<{ home: string; loopId: string }> {
  const home = tempDir('loop-release-')
  const host = await hosts.boot({ root: join(home, 'sessions') })
  const looped = await createFakeAgent(host, 'session-looped')
  const loopId = await createLoop(host, looped.agent, 'check the build', 2)
  const gone = await createLoop(host, looped.agent, 'soon deleted', 1)
  await advance(3_000)
  const deleted = await runTool(host, looped.agent, 'loop_delete', { id: gone })
  expect(deleted.isError).toBe(false)
  await createRelatedFakeAgent(host, 'session-fork', 'fork', looped.agent)
  // The fork's first drive names the inherited loops it will not run (a `fork` record).
  await advance(1_000)
  const plain = await createFakeAgent(host, 'session-plain')
  expect(await runCommand(host, plain.agent, '/loop list')).toMatchObject({ kind: 'success' })
  await hosts.dispose(host)
  return { home, loopId }
}

/**
 * The path of one session's log in a home {@link writeHome} wrote.
 * @param home - the home.
 * @param id - the session id.
 * @returns the log's path.
 */
export function logOf(home: string, id: string): string {
  const sessions = join(home, 'sessions')
  const [project] = readdirSync(sessions)
  return join(sessions, project!, id, 'session.jsonl.zstd')
}

/** No DSH on the home: what the release's process check finds in these tests, unless a test says otherwise. */
export const NO_DSH: HomeReleaseOptions['lookForDsh'] = async () => ({ kind: 'looked', running: [] })

/** What a test sets of a release's options: the mode by its name. */
export type ReleaseOverrides = Partial<Omit<HomeReleaseOptions, 'mode'>> & { readonly mode?: ReleaseModeName }

/**
 * A release's options for a test: removal, this process, no DSH running, every other pid gone.
 * @param home - the home.
 * @param overrides - what the test sets.
 * @returns the options.
 */
export function releaseOptions(
  home: string,
  { mode = 'removal', ...overrides }: ReleaseOverrides = {},
): HomeReleaseOptions {
  return {
    home,
    mode: RELEASE_MODES[mode],
    dryRun: false,
    fs: fsPromises,
    startedAt: new Date(0),
    pid: process.pid,
    host: hostname(),
    isAlive: (pid) => pid === process.pid,
    lookForDsh: NO_DSH,
    dshStopped: false,
    ...overrides,
  }
}

/**
 * Release a home, expecting the release to run.
 * @param home - the home.
 * @param overrides - what the test sets.
 * @returns what it did.
 */
export async function releaseDone(home: string, overrides: ReleaseOverrides = {}): Promise<HomeRelease> {
  const release = await releaseHome(releaseOptions(home, overrides))
  expect(release.kind).toBe('done')
  return release as HomeRelease
}

/**
 * The text report of a release, as the command prints it.
 * @param release - what the release did.
 * @returns the report.
 */
export function reportOf(release: HomeRelease): string {
  return formatReport(release, RELEASE_MODES[release.mode])
}

/**
 * What a release wrote to a log, failing the test on a log it left.
 * @param file - the log's outcome.
 * @returns its counts.
 */
export function tallyOf(file: FileOutcome): Tally {
  if (file.status === 'left' || file.status === 'unopenable')
    throw new Error(`${file.path} was ${file.status}: ${file.reason}`)
  if (file.status === 'written-meanwhile') throw new Error(`${file.path} was written meanwhile`)
  return file.tally
}

/**
 * A Zstandard log's frames as the release walks them, each with where it starts.
 * @param path - the log.
 * @returns its frames, in order.
 */
export async function framesOf(path: string): Promise<{ readonly start: number; readonly frame: Buffer }[]> {
  const handle = await fsPromises.open(path, 'r')
  const frames: { readonly start: number; readonly frame: Buffer }[] = []
  try {
    for await (const frame of readFrames(handle)) frames.push(frame)
    return frames
  } finally {
    await handle.close()
  }
}

/**
 * The refusal a call throws, asserted to be a {@link LogRefusal}.
 * @param fn - the call.
 * @returns its message.
 */
export function refusal(fn: () => unknown): string {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(LogRefusal)
    return (error as Error).message
  }
  throw new Error('no refusal')
}

/** Runs before each file-system call a release makes, named `fs.open`, `handle.write`, …, with its arguments; may throw or never settle. */
export type Gate = (step: string, args: readonly unknown[]) => void | Promise<void>

/**
 * The real file system with a gate before every call, the calls on open handles included.
 * @param gate - runs before each call.
 * @param opened - collects every handle opened, for a test that plays a kill to close as the OS would.
 * @param running - holds each call the gate let through until it ends: a test that plays a kill
 *   lets those end (as the system ends a dead process's calls) before anything else runs.
 */
export function gatedFs(
  gate: Gate,
  opened: fsPromises.FileHandle[] = [],
  running = new Set<Promise<unknown>>(),
): ReleaseFs {
  const gated =
    <T extends object>(target: T, prefix: string, wrap: (value: unknown) => unknown) =>
    (key: string) =>
    async (...args: unknown[]) => {
      await gate(`${prefix}.${key}`, args)
      const call = (Reflect.get(target, key) as (...a: unknown[]) => Promise<unknown>).apply(target, args)
      running.add(call)
      try {
        return wrap(await call)
      } finally {
        running.delete(call)
      }
    }
  const wrapHandle = (handle: fsPromises.FileHandle): fsPromises.FileHandle => {
    opened.push(handle)
    const call = gated(handle, 'handle', (value) => value)
    return new Proxy(handle, {
      get: (target, key) =>
        typeof key === 'string' && typeof Reflect.get(target, key) === 'function'
          ? call(key)
          : Reflect.get(target, key),
    })
  }
  const call = gated(fsPromises, 'fs', (value) =>
    value instanceof Object && 'fd' in value ? wrapHandle(value as fsPromises.FileHandle) : value,
  )
  const names = [
    'open',
    'stat',
    'lstat',
    'statfs',
    'readdir',
    'readFile',
    'realpath',
    'rename',
    'link',
    'copyFile',
    'mkdir',
    'rm',
  ] as const
  return Object.fromEntries(names.map((name) => [name, call(name)])) as unknown as ReleaseFs
}

/**
 * Release one log, expecting it to be read to its end (no `beforeReplace` stopped the run).
 * @param path - the log.
 * @param options - how to release it.
 * @returns its outcome.
 */
export async function releasedFile(path: string, options: ReleaseFileOptions): Promise<FileOutcome> {
  const done = await releaseFile(path, options)
  if ('stopped' in done) throw new Error(`the release stopped at ${path}`)
  return done.outcome
}

/** A real log with loops, written once for a test file, and fresh homes holding a copy of it. */
export interface LoopedLog {
  /** The log's bytes as the host wrote them. */
  written(): Buffer
  /** A home of its own holding a fresh copy of the log as `session-looped`'s. */
  homeWithLog(): { home: string; log: string }
}

/**
 * Write, once for the test file (`beforeAll`), the `session-looped` log of {@link writeHome}.
 * @param hosts - the test file's hosts.
 * @returns the log's bytes, and a maker of homes holding a copy.
 */
export function useLoopedLog(hosts: Hosts): LoopedLog {
  let source: string | undefined
  beforeAll(async () => {
    source = logOf((await writeHome(hosts)).home, 'session-looped')
  })
  return {
    written: () => readFileSync(source!),
    homeWithLog: () => {
      const home = tempDir('loop-release-home-')
      const log = join(home, 'sessions', '--project--', 'session-looped', 'session.jsonl.zstd')
      mkdirSync(dirname(log), { recursive: true })
      copyFileSync(source!, log)
      return { home, log }
    },
  }
}

/**
 * rc.8's event catalog without `loop/change`, as in a host without `loop`, for as long as a test
 * needs it: `forget` takes the type out, and it is put back by `restore` or after each test.
 * @returns the two steps.
 */
export function useLoopTypeForgettable(): { forget(): void; restore(): void } {
  const catalog = KNOWN_SESSION_EVENT_TYPES as Set<string>
  const restore = () => void catalog.add(LOOP_CHANGE_EVENT)
  afterEach(restore)
  return { forget: () => void catalog.delete(LOOP_CHANGE_EVENT), restore }
}

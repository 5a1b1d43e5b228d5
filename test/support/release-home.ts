/**
 * Homes for the release's tests: written by a real host with `loop`, and read back file by file.
 * @module test/support/release-home
 */
import { createHash } from 'node:crypto'
import { readFileSync, readdirSync } from 'node:fs'
import { join, relative } from 'node:path'
import { expect } from 'vitest'
import {
  advance,
  createFakeAgent,
  createLoop,
  createRelatedFakeAgent,
  runCommand,
  runTool,
  type Hosts,
} from './host.ts'
import { tempDir } from './temp-dir.ts'

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

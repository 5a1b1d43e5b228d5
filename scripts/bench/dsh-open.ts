/**
 * Row 6 as a user meets it: the grown log opened in real `dsh web` processes in concurrent pairs. Both homes have the
 * packed plugin added as a user adds it, so both profiles are the same install; on the host-alone side a patch
 * disables it and loads {@link CATALOG_ONLY} instead, because a real DSH refuses to open a log holding an event type no
 * plugin registered. Either side runs every first-party plugin of the web profile, whose projection units fold the log.
 * @module scripts/bench/dsh-open
 */
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { startMockLlmServer, type MockLlmServer } from '@deepseek-ai/dsh-llm-mock-server'
import {
  dshPlugin,
  history,
  mockEndpoint,
  openSession,
  packPlugin,
  prepareHome,
  startWeb,
  type DshWeb,
} from '../../harness/dsh-stack.ts'
import type { Snapshot } from './growth.ts'

/** The host alone's only addition: `loop/change` in the host's event catalog, nothing else. */
const CATALOG_ONLY = join(dirname(fileURLToPath(import.meta.url)), 'catalog-only.mjs')

/** How long a process must stay under {@link IDLE_CPU_MS} of CPU to count as settled, ms. */
const IDLE_WINDOW = 500
const IDLE_CPU_MS = 20

/**
 * Kept after the open's last reply, so the projection cache's write (5 s after the last event, SPEC.md §8 "Host
 * behaviours `loop` depends on (rc.8)") lands inside the window on both sides, whichever process answers first.
 */
const AFTER_OPEN = 6_000

/** One side's open, in its own `dsh web`. */
export interface DshOpen {
  /** Process CPU ms (user + system, every thread, from /proc) from the first request to settled. */
  readonly cpu: number
  /** Wall ms until the history reply (what the user waits for). */
  readonly wall: number
  /** Whether the history's projection values held `loop` (a check that the plugin's side folded the log). */
  readonly loopProjection: boolean
}

/** The homes, the model and the tarball every pair reuses. */
export interface DshOpenRig {
  readonly withPlugin: string
  readonly alone: string
  /** The host-alone side's `--patch` file. */
  readonly patch: string
  readonly model: MockLlmServer
  close(): Promise<void>
}

/** Pack the plugin, add it to both homes, and write the host-alone side's patch. */
export async function prepareDshOpen(): Promise<DshOpenRig> {
  const tarball = packPlugin()
  const [withPlugin, alone] = [prepareHome(), prepareHome()]
  for (const home of [withPlugin, alone]) dshPlugin(home, 'web', 'add', tarball)
  const patch = join(alone, 'host-alone.yml')
  const lines = ['- id: loop', '  disabled: true', '- insert:', '    - id: loop-catalog-only']
  writeFileSync(patch, [...lines, `      name: ${JSON.stringify(CATALOG_ONLY)}`, ''].join('\n'))
  const model = await startMockLlmServer({ host: '127.0.0.1', port: 0, sequence: ['success'], repeatLast: true })
  const close = async () => {
    await model.close()
    for (const home of [withPlugin, alone]) rmSync(home, { recursive: true, force: true })
  }
  return { withPlugin, alone, patch, model, close }
}

/** CPU ms a process used so far (`utime + stime` in /proc/<pid>/stat, which keeps exited threads' time). */
function processCpu(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // Fields 14 and 15 of stat(5), counted after the command name; clock ticks of 10 ms (USER_HZ 100 on Linux).
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/** Wait until the process stays idle for {@link IDLE_WINDOW}; returns its CPU then. */
async function settled(pid: number): Promise<number> {
  let last = processCpu(pid)
  for (;;) {
    await sleep(IDLE_WINDOW)
    const now = processCpu(pid)
    if (now - last < IDLE_CPU_MS) return now
    last = now
  }
}

/** Put a fresh copy of the grown log in a home, with no projection checkpoint from an earlier open. */
function restoreLog(home: string, snapshot: Snapshot): void {
  rmSync(join(home, 'sessions'), { recursive: true, force: true })
  rmSync(join(home, 'storages'), { recursive: true, force: true })
  cpSync(snapshot.root, join(home, 'sessions'), { recursive: true })
}

/** Open the session the way DSH web does when the user clicks it, and read its history; CPU until settled. */
async function open(web: DshWeb, sessionId: string): Promise<DshOpen> {
  const pid = web.child.pid!
  const before = processCpu(pid)
  const started = performance.now()
  await openSession(web.url, sessionId)
  const { projections } = await history(web.url, sessionId)
  const wall = performance.now() - started
  await sleep(AFTER_OPEN)
  const after = await settled(pid)
  return { cpu: after - before, wall, loopProjection: 'loop' in projections }
}

/**
 * One pair: both processes boot on fresh copies of the log, settle, then open at the same moment. `first` picks which
 * side's requests go out first, alternated by the caller.
 */
export async function dshOpenPair(
  rig: DshOpenRig,
  snapshot: Snapshot,
  first: 'with' | 'without',
): Promise<{ with: DshOpen; without: DshOpen }> {
  // The session's cwd, which the host resolves when it brings the session live.
  mkdirSync(snapshot.cwd, { recursive: true })
  restoreLog(rig.withPlugin, snapshot)
  restoreLog(rig.alone, snapshot)
  const endpoint = mockEndpoint(rig.model)
  const webs = await Promise.all([
    startWeb({ home: rig.withPlugin, model: endpoint }),
    startWeb({ home: rig.alone, model: endpoint, patches: [rig.patch] }),
  ])
  try {
    await Promise.all(webs.map((web) => settled(web.child.pid!)))
    const [withWeb, aloneWeb] = webs
    const id = snapshot.sessionId
    // An open starts its first request before it returns, so the side called first goes out first; both then run at once.
    const aloneFirst = first === 'without' ? open(aloneWeb, id) : undefined
    const withOpen = open(withWeb, id)
    const [withPlugin, without] = await Promise.all([withOpen, aloneFirst ?? open(aloneWeb, id)])
    if (!withPlugin.loopProjection || without.loopProjection)
      throw new Error('dsh open: the loop projection is not where it belongs (with the plugin only)')
    return { with: withPlugin, without }
  } finally {
    await Promise.all(webs.map((web) => web.stop()))
  }
}

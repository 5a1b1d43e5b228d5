/**
 * Row 4 for one side (the host with the plugin, or the host alone) in a
 * process of its own: a cold open of the largest copy of the grown log as the
 * process's first work, so its code is as cold as in a freshly started DSH. The
 * run pairs such processes and starts both opens at the same moment (this VM's
 * speed drifts too much between one process and the next for sequential opens
 * to compare), and judges the ratio of each pair. (Row 1, the append, is `append.ts`: both sides in one
 * process.)
 * @module scripts/bench/sides
 */
import { rmSync } from 'node:fs'
import { initLoopProjection, applyLoopProjection } from '../../src/projection.ts'
import { foldLoopLog } from './fold.ts'
import type { Snapshot } from './growth.ts'
import { FLOOR_TOOL, bootHost, copyRoot, registerFloorTool, resumeAgent, runTool, type FakeAgent } from './host.ts'
import { collectGarbage, time, timeSync } from './stats.ts'

/** Row 4 for one side: one cold open. */
export interface SideOpen {
  readonly at: number
  readonly events: number
  /** Wall ms of the open. */
  readonly wall: number
  /** Process CPU ms (user + system, all threads) of the open. */
  readonly cpu: number
  /** Active loops the resumed runtime reported (with the plugin). */
  readonly loops: number
  /** With the plugin, timed after the open: the runtime's catch-up fold of the whole log, ms. */
  readonly runtimeFold: number
  /** ... and the projection's first build (`init` + `apply` per event), ms. */
  readonly projectionFold: number
}

/** One side process's result. */
export interface SideResult {
  readonly loop: boolean
  readonly open: SideOpen
}

/** Options of one side process. */
export interface SideOptions {
  readonly loop: boolean
  /** The largest copy of the grown log. */
  readonly snapshot: Snapshot
}

/** The number of loops in a `loop_list` result (an array, or `{ loops }`). */
function countLoops(value: unknown): number {
  return Array.isArray(value) ? value.length : (value as { loops: unknown[] }).loops.length
}

/**
 * Run one side.
 * @param options - which side and which log.
 * @param log - progress output.
 * @param ready - resolves when the other side of the pair is ready too (the run starts both opens together).
 * @returns its cold open.
 */
export async function runSide(
  options: SideOptions,
  log: (line: string) => void,
  ready: () => Promise<void>,
): Promise<SideResult> {
  const { loop, snapshot } = options
  const name = loop ? 'with the plugin' : 'host alone'
  const root = copyRoot(snapshot.root)
  collectGarbage()
  const host = await bootHost({ root, loop, loopConfig: { maxLoopsPerSession: 1_000 } })
  if (!loop) registerFloorTool(host)
  // Both sides of a pair open at the same moment, so they run on the same machine state.
  await ready()
  let fake: FakeAgent | undefined
  let loops = 0
  const cpuStart = process.cpuUsage()
  const wall = await time(async () => {
    fake = await resumeAgent(host, snapshot.sessionId)
    host.ctx.sessionProjections.snapshot(fake.agent.session)
    // The probe that waits for the runtime's first fold is a tool call; the host alone makes the same call through the same
    // tool runtime and flush barrier (the floor tool), so the probe's own cold path is on both sides and only the plugin's work differs.
    if (loop) loops = countLoops(await runTool(host, fake.agent, 'loop_list', {}))
    else await runTool(host, fake.agent, FLOOR_TOOL, {})
  })
  const cpuUsed = process.cpuUsage(cpuStart)
  const events = fake!.agent.session.events
  const runtimeFold = loop ? timeSync(() => foldLoopLog(events)) : 0
  const projectionFold = loop
    ? timeSync(() => {
        let state = initLoopProjection()
        for (const event of events) state = applyLoopProjection(state, event)
        return state
      })
    : 0
  const open = {
    at: snapshot.at,
    events: snapshot.events,
    wall,
    cpu: (cpuUsed.user + cpuUsed.system) / 1000,
    loops,
    runtimeFold,
    projectionFold,
  }
  log(`  ${name}: cold open of ${snapshot.events} events ${wall.toFixed(0)} ms (CPU ${open.cpu.toFixed(0)} ms)`)
  await host.dispose()
  rmSync(root, { recursive: true, force: true })
  return { loop, open }
}

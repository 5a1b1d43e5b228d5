/**
 * Row 6 for one side (the host with the plugin, or alone) in a process of its own: a cold open of the largest grown
 * log as the process's first work, so the code is as cold as in a freshly started DSH. main.ts starts both sides of a
 * pair at the same moment (see {@link signalReady}): opens run one process after another met a machine up to 2× faster
 * or slower, so only a ratio within a concurrent pair compares the two.
 * @module scripts/bench/cold-open
 */
import { rmSync } from 'node:fs'
import type { SessionEvent } from '@deepseek-ai/dsh-session'
import { LOOP_CHANGE_EVENT } from '../../src/domain.ts'
import { applyLoopProjection, initLoopProjection } from '../../src/projection.ts'
import type { Snapshot } from './growth.ts'
import { FLOOR_TOOL, bootHost, copyRoot, registerFloorTool, resumeAgent, runTool } from './host.ts'
import { foldFromScratch } from './log.ts'
import { collectGarbage, cpuSince, signalReady, time, timeSync } from './stats.ts'

export interface ColdOpen {
  /** The grown log's size. */
  readonly at: number
  readonly wall: number
  /** Process CPU ms of the open. */
  readonly cpu: number
  /** With the plugin, timed again after the open: the runtime's own fold of the whole log (its fallback), ms. */
  readonly runtimeFold: number
  /** ... the projection's first build (`init` + `apply` per event, what the registry does on the first read), ms. */
  readonly projectionBuild: number
  /** ... and one pass reading each event's type: what the registry's build costs any projection, ms. */
  readonly bareFold: number
}

/** One pass over the log reading each event's type, nothing else. */
function countLoopChanges(events: readonly SessionEvent[]): number {
  let count = 0
  for (const event of events) if (event.type === LOOP_CHANGE_EVENT) count += 1
  return count
}

export async function runColdOpen(
  options: { readonly loop: boolean; readonly snapshot: Snapshot },
  log: (line: string) => void,
): Promise<ColdOpen> {
  const { loop, snapshot } = options
  const root = copyRoot(snapshot.root)
  collectGarbage()
  const host = await bootHost({ root, loop, loopConfig: { maxLoopsPerSession: 1_000 } })
  if (!loop) registerFloorTool(host)
  await signalReady()
  const cpuStart = process.cpuUsage()
  let events: readonly SessionEvent[] = []
  const wall = await time(async () => {
    const fake = await resumeAgent(host, snapshot.sessionId)
    host.ctx.sessionProjections.snapshot(fake.agent.session)
    // The probe that waits for the runtime's first fold is a tool call; the host alone makes the same call through the
    // same tool runtime and flush barrier, so the probe's own cold path is on both sides.
    await runTool(host, fake.agent, loop ? 'loop_list' : FLOOR_TOOL, {})
    events = fake.agent.session.events
  })
  const cpu = cpuSince(cpuStart)
  const runtimeFold = loop ? timeSync(() => foldFromScratch(events)) : 0
  const projectionBuild = loop ? timeSync(() => events.reduce(applyLoopProjection, initLoopProjection())) : 0
  const bareFold = loop ? timeSync(() => countLoopChanges(events)) : 0
  log(`  ${loop ? 'with the plugin' : 'host alone'}: cold open ${wall.toFixed(0)} ms (CPU ${cpu.toFixed(0)} ms)`)
  await host.dispose()
  rmSync(root, { recursive: true, force: true })
  return { at: snapshot.at, wall, cpu, runtimeFold, projectionBuild, bareFold }
}

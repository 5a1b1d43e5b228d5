/**
 * Row 4: cold resume of the grown session, with and without the plugin, each
 * trial in a freshly booted host over the same JSONL file. "Open" is what DSH
 * web does when a session is selected: resume the agent and read the
 * projection snapshot; with the plugin it also waits for the runtime's first
 * fold (a `loop_list` call queues behind it). A host without the plugin cannot
 * open a log that holds `loop/change` at all (the persistence catalog refuses
 * it), so the baseline adds the type to the catalog the way the plugin does.
 * @module scripts/bench/resume
 */
import { KNOWN_SESSION_EVENT_TYPES } from '@deepseek-ai/dsh-session'
import { initLoopProjection, applyLoopProjection } from '../../src/projection.ts'
import { foldLoopLog } from './fold.ts'
import { bootHost, resumeAgent, runTool } from './host.ts'
import { collectGarbage, median, time, timeSync } from './stats.ts'

/** Row 4's result, ms. */
export interface ResumeResult {
  readonly events: number
  readonly withPlugin: number
  readonly withoutPlugin: number
  readonly withSamples: readonly number[]
  readonly withoutSamples: readonly number[]
  /**
   * Process CPU time of the same opens (user + system, all threads: zstd, parsing, GC), ms: what other
   * processes on a shared machine do not inflate. The target is checked on these medians.
   */
  readonly withCpu: number
  readonly withoutCpu: number
  readonly withCpuSamples: readonly number[]
  readonly withoutCpuSamples: readonly number[]
  /** Active loops the resumed runtime reported (the standing loops). */
  readonly loopsAfterResume: number
  /** Where the plugin's share goes: the runtime's catch-up fold of the whole resumed log, ms. */
  readonly runtimeFold: number
  /** ... and the projection's first build over the whole log (`init` + `apply` per event), ms. */
  readonly projectionFold: number
}

/** The number of loops in a `loop_list` result (an array, or `{ loops }`). */
function countLoops(value: unknown): number {
  return Array.isArray(value) ? value.length : (value as { loops: unknown[] }).loops.length
}

/** The two whole-log folds a resume makes the plugin do, timed outside the open on the resumed log. */
function breakdown(events: Parameters<typeof foldLoopLog>[0]): { runtimeFold: number; projectionFold: number } {
  const runtimeFold = timeSync(() => foldLoopLog(events))
  const projectionFold = timeSync(() => {
    let state = initLoopProjection()
    for (const event of events) state = applyLoopProjection(state, event)
    return state
  })
  return { runtimeFold, projectionFold }
}

async function openOnce(root: string, sessionId: string, loop: boolean) {
  collectGarbage()
  const host = await bootHost({ root, loop })
  let loops = 0
  let events: Parameters<typeof foldLoopLog>[0] = []
  const cpuStart = process.cpuUsage()
  const ms = await time(async () => {
    const fake = await resumeAgent(host, sessionId)
    events = fake.agent.session.events
    host.ctx.sessionProjections.snapshot(fake.agent.session)
    if (loop) loops = countLoops(await runTool(host, fake.agent, 'loop_list', {}))
  })
  const cpuUsed = process.cpuUsage(cpuStart)
  const cpu = (cpuUsed.user + cpuUsed.system) / 1000
  const parts = loop ? breakdown(events) : { runtimeFold: 0, projectionFold: 0 }
  await host.dispose()
  return { ms, cpu, loops, ...parts }
}

/**
 * Run row 4.
 * @param root - persistence root holding the session.
 * @param sessionId - the session.
 * @param events - its length (for the report).
 * @param rounds - trials per variant.
 * @param log - progress output.
 * @returns medians.
 */
export async function runResume(root: string, sessionId: string, events: number, rounds: number, log: (line: string) => void): Promise<ResumeResult> {
  ;(KNOWN_SESSION_EVENT_TYPES as Set<string>).add('loop/change')
  // One untimed open warms the page cache for both variants alike.
  await openOnce(root, sessionId, false)
  const withSamples: number[] = []
  const withoutSamples: number[] = []
  const withCpuSamples: number[] = []
  const withoutCpuSamples: number[] = []
  const runtimeFolds: number[] = []
  const projectionFolds: number[] = []
  let loopsAfterResume = 0
  for (let round = 0; round < rounds; round += 1) {
    for (const loop of round % 2 === 0 ? [true, false] : [false, true]) {
      const { ms, cpu, loops, runtimeFold, projectionFold } = await openOnce(root, sessionId, loop)
      if (loop) {
        withSamples.push(ms)
        withCpuSamples.push(cpu)
        runtimeFolds.push(runtimeFold)
        projectionFolds.push(projectionFold)
        loopsAfterResume = loops
      } else {
        withoutSamples.push(ms)
        withoutCpuSamples.push(cpu)
      }
      log(`  open ${loop ? 'with' : 'without'} the plugin: ${ms.toFixed(0)} ms (CPU ${cpu.toFixed(0)} ms)`)
    }
  }
  return {
    events,
    withPlugin: median(withSamples),
    withoutPlugin: median(withoutSamples),
    withSamples,
    withoutSamples,
    withCpu: median(withCpuSamples),
    withoutCpu: median(withoutCpuSamples),
    withCpuSamples,
    withoutCpuSamples,
    loopsAfterResume,
    runtimeFold: median(runtimeFolds),
    projectionFold: median(projectionFolds),
  }
}

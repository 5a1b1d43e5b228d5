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
import { bootHost, resumeAgent, runTool } from './host.ts'
import { collectGarbage, median, time } from './stats.ts'

/** Row 4's result, ms. */
export interface ResumeResult {
  readonly events: number
  readonly withPlugin: number
  readonly withoutPlugin: number
  readonly withSamples: readonly number[]
  readonly withoutSamples: readonly number[]
  /** Active loops the resumed runtime reported (the standing loops). */
  readonly loopsAfterResume: number
}

/** The number of loops in a `loop_list` result (an array, or `{ loops }`). */
function countLoops(value: unknown): number {
  return Array.isArray(value) ? value.length : (value as { loops: unknown[] }).loops.length
}

async function openOnce(root: string, sessionId: string, loop: boolean): Promise<{ ms: number; loops: number }> {
  collectGarbage()
  const host = await bootHost({ root, loop })
  let loops = 0
  const ms = await time(async () => {
    const fake = await resumeAgent(host, sessionId)
    host.ctx.sessionProjections.snapshot(fake.agent.session)
    if (loop) loops = countLoops(await runTool(host, fake.agent, 'loop_list', {}))
  })
  await host.dispose()
  return { ms, loops }
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
  let loopsAfterResume = 0
  for (let round = 0; round < rounds; round += 1) {
    for (const loop of round % 2 === 0 ? [true, false] : [false, true]) {
      const { ms, loops } = await openOnce(root, sessionId, loop)
      if (loop) {
        withSamples.push(ms)
        loopsAfterResume = loops
      } else withoutSamples.push(ms)
      log(`  open ${loop ? 'with' : 'without'} the plugin: ${ms.toFixed(0)} ms`)
    }
  }
  return { events, withPlugin: median(withSamples), withoutPlugin: median(withoutSamples), withSamples, withoutSamples, loopsAfterResume }
}

/**
 * Row 8: a session opened with 20 loops already overdue (DSH restarted after
 * they fell due). Timed from the agent's creation on resume to the 20th
 * heartbeat handed to `agent.send`, with the plugin's runtime, against a
 * bench-local driver that does what a runtime committing one loop at a time
 * must: for each overdue loop in `next_at` order, send its heartbeat, append
 * its `dispatch` record and flush, before the next. Both run on the same real
 * host composition (JSONL persistence with fsync) over copies of one log,
 * alternating which goes first.
 * @module scripts/bench/overdue
 */
import { rmSync } from 'node:fs'
import type { Agent } from '@deepseek-ai/dsh-agent'
import { createUserMessage } from '@deepseek-ai/dsh-llm'
import { activeLoops, dispatchChange, emptyLoopFold, foldLoopEvents } from '../../src/domain.ts'
import { renderHeartbeat } from '../../src/heartbeat.ts'
import { nextOccurrence } from '../../src/timing.ts'
import { bootHost, copyRoot, createAgent, resumeAgent, tempDir } from './host.ts'
import { loopId } from './log.ts'
import { median, preciseNow, spread, type Spread } from './stats.ts'

/** Overdue loops in the session. */
export const OVERDUE_LOOPS = 20

/** One trial of one side. */
export interface OverdueTrial {
  /** Agent created → 20th send, ms. */
  readonly allSent: number
  /** fsync'd JSONL writes from the agent's creation to the 20th send. */
  readonly diskWrites: number
  /** `ctx.sessions.flush` calls in the same span. */
  readonly flushes: number
}

/** Row 8's result. */
export interface OverdueResult {
  readonly loops: number
  readonly runtime: readonly OverdueTrial[]
  readonly perLoop: readonly OverdueTrial[]
  /** Runtime ÷ one-flush-per-loop driver, per pair. */
  readonly ratio: Spread
  readonly runtimeMedian: number
  readonly perLoopMedian: number
}

const SESSION = 'overdue'

/** Write the log once: 20 hourly loops whose next_at passed a minute ago, with no runtime to dispatch them. */
async function writeLog(): Promise<string> {
  const root = tempDir('loop-bench-overdue-')
  const host = await bootHost({ root, loop: false })
  const fake = await createAgent(host, SESSION)
  const past = Date.now() - 60_000
  for (let index = 0; index < OVERDUE_LOOPS; index += 1) {
    const loop = { id: loopId(0x50000000 + index), prompt: `Overdue check ${index}`, time_in_seconds: 3_600, next_at: past + index }
    fake.agent.session.append('loop/change', { version: 1, operation: 'create', loop })
  }
  await host.ctx.sessions.flush(fake.agent.session)
  await host.dispose()
  return root
}

/** The one-flush-per-loop driver: send, append, flush, for each overdue loop in order. */
async function commitEachLoop(agent: Agent, flush: () => Promise<unknown>): Promise<void> {
  const now = Date.now()
  const loops = activeLoops(foldLoopEvents(emptyLoopFold(), agent.session.events))
    .filter((loop) => loop.next_at <= now)
    .sort((left, right) => left.next_at - right.next_at)
  for (const loop of loops) {
    const message = createUserMessage({ content: [{ type: 'text', text: renderHeartbeat(loop) }], source: { kind: 'plugin', plugin: 'loop' } })
    agent.send(message, 'next-turn', true)
    agent.session.append('loop/change', dispatchChange(loop.id, nextOccurrence(loop, Date.now())))
    await flush()
  }
}

/** One side on a fresh copy of the log. */
async function trial(source: string, runtime: boolean): Promise<OverdueTrial> {
  const root = copyRoot(source)
  const host = await bootHost({ root, loop: runtime })
  let createdAt = 0
  let writesAt = 0
  let flushesAt = 0
  let done: OverdueTrial | undefined
  let resolveDone: () => void = () => {}
  const allSent = new Promise<void>((resolve) => (resolveDone = resolve))
  // Registered after the plugin's own listener: its runtime has started when this runs.
  host.ctx.on('agent/created', ({ agent }) => {
    createdAt = preciseNow()
    writesAt = host.diskWrites()
    flushesAt = host.flushes()
    if (!runtime) void commitEachLoop(agent, () => host.ctx.sessions.flush(agent.session))
  })
  let sends = 0
  const fake = await resumeAgent(host, SESSION, () => {
    sends += 1
    if (sends !== OVERDUE_LOOPS) return
    done = { allSent: preciseNow() - createdAt, diskWrites: host.diskWrites() - writesAt, flushes: host.flushes() - flushesAt }
    resolveDone()
  })
  const deadline = setTimeout(() => resolveDone(), 30_000)
  await allSent
  clearTimeout(deadline)
  if (done === undefined) throw new Error(`overdue: ${sends} of ${OVERDUE_LOOPS} heartbeats sent in 30 s`)
  // Let the last dispatch records become durable before the host goes.
  await host.ctx.sessions.flush(fake.agent.session)
  await host.dispose()
  rmSync(root, { recursive: true, force: true })
  return done
}

/**
 * Run row 8.
 * @param rounds - pairs of trials.
 * @param log - progress output.
 * @returns both sides and their ratio per pair.
 */
export async function runOverdue(rounds: number, log: (line: string) => void): Promise<OverdueResult> {
  const source = await writeLog()
  // One untimed pair warms the JIT for both.
  await trial(source, true)
  await trial(source, false)
  const runtimeTrials: OverdueTrial[] = []
  const perLoopTrials: OverdueTrial[] = []
  for (let round = 0; round < rounds; round += 1) {
    for (const runtime of round % 2 === 0 ? [true, false] : [false, true]) {
      const result = await trial(source, runtime)
      ;(runtime ? runtimeTrials : perLoopTrials).push(result)
    }
    log(`  20 overdue: runtime ${runtimeTrials.at(-1)!.allSent.toFixed(1)} ms (${runtimeTrials.at(-1)!.diskWrites} writes), one flush per loop ${perLoopTrials.at(-1)!.allSent.toFixed(1)} ms (${perLoopTrials.at(-1)!.diskWrites} writes)`)
  }
  rmSync(source, { recursive: true, force: true })
  return {
    loops: OVERDUE_LOOPS,
    runtime: runtimeTrials,
    perLoop: perLoopTrials,
    ratio: spread(runtimeTrials.map((trialResult, index) => trialResult.allSent / perLoopTrials[index]!.allSent)),
    runtimeMedian: median(runtimeTrials.map((trialResult) => trialResult.allSent)),
    perLoopMedian: median(perLoopTrials.map((trialResult) => trialResult.allSent)),
  }
}

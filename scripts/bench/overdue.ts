/**
 * Row 8: a session opened with its loops already overdue (DSH restarted after
 * they fell due): 20 loops, and a burst of 1,000. Timed from the agent's
 * creation on resume to the last heartbeat handed to `agent.send`, with the
 * plugin's runtime, against a
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
import { renderHeartbeat } from '../../src/shared/heartbeat.ts'
import { nextOccurrence } from '../../src/shared/timing.ts'
import { bootHost, copyRoot, createAgent, resumeAgent, tempDir } from './host.ts'
import { loopId } from './log.ts'
import { median, preciseNow, spread, type Spread } from './stats.ts'

/** Overdue loops in the session of row 8, and in its burst variant. */
export const OVERDUE_LOOPS = { row: 20, burst: 1_000 } as const

/** One trial of one side. */
export interface OverdueTrial {
  /** Agent created → last send, ms. */
  readonly allSent: number
  /** fsync'd JSONL writes from the agent's creation to the last send. */
  readonly diskWrites: number
  /** fsync'd JSONL writes from the agent's creation until every `dispatch` record is durable. */
  readonly durableWrites: number
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
  /** The host's own writes on resume with nothing dispatched (median over rounds): both sides pay them. */
  readonly hostWrites: number
  /** The runtime's fsync'd writes per dispatch: writes until every record is durable, beyond the host's own, ÷ loops, per trial. */
  readonly writesPerDispatch: Spread
}

const SESSION = 'overdue'

/** Write the log once: `loops` hourly loops whose next_at passed a minute ago, with no runtime to dispatch them. */
async function writeLog(loops: number): Promise<string> {
  const root = tempDir('loop-bench-overdue-')
  const host = await bootHost({ root, loop: false })
  const fake = await createAgent(host, SESSION)
  const past = Date.now() - 60_000
  for (let index = 0; index < loops; index += 1) {
    const loop = {
      id: loopId(0x50000000 + index),
      prompt: `Overdue check ${index}`,
      time_in_seconds: 3_600,
      next_at: past + index,
    }
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
    const message = createUserMessage({
      content: [{ type: 'text', text: renderHeartbeat(loop) }],
      source: { kind: 'plugin', plugin: 'loop' },
    })
    agent.send(message, 'next-turn', true)
    agent.session.append('loop/change', dispatchChange(loop.id, nextOccurrence(loop, Date.now())))
    await flush()
  }
}

/**
 * The host's own writes on resume, with nothing dispatched: the host without the plugin resumes the
 * session and flushes it. Both sides pay these; writes per dispatch count only the writes beyond them.
 */
async function hostFloorWrites(source: string): Promise<number> {
  const root = copyRoot(source)
  const host = await bootHost({ root, loop: false })
  let writesAt = 0
  host.ctx.on('agent/created', () => (writesAt = host.diskWrites()))
  const fake = await resumeAgent(host, SESSION)
  await host.ctx.sessions.flush(fake.agent.session)
  const writes = host.diskWrites() - writesAt
  await host.dispose()
  rmSync(root, { recursive: true, force: true })
  return writes
}

/** One side on a fresh copy of the log. */
async function trial(source: string, runtime: boolean, loops: number): Promise<OverdueTrial> {
  const root = copyRoot(source)
  const host = await bootHost({ root, loop: runtime, loopConfig: { maxLoopsPerSession: loops } })
  let createdAt = 0
  let writesAt = 0
  let flushesAt = 0
  let done: Omit<OverdueTrial, 'durableWrites'> | undefined
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
    if (sends !== loops) return
    done = {
      allSent: preciseNow() - createdAt,
      diskWrites: host.diskWrites() - writesAt,
      flushes: host.flushes() - flushesAt,
    }
    resolveDone()
  })
  const deadline = setTimeout(() => resolveDone(), 60_000)
  await allSent
  clearTimeout(deadline)
  if (done === undefined) throw new Error(`overdue: ${sends} of ${loops} heartbeats sent in 60 s`)
  // Every dispatch record made durable: the writes a batch costs, whoever issued them.
  await host.ctx.sessions.flush(fake.agent.session)
  const durableWrites = host.diskWrites() - writesAt
  const dispatched = fake.agent.session.events.filter(
    (event) => event.type === 'loop/change' && (event.data as { operation?: string }).operation === 'dispatch',
  ).length
  if (dispatched !== loops)
    throw new Error(`overdue: ${dispatched} of ${loops} dispatch records in the log after the last send`)
  await host.dispose()
  rmSync(root, { recursive: true, force: true })
  return { ...done, durableWrites }
}

/**
 * Run row 8.
 * @param rounds - pairs of trials.
 * @param loops - overdue loops in the session.
 * @param log - progress output.
 * @returns both sides and their ratio per pair.
 */
export async function runOverdue(rounds: number, loops: number, log: (line: string) => void): Promise<OverdueResult> {
  const source = await writeLog(loops)
  // One untimed pair warms the JIT for both.
  await trial(source, true, loops)
  await trial(source, false, loops)
  const runtimeTrials: OverdueTrial[] = []
  const perLoopTrials: OverdueTrial[] = []
  const floors: number[] = []
  for (let round = 0; round < rounds; round += 1) {
    floors.push(await hostFloorWrites(source))
    for (const runtime of round % 2 === 0 ? [true, false] : [false, true]) {
      const result = await trial(source, runtime, loops)
      ;(runtime ? runtimeTrials : perLoopTrials).push(result)
    }
    const [own, each] = [runtimeTrials.at(-1)!, perLoopTrials.at(-1)!]
    log(
      `  ${loops} overdue: runtime ${own.allSent.toFixed(1)} ms (${own.durableWrites} writes), one flush per loop ${each.allSent.toFixed(1)} ms (${each.durableWrites} writes)`,
    )
  }
  rmSync(source, { recursive: true, force: true })
  return {
    loops,
    runtime: runtimeTrials,
    perLoop: perLoopTrials,
    ratio: spread(runtimeTrials.map((trialResult, index) => trialResult.allSent / perLoopTrials[index]!.allSent)),
    runtimeMedian: median(runtimeTrials.map((trialResult) => trialResult.allSent)),
    perLoopMedian: median(perLoopTrials.map((trialResult) => trialResult.allSent)),
    hostWrites: median(floors),
    writesPerDispatch: spread(runtimeTrials.map((trialResult) => (trialResult.durableWrites - median(floors)) / loops)),
  }
}

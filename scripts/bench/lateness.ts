/**
 * Row 5: dispatch lateness with real timers and real JSONL persistence. Loops
 * are created through the real tool runtime, paced evenly over one interval so
 * their instants spread out; every agent is idle and its `send` returns at
 * once, so what is measured is the scheduler's own delay. Next to it, a bare
 * `setTimeout` is armed for every instant the moment the instant is known
 * (the `loop/change` event that sets it), in the same process.
 * @module scripts/bench/lateness
 */
import type { SessionEvent } from '@deepseek-ai/dsh-session'
import { bootHost, createAgent, runTool, type FakeAgent } from './host.ts'
import { max, preciseNow, quantile } from './stats.ts'

/** One lateness scenario. */
export interface LatenessScenario {
  readonly label: string
  readonly sessions: number
  readonly loopsPerSession: number
  readonly intervalSeconds: number
  /** Seconds of dispatches measured after every loop exists. */
  readonly measureSeconds: number
}

/**
 * Full and quick scenarios. Quick runs the same loops at the same intervals over a shorter window,
 * so its verdicts judge the same quantities (on fewer samples and one repeat). The two 1,000-loop
 * scenarios measure 10 s (2,000 instants each, so the p99 rests on 20 of them) to keep the full run
 * within its time budget; the 100-loop one keeps 15 s, as 10 s would leave its p99 on 2 instants.
 */
export const LATENESS_SCENARIOS: {
  readonly full: readonly LatenessScenario[]
  readonly quick: readonly LatenessScenario[]
} = {
  full: [
    { label: '1 loop', sessions: 1, loopsPerSession: 1, intervalSeconds: 1, measureSeconds: 10 },
    { label: '100 loops, 1 session', sessions: 1, loopsPerSession: 100, intervalSeconds: 5, measureSeconds: 15 },
    { label: '1,000 loops, 1 session', sessions: 1, loopsPerSession: 1_000, intervalSeconds: 5, measureSeconds: 10 },
    { label: '100 sessions x 10 loops', sessions: 100, loopsPerSession: 10, intervalSeconds: 5, measureSeconds: 10 },
  ],
  quick: [
    { label: '1 loop', sessions: 1, loopsPerSession: 1, intervalSeconds: 1, measureSeconds: 4 },
    { label: '100 loops, 1 session', sessions: 1, loopsPerSession: 100, intervalSeconds: 5, measureSeconds: 5 },
    { label: '1,000 loops, 1 session', sessions: 1, loopsPerSession: 1_000, intervalSeconds: 5, measureSeconds: 5 },
    { label: '100 sessions x 10 loops', sessions: 100, loopsPerSession: 10, intervalSeconds: 5, measureSeconds: 5 },
  ],
}

/** Whether a scenario carries a target (so it is repeated): every scenario but the single loop. */
export function isTargetedScenario(scenario: LatenessScenario): boolean {
  return scenario.sessions * scenario.loopsPerSession > 1
}

/** Delay statistics in ms. */
export interface DelayStats {
  readonly count: number
  readonly p50: number
  readonly p99: number
  readonly max: number
}

/** Row 5 for one scenario. */
export interface LatenessResult {
  readonly scenario: LatenessScenario
  /** next_at to agent.send. */
  readonly loop: DelayStats
  /** next_at to a bare setTimeout callback. */
  readonly bare: DelayStats
  /** Dispatches per second the scenario asks for (loops / interval). */
  readonly offeredPerSecond: number
  /** `dispatch` records appended per second in the window. */
  readonly dispatchesPerSecond: number
  /** `dispatch` records for instants in the window, and how many instants the window held. */
  readonly dispatches: number
  readonly offered: number
  /** `ctx.sessions.flush` calls per dispatch in the window. */
  readonly flushesPerDispatch: number
  /** fsync'd JSONL batch writes per dispatch in the window. */
  readonly diskWritesPerDispatch: number
  /** Time for one `ctx.sessions.flush` to settle during the window (the runtime waits for it before its next dispatch), ms. */
  readonly flush: DelayStats
  /** Occurrences skipped by the anti-burst rule (a dispatch advancing next_at by more than one interval). */
  readonly skipped: number
}

function stats(samples: readonly number[]): DelayStats {
  return { count: samples.length, p50: quantile(samples, 0.5), p99: quantile(samples, 0.99), max: max(samples) }
}

const LOOP_ID = /<loop_id>([^<]*)<\/loop_id>/

/** What the bench knows about one loop: every instant it was due at, in order. */
interface Tracked {
  readonly intervalMs: number
  readonly instants: number[]
}

/**
 * Run one scenario.
 * @param scenario - what to run.
 * @param log - progress output.
 * @returns the measurements.
 */
export async function runLateness(scenario: LatenessScenario, log: (line: string) => void): Promise<LatenessResult> {
  const host = await bootHost({ loopConfig: { maxLoopsPerSession: scenario.loopsPerSession } })
  const tracked = new Map<string, Tracked>()
  const bareTimers = new Set<ReturnType<typeof setTimeout>>()
  let windowStart = Number.POSITIVE_INFINITY
  let windowEnd = Number.POSITIVE_INFINITY
  const loopDelays: number[] = []
  const bareDelays: number[] = []
  let dispatches = 0
  let skipped = 0

  /** Arm the baseline for one instant. */
  const armBare = (instant: number) => {
    const timer = setTimeout(() => {
      bareTimers.delete(timer)
      if (instant >= windowStart && instant < windowEnd) bareDelays.push(preciseNow() - instant)
    }, instant - Date.now())
    bareTimers.add(timer)
  }

  host.ctx.on('session/event', (session, event: SessionEvent) => {
    if (event.type !== 'loop/change') return
    const change = event.data as unknown as {
      operation: string
      id?: string
      next_at?: number
      loop?: { id: string; next_at: number; time_in_seconds: number }
    }
    const key = (id: string) => `${session.id}/${id}`
    if (change.operation === 'create' && change.loop !== undefined) {
      tracked.set(key(change.loop.id), {
        intervalMs: change.loop.time_in_seconds * 1000,
        instants: [change.loop.next_at],
      })
      armBare(change.loop.next_at)
    } else if (change.operation === 'dispatch' && change.id !== undefined && change.next_at !== undefined) {
      const loop = tracked.get(key(change.id))!
      const previous = loop.instants.at(-1)!
      loop.instants.push(change.next_at)
      armBare(change.next_at)
      if (previous >= windowStart && previous < windowEnd) {
        dispatches += 1
        if (change.next_at - previous > loop.intervalMs)
          skipped += Math.round((change.next_at - previous) / loop.intervalMs) - 1
      }
    }
  })

  const agents: FakeAgent[] = []
  for (let index = 0; index < scenario.sessions; index += 1) {
    const fake = await createAgent(host, `lateness-${index}`)
    const sessionId = fake.agent.session.id
    fake.onSend = (message) => {
      const now = preciseNow()
      const text = (message as { content: { text?: string }[] }).content[0]?.text ?? ''
      const id = LOOP_ID.exec(text)?.[1]
      if (id === undefined) return
      // The instant this send serves: the latest one already reached (robust to append-before-send).
      const instants = tracked.get(`${sessionId}/${id}`)?.instants ?? []
      let due: number | undefined
      for (const instant of instants) if (instant <= now) due = instant
      if (due !== undefined && due >= windowStart && due < windowEnd) loopDelays.push(now - due)
    }
    agents.push(fake)
  }

  const total = scenario.sessions * scenario.loopsPerSession
  const spacing = (scenario.intervalSeconds * 1000) / total
  const setupStart = Date.now()
  for (let index = 0; index < total; index += 1) {
    // Session-major interleaving: consecutive creates go to different sessions.
    const fake = agents[index % scenario.sessions]!
    const wait = setupStart + index * spacing - Date.now()
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
    await runTool(host, fake.agent, 'loop_create', {
      prompt: `Heartbeat probe ${index}`,
      time_in_seconds: scenario.intervalSeconds,
    })
  }
  const setupSeconds = (Date.now() - setupStart) / 1000
  /** Instants each loop was due at inside the window, dispatched or not (a skipped one is still offered). */
  const instantsInWindow = () => {
    let offered = 0
    for (const loop of tracked.values()) {
      const first = loop.instants[0]!
      // The loop's cadence from its first instant: every instant first + k × interval inside the window.
      const from = Math.max(0, Math.ceil((windowStart - first) / loop.intervalMs))
      const to = Math.ceil((windowEnd - first) / loop.intervalMs)
      offered += Math.max(0, to - from)
    }
    return offered
  }
  windowStart = Date.now()
  const flushesBefore = host.flushes()
  const flushDurationsBefore = host.flushDurations.length
  const writesBefore = host.diskWrites()
  await new Promise((resolve) => setTimeout(resolve, scenario.measureSeconds * 1000))
  windowEnd = Date.now()
  const flushes = host.flushes() - flushesBefore
  const writes = host.diskWrites() - writesBefore
  const flushDurations = host.flushDurations.slice(flushDurationsBefore, flushDurationsBefore + flushes)
  // Let sends for instants inside the window that are still queued arrive, then stop.
  await new Promise((resolve) => setTimeout(resolve, 1_000))
  await host.dispose()
  for (const timer of bareTimers) clearTimeout(timer)
  const result: LatenessResult = {
    scenario,
    loop: stats(loopDelays),
    bare: stats(bareDelays),
    offeredPerSecond: total / scenario.intervalSeconds,
    dispatchesPerSecond: dispatches / scenario.measureSeconds,
    dispatches,
    offered: instantsInWindow(),
    flushesPerDispatch: dispatches === 0 ? Number.NaN : flushes / dispatches,
    diskWritesPerDispatch: dispatches === 0 ? Number.NaN : writes / dispatches,
    flush: stats(flushDurations),
    skipped,
  }
  log(
    `  ${scenario.label}: setup ${setupSeconds.toFixed(1)} s; loop p50 ${result.loop.p50.toFixed(2)} p99 ${result.loop.p99.toFixed(2)} max ${result.loop.max.toFixed(2)} ms (n=${result.loop.count}); ` +
      `bare p50 ${result.bare.p50.toFixed(2)} p99 ${result.bare.p99.toFixed(2)} max ${result.bare.max.toFixed(2)} ms (n=${result.bare.count}); ` +
      `${result.dispatchesPerSecond.toFixed(1)}/s of ${result.offeredPerSecond}/s offered, ${result.flushesPerDispatch.toFixed(2)} flushes and ${result.diskWritesPerDispatch.toFixed(2)} disk writes per dispatch (flush p50 ${result.flush.p50.toFixed(2)} p99 ${result.flush.p99.toFixed(2)} ms), ${skipped} skipped`,
  )
  return result
}

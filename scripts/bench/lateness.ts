/**
 * Row 3: dispatch lateness with real timers and real JSONL persistence (fsync). Loops are created through the tool
 * runtime, paced evenly over one interval so their instants spread out; every agent is idle and its `send` returns at
 * once, so what is measured is the scheduler's own delay from `next_at` to `agent.send`. The baseline, in the same
 * process at the same time, is a bare `setTimeout` armed for every instant the moment it is known (the `loop/change`
 * that sets it): the event loop's own stalls (GC, fsync callbacks) are in both. Every `ctx.sessions.flush` the plugin
 * awaits is timed as well: the drive flushes once per dispatch (SPEC.md §5 "Runtime"), so a busy session's lateness is set against its own flushes.
 * @module scripts/bench/lateness
 */
import type { SessionEvent } from '@deepseek-ai/dsh-session'
import { bootHost, createAgent, runTool, type FakeAgent } from './host.ts'
import { preciseNow, quantile } from './stats.ts'

/** One scenario of row 3: how many sessions and loops, their interval, and how long the window measures. */
export interface LatenessScenario {
  readonly label: string
  readonly sessions: number
  readonly loopsPerSession: number
  readonly intervalSeconds: number
  /** Seconds of dispatches measured once every loop exists. */
  readonly measureSeconds: number
}

/**
 * A p99 rests on the worst 1% of a window's instants, so each window holds at least a thousand or so (the 100-loop
 * scenario needs 15 s for that); quick runs the same loops over shorter windows.
 */
export function latenessScenarios(quick: boolean): LatenessScenario[] {
  const window = (full: number) => (quick ? 5 : full)
  return [
    {
      label: '100 loops, 1 session',
      sessions: 1,
      loopsPerSession: 100,
      intervalSeconds: 5,
      measureSeconds: window(15),
    },
    {
      label: '100 sessions x 10 loops',
      sessions: 100,
      loopsPerSession: 10,
      intervalSeconds: 5,
      measureSeconds: window(10),
    },
    {
      label: '1,000 loops, 1 session',
      sessions: 1,
      loopsPerSession: 1_000,
      intervalSeconds: 5,
      measureSeconds: window(10),
    },
  ]
}

/** One run of one scenario: its window's lateness, the bare timer's and the session flushes' figures. */
export interface LatenessResult {
  readonly label: string
  /** Sends for instants inside the window, and the p99 of their delay, ms. */
  readonly sends: number
  readonly p99: number
  readonly bareP99: number
  /** `dispatch` records for instants inside the window, and how many instants of any loop the window held. */
  readonly dispatches: number
  readonly offered: number
  /**
   * Flushes started inside the window with events to write, each the drive's flush after one dispatch, and their p50
   * and p99, ms. The drive's flushes with nothing pending return at once and would only pull the p50 down.
   */
  readonly flushes: number
  readonly flushP50: number
  readonly flushP99: number
}

const LOOP_ID = /<loop_id>([^<]*)<\/loop_id>/

/** Run one scenario in a fresh host: create its loops, measure one window, dispose. */
export async function runLateness(scenario: LatenessScenario, log: (line: string) => void): Promise<LatenessResult> {
  const host = await bootHost({ loopConfig: { maxLoopsPerSession: scenario.loopsPerSession } })
  /** Every instant each loop was due at, in order, keyed `session/loop`. */
  const instants = new Map<string, number[]>()
  const bareTimers = new Set<ReturnType<typeof setTimeout>>()
  let windowStart = Number.POSITIVE_INFINITY
  let windowEnd = Number.POSITIVE_INFINITY
  const inWindow = (instant: number) => instant >= windowStart && instant < windowEnd
  const loopDelays: number[] = []
  const bareDelays: number[] = []
  let dispatches = 0
  /** Events each session has appended, and how many of them it had when its latest flush began. */
  const appended = new Map<string, number>()
  const flushedUpTo = new Map<string, number>()
  const flushTimes: number[] = []

  const sessions = host.ctx.sessions
  const flush = sessions.flush
  // An own property of the store every plugin context resolves to, so each flush the drive awaits passes through here.
  sessions.flush = async function (this: typeof sessions, session) {
    const start = preciseNow()
    const count = appended.get(session.id) ?? 0
    const carries = count > (flushedUpTo.get(session.id) ?? 0)
    flushedUpTo.set(session.id, count)
    try {
      return await flush.call(this, session)
    } finally {
      if (carries && inWindow(start)) flushTimes.push(preciseNow() - start)
    }
  }
  const armBare = (instant: number) => {
    const timer = setTimeout(() => {
      bareTimers.delete(timer)
      if (inWindow(instant)) bareDelays.push(preciseNow() - instant)
    }, instant - Date.now())
    bareTimers.add(timer)
  }
  host.ctx.on('session/event', (session, event: SessionEvent) => {
    appended.set(session.id, (appended.get(session.id) ?? 0) + 1)
    if (event.type !== 'loop/change') return
    const change = event.data as {
      operation: string
      id?: string
      next_at?: number
      loop?: { id: string; next_at: number }
    }
    if (change.operation === 'create' && change.loop !== undefined) {
      instants.set(`${session.id}/${change.loop.id}`, [change.loop.next_at])
      armBare(change.loop.next_at)
    } else if (change.operation === 'dispatch' && change.next_at !== undefined) {
      const loop = instants.get(`${session.id}/${change.id}`)!
      if (inWindow(loop.at(-1)!)) dispatches += 1
      loop.push(change.next_at)
      armBare(change.next_at)
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
      // The instant this send serves: the latest one already reached (robust to a dispatch appended before the send).
      const due = (instants.get(`${sessionId}/${id}`) ?? []).findLast((instant) => instant <= now)
      if (due !== undefined && inWindow(due)) loopDelays.push(now - due)
    }
    agents.push(fake)
  }
  const total = scenario.sessions * scenario.loopsPerSession
  const spacing = (scenario.intervalSeconds * 1000) / total
  const setupStart = Date.now()
  for (let index = 0; index < total; index += 1) {
    // Session-major: consecutive creates go to different sessions.
    const fake = agents[index % scenario.sessions]!
    const wait = setupStart + index * spacing - Date.now()
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
    const args = { prompt: `Heartbeat probe ${index}`, time_in_seconds: scenario.intervalSeconds }
    await runTool(host, fake.agent, 'loop_create', args)
  }
  windowStart = Date.now()
  await new Promise((resolve) => setTimeout(resolve, scenario.measureSeconds * 1000))
  windowEnd = Date.now()
  // Sends for instants inside the window that are still queued arrive now.
  await new Promise((resolve) => setTimeout(resolve, 1_000))
  await host.dispose()
  for (const timer of bareTimers) clearTimeout(timer)
  // Offered: every instant first + k × interval of every loop inside the window, dispatched or not.
  const intervalMs = scenario.intervalSeconds * 1000
  const instantsBefore = (first: number, end: number) => Math.max(0, Math.ceil((end - first) / intervalMs))
  let offered = 0
  for (const [first] of instants.values())
    offered += instantsBefore(first!, windowEnd) - instantsBefore(first!, windowStart)
  const result = {
    label: scenario.label,
    sends: loopDelays.length,
    p99: quantile(loopDelays, 0.99),
    bareP99: quantile(bareDelays, 0.99),
    dispatches,
    offered,
    flushes: flushTimes.length,
    flushP50: quantile(flushTimes, 0.5),
    flushP99: quantile(flushTimes, 0.99),
  }
  log(
    `  ${scenario.label}: p99 ${result.p99.toFixed(2)} ms (n=${result.sends}), bare p99 ${result.bareP99.toFixed(2)} ms (n=${bareDelays.length}); ${dispatches} of ${offered} instants dispatched; flush p50 ${result.flushP50.toFixed(2)} ms, p99 ${result.flushP99.toFixed(2)} ms (n=${result.flushes})`,
  )
  return result
}

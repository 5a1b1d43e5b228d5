/**
 * Load with fake timers over a simulated 24 hours, real JSONL persistence:
 * one session with 1,000 loops (the per-session bound raised through the
 * plugin config) and 100 sessions with 10 loops each. Every loop must be
 * dispatched once per due interval, in next_at order, without duplicates, and
 * the durable log must agree with the heartbeats sent.
 */
import { describe, expect, it, vi } from 'vitest'
import {
  createFakeAgent,
  loopChanges,
  persistedLoopChanges,
  runTool,
  settle,
  type FakeAgent,
  type Host,
  useHosts,
} from './support/host.ts'
import { NOW } from './support/epoch.ts'
import { auditDeliveries, occurrencesUntil, recordHeartbeats, type SentHeartbeat } from './support/ledger.ts'

const DAY_MS = 86_400_000
/** Clock step: at most this late, far below every interval, so lateness never costs an occurrence. */
const STEP_MS = 5 * 60_000
/** Each case takes 15–20 s here; the margin is for a machine shared with other test runs. */
const CASE_TIMEOUT_MS = 120_000
const hosts = useHosts()
/** The current test's host. */
let host: Host | undefined

/** Interval of loop `index`: 4 to 12 hours plus a few seconds, so next_at values interleave across loops. */
const intervalOf = (index: number) => 3600 * (4 + (index % 9)) + (index % 97)

/**
 * Move the fake clock through `ms` in steps, firing due timers synchronously and then
 * letting the drives they requested and their real I/O finish. A step wakes each runtime
 * at most once, so a day costs 288 wakes per session instead of one per minute segment;
 * a heartbeat is at most one step late, far less than any interval here.
 */
async function simulate(ms: number): Promise<void> {
  await settle()
  for (let elapsed = 0; elapsed < ms; elapsed += STEP_MS) {
    vi.advanceTimersByTime(Math.min(STEP_MS, ms - elapsed))
    await settle()
  }
}

/** Create `count` loops in one session through the real tool runtime, a batch of concurrent calls at a time. */
async function createLoops(target: FakeAgent, count: number, firstIndex: number): Promise<void> {
  for (let start = 0; start < count; start += 50) {
    const batch = Array.from({ length: Math.min(50, count - start) }, (_, offset) => {
      const index = firstIndex + start + offset
      return runTool(host!, target.agent, 'loop_create', {
        prompt: `load loop ${index}`,
        time_in_seconds: intervalOf(index),
      })
    })
    for (const outcome of await Promise.all(batch)) if (outcome.isError) throw new Error(outcome.error.message)
  }
}

/** Check one session after the simulated day: exact counts, order, no duplicates, log = sends. */
async function expectExactDay(
  target: FakeAgent,
  sessionId: string,
  sent: readonly SentHeartbeat[],
  loops: number,
  until: number,
) {
  const durable = await persistedLoopChanges(host!, sessionId)
  expect(durable).toEqual(loopChanges(target.agent))
  const audit = auditDeliveries(durable, sent)
  expect(audit.violations).toEqual([])
  expect(audit.loops.size).toBe(loops)
  const short = [...audit.loops.values()].filter((ledger) => ledger.dispatches !== occurrencesUntil(ledger, until))
  expect(short.map((ledger) => `${ledger.id}: ${ledger.dispatches} of ${occurrencesUntil(ledger, until)}`)).toEqual([])
  return [...audit.loops.values()].reduce((total, ledger) => total + ledger.dispatches, 0)
}

describe('load over a simulated day', () => {
  it(
    'one session with 1,000 loops',
    async () => {
      host = await hosts.boot({ loopConfig: { maxLoopsPerSession: 1000 } })
      const agent = await createFakeAgent(host, 'ses-load-1000')
      const sent = recordHeartbeats(agent.send)
      await createLoops(agent, 1000, 0)
      await settle()
      const createdAt = Date.now()
      await simulate(DAY_MS)
      const until = createdAt + DAY_MS
      expect(Date.now()).toBe(until)
      const dispatches = await expectExactDay(agent, 'ses-load-1000', sent, 1000, until)
      expect(sent).toHaveLength(dispatches)
      console.info(
        `load: 1 session x 1000 loops, ${dispatches} dispatches over 24 h simulated, created from ${new Date(NOW).toISOString()}`,
      )
    },
    CASE_TIMEOUT_MS,
  )

  it(
    '100 sessions with 10 loops each',
    async () => {
      host = await hosts.boot()
      const sessions: { id: string; agent: FakeAgent; sent: SentHeartbeat[] }[] = []
      for (let index = 0; index < 100; index += 1) {
        const id = `ses-load-${String(index).padStart(3, '0')}`
        const agent = await createFakeAgent(host, id)
        sessions.push({ id, agent, sent: recordHeartbeats(agent.send) })
      }
      for (const [index, session] of sessions.entries()) await createLoops(session.agent, 10, index * 10)
      await settle()
      const createdAt = Date.now()
      await simulate(DAY_MS)
      let dispatches = 0
      for (const session of sessions) {
        dispatches += await expectExactDay(session.agent, session.id, session.sent, 10, createdAt + DAY_MS)
        expect(session.sent.every((heartbeat) => heartbeat.prompt.startsWith('load loop '))).toBe(true)
      }
      // No heartbeat crossed sessions: each session's sends are its own loops (checked by the audit) and all are counted.
      expect(sessions.reduce((total, session) => total + session.sent.length, 0)).toBe(dispatches)
      console.info(`load: 100 sessions x 10 loops, ${dispatches} dispatches over 24 h simulated`)
    },
    CASE_TIMEOUT_MS,
  )
})

/**
 * Real-timer soak: 100 one-second loops in one session for at least two
 * minutes of wall-clock time, real JSONL persistence, fake agent send. Each
 * loop must be dispatched about once per second, never early, never twice for
 * one occurrence, and the durable log must agree with the heartbeats sent.
 * LOOP_SOAK_SECONDS lengthens (never shortens below 120) the run.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { bootHost, createFakeAgent, persistedLoopChanges, runTool, type Host } from '../support/host.ts'
import { auditDeliveries, occurrencesUntil, recordHeartbeats } from '../support/ledger.ts'

const LOOPS = 100
const SOAK_SECONDS = Math.max(120, Number(process.env.LOOP_SOAK_SECONDS ?? 120))
/** Tolerance between the runtime's decision instant and the recorded send: same tick, a few ms under load. */
const DECISION_SLACK_MS = 50
const hosts: Host[] = []
afterAll(async () => {
  for (const host of hosts.splice(0)) await host.dispose()
})

/** The value at a quantile of sorted numbers. */
const quantile = (sorted: readonly number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!

describe('real-timer soak', () => {
  it(`${LOOPS} loops at 1 s for ${SOAK_SECONDS} s: about once per second each, none early, no duplicates, log = sends`, async () => {
    const host = await bootHost({ loopConfig: { maxLoopsPerSession: LOOPS } })
    hosts.push(host)
    const fake = await createFakeAgent(host, 'ses-soak')
    const sent = recordHeartbeats(fake.send)
    const created = await Promise.all(
      Array.from({ length: LOOPS }, (_, index) =>
        runTool(host, fake.agent, 'loop_create', { prompt: `soak loop ${index}`, time_in_seconds: 1 }),
      ),
    )
    for (const outcome of created) if (outcome.isError) throw new Error(outcome.error.message)
    const started = Date.now()
    await new Promise<void>((resolve) => setTimeout(resolve, SOAK_SECONDS * 1000))
    const stopped = Date.now()
    // Disposal waits for the drive in flight, so the log is final when it resolves.
    await fake.handle.dispose()

    const durable = await persistedLoopChanges(host, 'ses-soak')
    const audit = auditDeliveries(durable, sent, DECISION_SLACK_MS)
    expect(audit.violations).toEqual([])
    const ledgers = [...audit.loops.values()]
    expect(ledgers).toHaveLength(LOOPS)
    const counts = ledgers.map((ledger) => ledger.dispatches).sort((a, b) => a - b)
    const possible = ledgers.map((ledger) => occurrencesUntil(ledger, stopped))
    const seconds = (stopped - started) / 1000
    const delays: number[] = []
    for (const ledger of ledgers) {
      const own = sent.filter((heartbeat) => heartbeat.loopId === ledger.id)
      own.forEach((heartbeat, index) => delays.push(heartbeat.at - ledger.schedule[index]!))
    }
    delays.sort((a, b) => a - b)
    console.info(
      [
        `soak: ${LOOPS} loops x 1 s for ${seconds.toFixed(1)} s wall clock`,
        `heartbeats ${sent.length} (${(sent.length / seconds).toFixed(1)}/s), dispatches per loop min ${counts[0]} median ${quantile(counts, 0.5)} max ${counts.at(-1)}, occurrences per loop ${Math.min(...possible)}-${Math.max(...possible)}`,
        `delay after due: p50 ${quantile(delays, 0.5)} ms, p99 ${quantile(delays, 0.99)} ms, max ${delays.at(-1)} ms`,
      ].join('\n'),
    )
    // Every heartbeat has exactly one dispatch (the audit) and none exceeds its occurrences (no burst).
    expect(sent).toHaveLength(counts.reduce((total, count) => total + count, 0))
    for (const [index, ledger] of ledgers.entries()) expect(ledger.dispatches).toBeLessThanOrEqual(possible[index]!)
    // About once per second: a loop may lose an occurrence to a slow moment, never a tenth of them.
    for (const [index, ledger] of ledgers.entries())
      expect(ledger.dispatches).toBeGreaterThanOrEqual(Math.floor(possible[index]! * 0.9))
  })
})

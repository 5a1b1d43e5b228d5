/**
 * The set-up of the scenario suites (test/faults.test.ts, test/going-away.test.ts): a fresh host per test with a root agent on
 * one session, every heartbeat that agent is sent recorded, and the session's log read back
 * through the real JSONL persistence and audited against them.
 */
import { afterEach, beforeEach, expect, vi } from 'vitest'
import type { LoopChange } from '../../src/types.ts'
import { persistedLoopChanges, useFakeHost, type HostFixture } from './host.ts'
import { auditDeliveries, recordHeartbeats, type DeliveryAudit, type SentHeartbeat } from './ledger.ts'

/** What {@link useScenario} hands a test file. */
export interface Scenario {
  /** The test's host and agent ({@link useFakeHost}). */
  readonly rig: HostFixture
  /** The heartbeats the test's agent was sent, in order, recorded afresh for each test. */
  readonly sent: SentHeartbeat[]
  /** The durable `loop/change` records of a session, the test's unless named. */
  durable(session?: string): Promise<LoopChange[]>
  /** Audit a session's durable log (the test's unless named) against heartbeats (the test agent's unless given); the audit must find nothing. */
  expectConsistent(session?: string, heartbeats?: readonly SentHeartbeat[]): Promise<DeliveryAudit>
}

/**
 * The scenario set-up of a test file (registers `beforeEach` and `afterEach` hooks; mocks are restored after each test).
 * @param sessionId - the session of the test's agent.
 * @returns the fixture; read `rig` and `sent` inside a test or hook, not at load.
 */
export function useScenario(sessionId: string): Scenario {
  const rig = useFakeHost(sessionId)
  let sent: SentHeartbeat[] = []
  beforeEach(() => {
    sent = recordHeartbeats(rig.fake.send)
  })
  afterEach(() => {
    vi.restoreAllMocks()
  })
  const durable = (session = sessionId) => persistedLoopChanges(rig.host, session)
  return {
    rig,
    get sent() {
      return sent
    },
    durable,
    async expectConsistent(session = sessionId, heartbeats = sent) {
      const audit = auditDeliveries(await durable(session), heartbeats)
      expect(audit.violations).toEqual([])
      return audit
    },
  }
}

/** A `create` record as the log holds it. */
export const createRecord = (id: string, prompt: string, seconds: number, nextAt: number) => ({
  version: 1,
  operation: 'create',
  loop: { id, prompt, time_in_seconds: seconds, next_at: nextAt },
})

/** A `dispatch` record as the log holds it. */
export const dispatchRecord = (id: string, nextAt: number) => ({
  version: 1,
  operation: 'dispatch',
  id,
  next_at: nextAt,
})

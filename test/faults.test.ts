/**
 * Faults at the real host boundary, with fake timers: flushes that resolve
 * `false`, reject or throw at each point of a call and of a drive (and the exact
 * error the caller gets), a refusing inbox and the backoff of the retries, a
 * failing append, a long outage. Loops due together, clock jumps and agents going
 * away mid-flight have suites of their own. Where loops fire, the test reads the durable log back through the
 * real JSONL persistence and checks it against the heartbeats sent.
 */
import { describe, expect, it, vi } from 'vitest'
import { advance, createsOf, failureMessageOf, failureOf, listedOf, loopChanges, settle } from './support/host.ts'
import { NOW } from './support/epoch.ts'
import { FLUSH_FAULT_CAUSE, FLUSH_FAULTS, failFlush, failNextLoopAppend, type FlushFault } from './support/faults.ts'
import { auditDeliveries } from './support/ledger.ts'
import { createRecord, dispatchRecord, useScenario } from './support/scenario.ts'

const SESSION = 'ses-faults'
const scenario = useScenario(SESSION)
const { rig, durable, expectConsistent } = scenario

/** How the caller is told each flush fault: the cause, named. */
const PERSISTENCE_FAILURE: Readonly<Record<FlushFault, string>> = {
  false: 'Session persistence did not acknowledge the flush; no persistence is mounted for this session.',
  reject: `Session persistence failed: ${FLUSH_FAULT_CAUSE.reject}`,
  throw: `Session persistence failed: ${FLUSH_FAULT_CAUSE.throw}`,
}

/** The error of a call whose change was not saved. */
const persistenceFailed = (message: string) => ({ message, info: { name: 'LoopError', code: 'persistence_failed' } })

/** The error of a call whose change is live but whose save failed: it names the loop and says not to repeat the call. */
const unsavedChange = (tool: 'loop_create' | 'loop_delete', id: string, fault: FlushFault) =>
  persistenceFailed(
    `${tool} changed ${id} in this session (${id} is ${tool === 'loop_create' ? 'active' : 'deleted'} now, as loop_list shows), but saving the change failed, so it may not survive a restart; do not repeat the call. ${PERSISTENCE_FAILURE[fault]}`,
  )

describe('a flush fails before the fold of a tool call', () => {
  it.each(FLUSH_FAULTS)(
    'flush %s: loop_create is refused, nothing is appended, a retry creates exactly one loop',
    async (fault) => {
      const injection = failFlush(rig.host, fault)
      const outcome = await rig.tool('loop_create', { prompt: 'watch CI', time_in_seconds: 10 })
      injection.restore()
      expect(failureOf(outcome)).toEqual(persistenceFailed(PERSISTENCE_FAILURE[fault]))
      expect(injection.sessions).toEqual([rig.fake.agent.session])
      await settle()
      expect(loopChanges(rig.fake.agent)).toEqual([])
      expect(await durable()).toEqual([])

      const id = await rig.create('watch CI', 10)
      await advance(10_000, 1000)
      expect(await durable()).toEqual([
        createRecord(id, 'watch CI', 10, NOW + 10_000),
        dispatchRecord(id, NOW + 20_000),
      ])
      expect(scenario.sent.map((heartbeat) => [heartbeat.loopId, heartbeat.at])).toEqual([[id, NOW + 10_000]])
      await expectConsistent()
    },
  )

  it.each(FLUSH_FAULTS)('flush %s: loop_delete is refused and the loop keeps firing', async (fault) => {
    const id = await rig.create('keep me', 5)
    const injection = failFlush(rig.host, fault)
    const outcome = await rig.tool('loop_delete', { id })
    injection.restore()
    expect(failureOf(outcome)).toEqual(persistenceFailed(PERSISTENCE_FAILURE[fault]))
    await advance(5000, 1000)
    expect(await durable()).toEqual([createRecord(id, 'keep me', 5, NOW + 5000), dispatchRecord(id, NOW + 10_000)])
    expect(scenario.sent.map((heartbeat) => heartbeat.at)).toEqual([NOW + 5000])
    await expectConsistent()
  })

  it('a flush that fails before the fold wins over the check of the id: an unknown id is refused for the flush', async () => {
    failFlush(rig.host, 'throw')
    const outcome = await rig.tool('loop_delete', { id: 'loop_00000001' })
    expect(failureOf(outcome)).toEqual(persistenceFailed(PERSISTENCE_FAILURE.throw))
    expect(loopChanges(rig.fake.agent)).toEqual([])
  })

  it('a flush rejects with something other than an Error: the call names it', async () => {
    vi.spyOn(rig.host.ctx.sessions, 'flush').mockRejectedValue('EIO')
    const outcome = await rig.tool('loop_create', { prompt: 'p', time_in_seconds: 5 })
    expect(failureOf(outcome)).toEqual(persistenceFailed('Session persistence failed: EIO'))
  })
})

describe('a flush fails after the append of a tool call', () => {
  it.each(FLUSH_FAULTS)(
    'flush %s after a create: the caller is told it failed, with the loop id; the list it is told to run answers without saving, and the loop is saved once',
    async (fault) => {
      // Every flush after the first (before the append) fails, as on a full disk.
      const injection = failFlush(rig.host, fault, { after: 1, times: Number.MAX_SAFE_INTEGER })
      const outcome = await rig.tool('loop_create', { prompt: 'half saved', time_in_seconds: 10 })
      const created = loopChanges(rig.fake.agent)
      expect(created).toHaveLength(1)
      const id = createsOf(created)[0]!.loop.id
      // No success for an unconfirmed change; the error names the loop so the caller can list or delete it.
      expect(failureOf(outcome)).toEqual(unsavedChange('loop_create', id, fault))
      // The caller checks the list, as the error tells it to: the loop is there, and the read flushes nothing.
      const flushes = injection.calls()
      expect(listedOf(await rig.tool('loop_list', {}), 'id')).toEqual([id])
      expect(injection.calls()).toBe(flushes)
      injection.restore()
      await advance(9999, 1000)
      expect(await durable()).toEqual([createRecord(id, 'half saved', 10, NOW + 10_000)])
      expect(scenario.sent).toEqual([])
      await advance(1)
      expect(await durable()).toEqual([
        createRecord(id, 'half saved', 10, NOW + 10_000),
        dispatchRecord(id, NOW + 20_000),
      ])
      expect(scenario.sent.map((heartbeat) => heartbeat.at)).toEqual([NOW + 10_000])
      await expectConsistent()
    },
  )

  it.each(FLUSH_FAULTS)(
    'flush %s after a delete: the caller is told it failed, with the loop id; the loop never fires again',
    async (fault) => {
      const id = await rig.create('half deleted', 5)
      const injection = failFlush(rig.host, fault, { after: 1 })
      const outcome = await rig.tool('loop_delete', { id })
      injection.restore()
      expect(failureOf(outcome)).toEqual(unsavedChange('loop_delete', id, fault))
      expect(listedOf(await rig.tool('loop_list', {}), 'id')).toEqual([])
      expect(await durable()).toEqual([
        createRecord(id, 'half deleted', 5, NOW + 5000),
        { version: 1, operation: 'delete', id },
      ])
      await advance(20_000, 1000)
      expect(scenario.sent).toEqual([])
      expect(await durable()).toEqual([
        createRecord(id, 'half deleted', 5, NOW + 5000),
        { version: 1, operation: 'delete', id },
      ])
      await expectConsistent()
    },
  )
})

describe('a flush fails inside a drive', () => {
  it.each(FLUSH_FAULTS)(
    'flush %s before the dispatch decision: nothing is sent, the retry sends once, late but not early',
    async (fault) => {
      const id = await rig.create('retry me', 5)
      await advance(4000, 1000)
      const injection = failFlush(rig.host, fault)
      await advance(1000)
      expect(injection.calls()).toBe(1)
      expect(scenario.sent).toEqual([])
      expect(loopChanges(rig.fake.agent)).toHaveLength(1)
      injection.restore()
      await advance(1000)
      expect(scenario.sent.map((heartbeat) => heartbeat.at)).toEqual([NOW + 6000])
      expect(await durable()).toEqual([createRecord(id, 'retry me', 5, NOW + 5000), dispatchRecord(id, NOW + 10_000)])
      await advance(4000)
      expect(scenario.sent.map((heartbeat) => heartbeat.at)).toEqual([NOW + 6000, NOW + 10_000])
      await expectConsistent()
    },
  )

  it.each(FLUSH_FAULTS)(
    'flush %s after the dispatch append: one send; the retry saves the dispatch once and does not send again',
    async (fault) => {
      const id = await rig.create('sent once', 5)
      await advance(4000, 1000)
      const injection = failFlush(rig.host, fault, { after: 1 })
      await advance(1000)
      injection.restore()
      expect(scenario.sent.map((heartbeat) => heartbeat.at)).toEqual([NOW + 5000])
      expect(await durable()).toEqual([createRecord(id, 'sent once', 5, NOW + 5000)])
      await advance(1000)
      expect(await durable()).toEqual([createRecord(id, 'sent once', 5, NOW + 5000), dispatchRecord(id, NOW + 10_000)])
      expect(scenario.sent).toHaveLength(1)
      await advance(4000)
      expect(scenario.sent.map((heartbeat) => heartbeat.at)).toEqual([NOW + 5000, NOW + 10_000])
      await expectConsistent()
    },
  )
})

describe('a long outage', () => {
  it.each(FLUSH_FAULTS)(
    'flush %s for five minutes: retries back off instead of spinning, then one heartbeat for the whole outage, no burst',
    async (fault) => {
      const id = await rig.create('through an outage', 1)
      const injection = failFlush(rig.host, fault, { times: Number.MAX_SAFE_INTEGER })
      await advance(1000)
      expect(injection.calls()).toBe(1)
      // Each failed attempt retries after twice the delay of the one before: 1 s, 2 s, 4 s, …
      for (const [delay, calls] of [
        [1000, 2],
        [2000, 3],
        [4000, 4],
      ] as const) {
        await advance(delay - 1, 1000)
        expect(injection.calls()).toBe(calls - 1)
        await advance(1)
        expect(injection.calls()).toBe(calls)
      }
      await advance(300_000 - 8000, 10_000)
      expect(scenario.sent).toEqual([])
      // Backoff 1 s doubling to 60 s: about ten attempts in five minutes, not one per second.
      expect(injection.calls()).toBeGreaterThanOrEqual(5)
      expect(injection.calls()).toBeLessThanOrEqual(15)
      injection.restore()
      const restoredAt = Date.now()
      await advance(61_000, 1000)
      const [first] = scenario.sent
      expect(first!.at - restoredAt).toBeLessThanOrEqual(60_000)
      const log = await durable()
      // The first dispatch jumps over the outage to the first second after the send.
      expect(log[1]).toEqual(dispatchRecord(id, first!.at + 1000))
      // Then one per second on the new grid: never more heartbeats than seconds passed.
      expect(scenario.sent.length).toBeLessThanOrEqual(Math.floor((Date.now() - first!.at) / 1000) + 1)
      await expectConsistent()
    },
  )
})

describe('the inbox and the log refuse', () => {
  it('agent.send throws: no dispatch is appended; the retry sends once and records it once', async () => {
    const id = await rig.create('refused once', 5)
    rig.fake.send.mockImplementationOnce(() => {
      throw new Error('inbox closed (injected)')
    })
    await advance(5000)
    expect(rig.fake.send).toHaveBeenCalledTimes(1)
    expect(scenario.sent).toEqual([])
    expect(loopChanges(rig.fake.agent)).toHaveLength(1)
    await advance(1000)
    expect(scenario.sent.map((heartbeat) => heartbeat.at)).toEqual([NOW + 6000])
    expect(await durable()).toEqual([createRecord(id, 'refused once', 5, NOW + 5000), dispatchRecord(id, NOW + 10_000)])
    await expectConsistent()
  })

  it('agent.send keeps refusing: the retry delay doubles after each refusal, up to its cap, and no dispatch is appended', async () => {
    await rig.create('refused again', 1)
    rig.fake.send.mockImplementation(() => {
      throw new Error('inbox closed')
    })
    await advance(1000)
    expect(rig.fake.send).toHaveBeenCalledTimes(1)
    // Retries at +1 s, +2 s, +4 s, … after each refusal; one more send per step.
    for (const [attempt, delay] of [
      [2, 1000],
      [3, 2000],
      [4, 4000],
      [5, 8000],
      [6, 16_000],
      [7, 32_000],
      [8, 60_000],
      [9, 60_000],
    ] as const) {
      await advance(delay - 1, 1000)
      expect(rig.fake.send).toHaveBeenCalledTimes(attempt - 1)
      await advance(1)
      expect(rig.fake.send).toHaveBeenCalledTimes(attempt)
    }
    expect(loopChanges(rig.fake.agent)).toHaveLength(1)
  })

  it('session.append throws on a create: the call fails with the cause, nothing is saved, the next create works', async () => {
    await settle()
    failNextLoopAppend(rig.fake.agent.session)
    const outcome = await rig.tool('loop_create', { prompt: 'never written', time_in_seconds: 5 })
    expect(failureMessageOf(outcome)).toContain('session log sealed (injected)')
    await settle()
    expect(loopChanges(rig.fake.agent)).toEqual([])
    expect(await durable()).toEqual([])
    const id = await rig.create('written', 5)
    await advance(5000)
    expect(await durable()).toEqual([createRecord(id, 'written', 5, NOW + 5000), dispatchRecord(id, NOW + 10_000)])
    await expectConsistent()
  })

  it('session.append throws on a dispatch: the session is not bricked; at most the one unrecorded heartbeat repeats', async () => {
    const id = await rig.create('append fails', 5)
    await advance(4000, 1000)
    failNextLoopAppend(rig.fake.agent.session)
    await advance(1000)
    expect(scenario.sent).toHaveLength(1)
    expect(loopChanges(rig.fake.agent)).toHaveLength(1)
    // Tool calls still work and still see the loop.
    const listed = await rig.tool('loop_list', {})
    expect(listedOf(listed, 'id')).toEqual([id])
    await advance(10_000, 1000)
    const log = await durable()
    const dispatches = log.filter((change) => change.operation === 'dispatch')
    expect(dispatches.length).toBeGreaterThanOrEqual(2)
    // Every heartbeat but the unrecorded one has exactly one dispatch.
    expect(scenario.sent.length).toBe(dispatches.length + 1)
    expect(auditDeliveries(log, scenario.sent.slice(1)).violations).toEqual([])
  })
})

/**
 * Faults at the real host boundary, with fake timers: flushes that resolve `false`, reject or
 * throw at each point of a call (and the exact error the caller gets), and a failing append.
 * Faults inside a drive, refused sends, outages and the retries after them are the simulation's
 * (test/sim/). Where loops fire, the test reads the durable log back through the real JSONL
 * persistence and checks it against the heartbeats sent.
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

describe('the inbox and the log refuse', () => {
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

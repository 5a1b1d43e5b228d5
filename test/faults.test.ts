/**
 * Faults at the real host boundary, with fake timers: flushes that resolve
 * `false`, reject or throw at each point of a call and of a drive (and the exact
 * error the caller gets), a refusing inbox and the backoff of the retries, a
 * failing append, agents and the plugin disposed mid-flight, late timers and
 * clock jumps. Where loops fire, the test reads the durable log back through the
 * real JSONL persistence and checks it against the heartbeats sent.
 */
import { SessionId } from '@deepseek-ai/dsh-session'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import * as loopPlugin from '../src/index.ts'
import { createChange } from '../src/fold.ts'
import { LoopRuntime } from '../src/loop.ts'
import {
  advance,
  createFakeAgent,
  listedIds,
  loopChanges,
  persistedLoopChanges,
  resumeFakeAgent,
  runTool,
  settle,
  useFakeHost,
  type ToolOutcome,
} from './support/host.ts'
import { NOW } from './support/epoch.ts'
import {
  FLUSH_FAULT_CAUSE,
  FLUSH_FAULTS,
  failFlush,
  failNextLoopAppend,
  type FlushFault,
  holdFlushes,
  holdNthFlush,
  observeAppends,
  recordTimers,
} from './support/faults.ts'
import { auditDeliveries, recordHeartbeats, type SentHeartbeat } from './support/ledger.ts'

const SESSION = 'ses-faults'
const rig = useFakeHost(SESSION)
let sent: SentHeartbeat[]

beforeEach(() => {
  sent = recordHeartbeats(rig.fake.send)
})
afterEach(() => {
  vi.restoreAllMocks()
})

/** The caller-facing error of a tool outcome, or a marker that it succeeded. */
function failureOf(outcome: ToolOutcome): { message: string; info?: unknown } | 'succeeded' {
  return outcome.isError ? outcome.error : 'succeeded'
}

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

/** The durable log of the test session. */
const durable = (session = SESSION) => persistedLoopChanges(rig.host, session)

/** The audit must find nothing. */
async function expectConsistent(session = SESSION, heartbeats: readonly SentHeartbeat[] = sent) {
  const audit = auditDeliveries(await durable(session), heartbeats)
  expect(audit.violations).toEqual([])
  return audit
}

const createRecord = (id: string, prompt: string, seconds: number, nextAt: number) => ({
  version: 1,
  operation: 'create',
  loop: { id, prompt, time_in_seconds: seconds, next_at: nextAt },
})
const dispatchRecord = (id: string, nextAt: number) => ({ version: 1, operation: 'dispatch', id, next_at: nextAt })

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
      expect(sent.map((heartbeat) => [heartbeat.loopId, heartbeat.at])).toEqual([[id, NOW + 10_000]])
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
    expect(sent.map((heartbeat) => heartbeat.at)).toEqual([NOW + 5000])
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
      const id = (created[0] as { loop: { id: string } }).loop.id
      // No success for an unconfirmed change; the error names the loop so the caller can list or delete it.
      expect(failureOf(outcome)).toEqual(unsavedChange('loop_create', id, fault))
      // The caller checks the list, as the error tells it to: the loop is there, and the read flushes nothing.
      const flushes = injection.calls()
      expect(listedIds(await rig.tool('loop_list', {}))).toEqual([id])
      expect(injection.calls()).toBe(flushes)
      injection.restore()
      await advance(9999, 1000)
      expect(await durable()).toEqual([createRecord(id, 'half saved', 10, NOW + 10_000)])
      expect(sent).toEqual([])
      await advance(1)
      expect(await durable()).toEqual([
        createRecord(id, 'half saved', 10, NOW + 10_000),
        dispatchRecord(id, NOW + 20_000),
      ])
      expect(sent.map((heartbeat) => heartbeat.at)).toEqual([NOW + 10_000])
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
      expect(listedIds(await rig.tool('loop_list', {}))).toEqual([])
      expect(await durable()).toEqual([
        createRecord(id, 'half deleted', 5, NOW + 5000),
        { version: 1, operation: 'delete', id },
      ])
      await advance(20_000, 1000)
      expect(sent).toEqual([])
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
      expect(sent).toEqual([])
      expect(loopChanges(rig.fake.agent)).toHaveLength(1)
      injection.restore()
      await advance(1000)
      expect(sent.map((heartbeat) => heartbeat.at)).toEqual([NOW + 6000])
      expect(await durable()).toEqual([createRecord(id, 'retry me', 5, NOW + 5000), dispatchRecord(id, NOW + 10_000)])
      await advance(4000)
      expect(sent.map((heartbeat) => heartbeat.at)).toEqual([NOW + 6000, NOW + 10_000])
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
      expect(sent.map((heartbeat) => heartbeat.at)).toEqual([NOW + 5000])
      expect(await durable()).toEqual([createRecord(id, 'sent once', 5, NOW + 5000)])
      await advance(1000)
      expect(await durable()).toEqual([createRecord(id, 'sent once', 5, NOW + 5000), dispatchRecord(id, NOW + 10_000)])
      expect(sent).toHaveLength(1)
      await advance(4000)
      expect(sent.map((heartbeat) => heartbeat.at)).toEqual([NOW + 5000, NOW + 10_000])
      await expectConsistent()
    },
  )
})

describe('loops due together: one drive each, each dispatch flushed before the next send', () => {
  /** Three 5 s loops created together: all due at NOW + 5000, driven one after another in creation order. */
  async function threeLoops(): Promise<[string, string, string]> {
    const ids = [await rig.create('batch A', 5), await rig.create('batch B', 5), await rig.create('batch C', 5)] as [
      string,
      string,
      string,
    ]
    await advance(4000, 1000)
    return ids
  }
  const creates = ([a, b, c]: readonly string[]) => [
    createRecord(a!, 'batch A', 5, NOW + 5000),
    createRecord(b!, 'batch B', 5, NOW + 5000),
    createRecord(c!, 'batch C', 5, NOW + 5000),
  ]

  /** Wrap the recording send so that its `n`-th call (1-based) runs `fault` instead. */
  function onSend(n: number, fault: () => void): void {
    const record = rig.fake.send.getMockImplementation()!
    let calls = 0
    rig.fake.send.mockImplementation((...args) => {
      calls += 1
      if (calls === n) return fault()
      return record(...args)
    })
  }

  it.each(FLUSH_FAULTS)(
    'flush %s after the first dispatch: only the first loop is sent, not durable; the retry saves it and sends the other two once',
    async (fault) => {
      const ids = await threeLoops()
      const injection = failFlush(rig.host, fault, { after: 1 })
      await advance(1000)
      // One flush before deciding, one for the first dispatch; no drive follows a failed flush but the retry.
      expect(injection.calls()).toBe(2)
      injection.restore()
      expect(sent.map((heartbeat) => [heartbeat.loopId, heartbeat.at])).toEqual([[ids[0], NOW + 5000]])
      expect(await durable()).toEqual(creates(ids))
      await advance(1000)
      expect(await durable()).toEqual([...creates(ids), ...ids.map((id) => dispatchRecord(id, NOW + 10_000))])
      expect(sent.map((heartbeat) => [heartbeat.loopId, heartbeat.at])).toEqual([
        [ids[0], NOW + 5000],
        [ids[1], NOW + 6000],
        [ids[2], NOW + 6000],
      ])
      await advance(4000)
      expect(sent).toHaveLength(6)
      await expectConsistent()
    },
  )

  it('session.append throws for the second dispatch: the batch stops there, the first is saved; the retry repeats only the unrecorded heartbeat and sends the third once', async () => {
    const ids = await threeLoops()
    let dispatches = 0
    const spy = observeAppends(rig.fake.agent.session, (type, data) => {
      if (type === 'loop/change' && (data as { operation: string }).operation === 'dispatch' && ++dispatches === 2)
        throw new Error('session log sealed (injected)')
    })
    await advance(1000)
    spy.mockRestore()
    expect(sent.map((heartbeat) => heartbeat.loopId)).toEqual([ids[0], ids[1]])
    expect(await durable()).toEqual([...creates(ids), dispatchRecord(ids[0], NOW + 10_000)])
    await advance(1000)
    expect(sent.map((heartbeat) => [heartbeat.loopId, heartbeat.at])).toEqual([
      [ids[0], NOW + 5000],
      [ids[1], NOW + 5000],
      [ids[1], NOW + 6000],
      [ids[2], NOW + 6000],
    ])
    expect(await durable()).toEqual([...creates(ids), ...ids.map((id) => dispatchRecord(id, NOW + 10_000))])
    // Every heartbeat but the unrecorded one has exactly one dispatch.
    expect(
      auditDeliveries(
        await durable(),
        sent.filter((_heartbeat, index) => index !== 1),
      ).violations,
    ).toEqual([])
  })

  it('agent.send refuses the second loop: the first is sent and saved, the rest wait for the retry and are sent once', async () => {
    const ids = await threeLoops()
    onSend(2, () => {
      throw new Error('inbox closed (injected)')
    })
    await advance(1000)
    expect(sent.map((heartbeat) => heartbeat.loopId)).toEqual([ids[0]])
    expect(await durable()).toEqual([...creates(ids), dispatchRecord(ids[0], NOW + 10_000)])
    await advance(1000)
    expect(sent.map((heartbeat) => [heartbeat.loopId, heartbeat.at])).toEqual([
      [ids[0], NOW + 5000],
      [ids[1], NOW + 6000],
      [ids[2], NOW + 6000],
    ])
    expect(await durable()).toEqual([...creates(ids), ...ids.map((id) => dispatchRecord(id, NOW + 10_000))])
    await expectConsistent()
  })

  it('the agent is disposed while the first dispatch flush is in flight: it is saved once, and the resumed session sends the other two at once and repeats none', async () => {
    const ids = await threeLoops()
    // The drive flushes before it decides, then for its (first) dispatch: hold that second flush.
    const dispatchFlush = holdNthFlush(rig.host, 2)
    await vi.advanceTimersByTimeAsync(1000)
    await settle()
    expect(sent.map((heartbeat) => heartbeat.loopId)).toEqual([ids[0]])
    const disposal = rig.fake.handle.dispose()
    await vi.advanceTimersByTimeAsync(0)
    dispatchFlush.release()
    await disposal
    dispatchFlush.restore()
    expect(await durable()).toEqual([...creates(ids), dispatchRecord(ids[0], NOW + 10_000)])

    const resumed = await resumeFakeAgent(rig.host, SESSION)
    const resumedSent = recordHeartbeats(resumed.send)
    await advance(0)
    expect(resumedSent.map((heartbeat) => [heartbeat.loopId, heartbeat.at])).toEqual([
      [ids[1], NOW + 5000],
      [ids[2], NOW + 5000],
    ])
    await advance(5000)
    expect(resumedSent.map((heartbeat) => [heartbeat.loopId, heartbeat.at])).toEqual([
      [ids[1], NOW + 5000],
      [ids[2], NOW + 5000],
      [ids[0], NOW + 10_000],
      [ids[1], NOW + 10_000],
      [ids[2], NOW + 10_000],
    ])
    await expectConsistent(SESSION, [...sent, ...resumedSent])
  })

  it('the runtime is disposed by its first send while three loops are due: nothing more is sent, the first dispatch is saved, nothing is armed', async () => {
    await rig.reboot({ loop: false })
    const bare = await createFakeAgent(rig.host, 'ses-batch-dispose')
    const bareSent = recordHeartbeats(bare.send)
    const runtime = new LoopRuntime(rig.host.ctx, bare.agent, { oneShotHost: false })
    const ids = ['loop_one', 'loop_two', 'loop_three']
    for (const id of ids)
      bare.agent.session.append(
        'loop/change',
        createChange({ id, prompt: id, time_in_seconds: 5, next_at: NOW + 5000 }),
      )
    const record = bare.send.getMockImplementation()!
    let disposal: Promise<void> | undefined
    bare.send.mockImplementation((...args) => {
      record(...args)
      disposal ??= runtime.dispose()
    })
    const timers = recordTimers()
    runtime.start()
    await advance(5000)
    await disposal
    const armedAfterDisposal = timers.armed.length
    await advance(10_000)
    timers.restore()
    expect(bareSent.map((heartbeat) => heartbeat.loopId)).toEqual(['loop_one'])
    expect(await durable('ses-batch-dispose')).toEqual([
      ...ids.map((id) => createRecord(id, id, 5, NOW + 5000)),
      dispatchRecord('loop_one', NOW + 10_000),
    ])
    expect(timers.armed.length).toBe(armedAfterDisposal)
    expect(vi.getTimerCount()).toBe(0)
  })
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
      expect(sent).toEqual([])
      // Backoff 1 s doubling to 60 s: about ten attempts in five minutes, not one per second.
      expect(injection.calls()).toBeGreaterThanOrEqual(5)
      expect(injection.calls()).toBeLessThanOrEqual(15)
      injection.restore()
      const restoredAt = Date.now()
      await advance(61_000, 1000)
      const [first] = sent
      expect(first!.at - restoredAt).toBeLessThanOrEqual(60_000)
      const log = await durable()
      // The first dispatch jumps over the outage to the first second after the send.
      expect(log[1]).toEqual(dispatchRecord(id, first!.at + 1000))
      // Then one per second on the new grid: never more heartbeats than seconds passed.
      expect(sent.length).toBeLessThanOrEqual(Math.floor((Date.now() - first!.at) / 1000) + 1)
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
    expect(sent).toEqual([])
    expect(loopChanges(rig.fake.agent)).toHaveLength(1)
    await advance(1000)
    expect(sent.map((heartbeat) => heartbeat.at)).toEqual([NOW + 6000])
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
    expect(outcome.isError ? outcome.error.message : 'succeeded').toContain('session log sealed (injected)')
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
    expect(sent).toHaveLength(1)
    expect(loopChanges(rig.fake.agent)).toHaveLength(1)
    // Tool calls still work and still see the loop.
    const listed = await rig.tool('loop_list', {})
    expect(listedIds(listed)).toEqual([id])
    await advance(10_000, 1000)
    const log = await durable()
    const dispatches = log.filter((change) => (change as { operation: string }).operation === 'dispatch')
    expect(dispatches.length).toBeGreaterThanOrEqual(2)
    // Every heartbeat but the unrecorded one has exactly one dispatch.
    expect(sent.length).toBe(dispatches.length + 1)
    expect(auditDeliveries(log, sent.slice(1)).violations).toEqual([])
  })
})

describe('an agent goes away mid-drive', () => {
  it('disposed while the drive waits on its first flush: nothing is sent; the resumed session fires the loop once', async () => {
    const id = await rig.create('mid-drive', 5)
    await advance(4000, 1000)
    const held = holdFlushes(rig.host)
    await vi.advanceTimersByTimeAsync(1000)
    expect(held.waiting()).toBe(1)
    const disposal = rig.fake.handle.dispose()
    await vi.advanceTimersByTimeAsync(0)
    await held.release()
    await disposal
    await advance(5000)
    expect(rig.fake.send).not.toHaveBeenCalled()
    expect(loopChanges(rig.fake.agent)).toEqual([createRecord(id, 'mid-drive', 5, NOW + 5000)])
    expect(await durable()).toEqual([createRecord(id, 'mid-drive', 5, NOW + 5000)])

    const resumed = await resumeFakeAgent(rig.host, SESSION)
    const resumedSent = recordHeartbeats(resumed.send)
    await settle()
    expect(resumedSent.map((heartbeat) => heartbeat.at)).toEqual([NOW + 10_000])
    expect(await durable()).toEqual([createRecord(id, 'mid-drive', 5, NOW + 5000), dispatchRecord(id, NOW + 15_000)])
    await expectConsistent(SESSION, resumedSent)
  })

  it('disposed while the drive waits on a flush that then rejects: no retry timer is armed, nothing is sent', async () => {
    await rig.create('disposed mid-flush', 1)
    await settle()
    const timersWithLoop = vi.getTimerCount()
    let rejectFlush: (reason: unknown) => void = () => undefined
    const spy = vi.spyOn(rig.host.ctx.sessions, 'flush').mockImplementationOnce(
      () =>
        new Promise<boolean>((_, reject) => {
          rejectFlush = reject
        }),
    )
    await vi.advanceTimersByTimeAsync(1000)
    expect(spy).toHaveBeenCalledTimes(1)
    const disposal = rig.fake.handle.dispose()
    await settle() // disposal now waits for the drive, which waits for the flush
    rejectFlush('storage detached')
    await disposal
    spy.mockRestore()
    // The loop's timer was cleared by the drive and no retry timer was armed after disposal.
    expect(vi.getTimerCount()).toBe(timersWithLoop - 1)
    await advance(5000)
    expect(rig.fake.send).not.toHaveBeenCalled()
  })

  it('disposed while the dispatch flush is in flight: the dispatch is saved once and the resumed session does not repeat it', async () => {
    const id = await rig.create('saved on the way out', 5)
    await advance(4000, 1000)
    // The drive flushes before it decides, then for its (first) dispatch: hold that second flush.
    const dispatchFlush = holdNthFlush(rig.host, 2)
    await vi.advanceTimersByTimeAsync(1000)
    await settle()
    expect(sent).toHaveLength(1)
    const disposal = rig.fake.handle.dispose()
    await vi.advanceTimersByTimeAsync(0)
    dispatchFlush.release()
    await disposal
    dispatchFlush.restore()
    expect(await durable()).toEqual([
      createRecord(id, 'saved on the way out', 5, NOW + 5000),
      dispatchRecord(id, NOW + 10_000),
    ])

    const resumed = await resumeFakeAgent(rig.host, SESSION)
    const resumedSent = recordHeartbeats(resumed.send)
    await advance(4999)
    expect(resumedSent).toEqual([])
    await advance(1)
    expect(resumedSent.map((heartbeat) => heartbeat.at)).toEqual([NOW + 10_000])
    await expectConsistent(SESSION, [...sent, ...resumedSent])
  })

  it('a replacement cannot go live while the old drive is in flight; once the old one is gone it fires the loop once', async () => {
    const id = await rig.create('replaced', 5)
    await advance(4000, 1000)
    const held = holdFlushes(rig.host)
    await vi.advanceTimersByTimeAsync(1000)
    const disposal = rig.fake.handle.dispose()
    await vi.advanceTimersByTimeAsync(0)
    // The host keeps the old root registered and its session live until the plugin's cleanup ends.
    expect(rig.host.ctx.agents.get(SessionId(SESSION))).toBe(rig.fake.agent)
    await expect(resumeFakeAgent(rig.host, SESSION)).rejects.toThrow(
      `cannot prepare session "${SESSION}" while it is live`,
    )
    await held.release()
    await disposal
    const replacement = await resumeFakeAgent(rig.host, SESSION)
    const replacementSent = recordHeartbeats(replacement.send)
    await settle()
    expect(sent).toEqual([])
    expect(replacementSent.map((heartbeat) => heartbeat.loopId)).toEqual([id])
    await expectConsistent(SESSION, replacementSent)
  })
})

describe('the plugin goes away mid-flight', () => {
  it('plugin disposed with a drive, a create and a timer in flight: nothing more is sent or appended, no timer stays', async () => {
    await rig.reboot({ loop: false })
    const baseTimers = vi.getTimerCount()
    const fiber = rig.host.ctx.plugin(loopPlugin)
    await fiber
    const busy = await createFakeAgent(rig.host, 'ses-busy')
    const busySent = recordHeartbeats(busy.send)
    const idle = await createFakeAgent(rig.host, 'ses-idle')
    const idleSent = recordHeartbeats(idle.send)
    const busyId = await rig.create('in the drive', 1, busy)
    const idleId = await rig.create('armed', 60, idle)
    await settle()

    const held = holdFlushes(rig.host)
    await vi.advanceTimersByTimeAsync(1000) // busy's drive waits on its flush
    const creating = runTool(rig.host, busy.agent, 'loop_create', {
      prompt: 'queued behind the drive',
      time_in_seconds: 1,
    })
    await vi.advanceTimersByTimeAsync(0)
    const disposal = fiber.dispose()
    await vi.advanceTimersByTimeAsync(0)
    await held.release()
    await disposal
    expect(failureOf(await creating)).toMatchObject({ info: { code: 'agent_unavailable' } })
    expect(vi.getTimerCount()).toBe(baseTimers)
    await advance(120_000, 1000)
    expect([...busySent, ...idleSent]).toEqual([])
    expect(await durable('ses-busy')).toEqual([createRecord(busyId, 'in the drive', 1, NOW + 1000)])
    expect(await durable('ses-idle')).toEqual([createRecord(idleId, 'armed', 60, NOW + 60_000)])
  })

  it('a timer that fires after its agent was disposed does nothing', async () => {
    const timers = recordTimers()
    await rig.create('late timer', 7)
    await settle()
    const armed = timers.armed.filter((timer) => timer.delay === 7000)
    expect(armed).toHaveLength(1)
    await rig.fake.handle.dispose()
    const flushes = failFlush(rig.host, 'reject', { after: Number.MAX_SAFE_INTEGER })
    const armedBefore = timers.armed.length
    armed[0]!.callback()
    await advance(10_000, 1000)
    expect(flushes.calls()).toBe(0)
    expect(timers.armed.slice(armedBefore).filter((timer) => timer.delay > 0)).toEqual([])
    expect(rig.fake.send).not.toHaveBeenCalled()
    expect(loopChanges(rig.fake.agent)).toHaveLength(1)
    expect(await durable()).toEqual(loopChanges(rig.fake.agent))
  })

  it('a timer that fires after the plugin was disposed does nothing', async () => {
    await rig.reboot({ loop: false })
    const fiber = rig.host.ctx.plugin(loopPlugin)
    await fiber
    const agent = await createFakeAgent(rig.host, SESSION)
    const timers = recordTimers()
    await rig.create('late timer', 7, agent)
    await settle()
    const armed = timers.armed.filter((timer) => timer.delay === 7000)
    expect(armed).toHaveLength(1)
    await fiber.dispose()
    const flushes = failFlush(rig.host, 'reject', { after: Number.MAX_SAFE_INTEGER })
    armed[0]!.callback()
    await advance(10_000, 1000)
    expect(flushes.calls()).toBe(0)
    expect(agent.send).not.toHaveBeenCalled()
    expect(await durable()).toEqual(loopChanges(agent.agent))
    expect(loopChanges(agent.agent)).toHaveLength(1)
  })
})

describe('the clock jumps', () => {
  it('forward by three days: each long loop fires once within a minute, then on its new grid, no burst', async () => {
    const hourly = await rig.create('every hour', 3600)
    const daily = await rig.create('every day', 86_400)
    await advance(5000, 1000)
    const jumpedTo = NOW + 3 * 86_400_000 + 5000
    vi.setSystemTime(jumpedTo)
    await advance(60_000, 1000)
    // Three missed days are one heartbeat per loop, noticed within one timer segment.
    expect(sent.map((heartbeat) => heartbeat.loopId).sort()).toEqual([hourly, daily].sort())
    expect(sent.every((heartbeat) => heartbeat.at <= jumpedTo + 60_000)).toBe(true)
    await advance(2 * 3_600_000, 60_000)
    expect(sent.filter((heartbeat) => heartbeat.loopId === hourly)).toHaveLength(3)
    expect(sent.filter((heartbeat) => heartbeat.loopId === daily)).toHaveLength(1)
    await expectConsistent()
  })

  it('forward by three days with a ten-second loop: one heartbeat for the missed span, then one per interval', async () => {
    const fast = await rig.create('every ten seconds', 10)
    await advance(5000, 1000)
    const jumpedTo = NOW + 3 * 86_400_000 + 5000
    vi.setSystemTime(jumpedTo)
    await advance(60_000, 1000)
    // Due at the old +10 s mark, sent once at jumpedTo + 5 s, then every ten seconds on the old grid.
    expect(sent.map((heartbeat) => heartbeat.at - jumpedTo)).toEqual([5000, 15_000, 25_000, 35_000, 45_000, 55_000])
    expect(sent.every((heartbeat) => heartbeat.loopId === fast)).toBe(true)
    await expectConsistent()
  })

  it('backwards by two days while the log refuses the correction: nothing is sent, the retry reschedules it once', async () => {
    const id = await rig.create('hourly', 3600)
    await advance(600_000, 60_000)
    const jumpedTo = NOW + 600_000 - 2 * 86_400_000
    vi.setSystemTime(jumpedTo)
    const refusal = failNextLoopAppend(rig.fake.agent.session)
    // The first attempt comes within a minute (the timer's longest wait) and is refused; the retry a second later.
    await advance(62_000, 1000)
    expect(refusal.mock.calls.filter(([type]) => type === 'loop/change')).toHaveLength(2)
    refusal.mockRestore()
    expect(sent).toEqual([])
    const log = await durable()
    expect(log).toHaveLength(2)
    const [, correction] = log as { operation: string; id: string; next_at: number }[]
    expect(correction).toEqual(dispatchRecord(id, correction!.next_at))
    // Rescheduled by the retry, about a second after the refused attempt: one interval from then.
    expect(correction!.next_at - 3_600_000 - jumpedTo).toBeLessThanOrEqual(62_000)
    expect(correction!.next_at - 3_600_000).toBeGreaterThan(jumpedTo)
  })

  it('backwards by two days: the loop is rescheduled durably within a minute, without a send, and fires at its new time, not early', async () => {
    const id = await rig.create('hourly', 3600)
    await advance(600_000, 60_000)
    const appendTimes: number[] = []
    observeAppends(rig.fake.agent.session, (type) => {
      if (type === 'loop/change') appendTimes.push(Date.now())
    })
    const jumpedTo = NOW + 600_000 - 2 * 86_400_000
    vi.setSystemTime(jumpedTo)
    await advance(60_000, 1000)
    expect(sent).toEqual([])
    const log = await durable()
    expect(log).toHaveLength(2)
    expect(appendTimes).toHaveLength(1)
    const rescheduledAt = appendTimes[0]!
    expect(rescheduledAt - jumpedTo).toBeLessThanOrEqual(60_000)
    expect(log[1]).toEqual(dispatchRecord(id, rescheduledAt + 3_600_000))
    await advance(rescheduledAt + 3_600_000 - 1 - Date.now(), 60_000)
    expect(sent).toEqual([])
    await advance(1)
    expect(sent.map((heartbeat) => heartbeat.at)).toEqual([rescheduledAt + 3_600_000])
    expect((await durable())[2]).toEqual(dispatchRecord(id, rescheduledAt + 7_200_000))
  })
})

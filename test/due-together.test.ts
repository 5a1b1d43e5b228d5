/**
 * Loops due together, with fake timers on a real host: one drive each, in next_at order, each dispatch
 * flushed before the next send; a batch decided on the agent as the batch left it; and a fault at each
 * point of a batch (a failing flush, a refused send, a throwing append, the agent disposed by its first
 * send). The durable log is read back through the real JSONL persistence and audited against the sends.
 */
import { describe, expect, it, vi } from 'vitest'
import { createChange } from '../src/fold.ts'
import {
  advance,
  createFakeAgent,
  loopChanges,
  ownRuntime,
  persistedLoopChanges,
  resumeFakeAgent,
  sentTexts,
  settle,
} from './support/host.ts'
import { NOW } from './support/epoch.ts'
import {
  FLUSH_FAULTS,
  failFlush,
  holdNthFlush,
  observeAppends,
  observeFlushes,
  recordTimers,
} from './support/faults.ts'
import { heartbeatText } from './support/heartbeat-xml.ts'
import { auditDeliveries, recordHeartbeats } from './support/ledger.ts'
import { heartbeatMessage } from './support/loop-fixtures.ts'
import { createRecord, dispatchRecord, useScenario } from './support/scenario.ts'

const SESSION = 'ses-due-together'
const scenario = useScenario(SESSION)
const { rig, durable, expectConsistent } = scenario

describe('loops overdue together', () => {
  it('drives 20 loops overdue together one at a time (SPEC.md §5 "Runtime", the drive): next_at order, each dispatch flushed before the next send', async () => {
    // Created in this order; overdue by different amounts, so they fall due in reverse creation order.
    const ids: string[] = []
    for (let index = 0; index < 20; index += 1) ids.push(await rig.create(`P${index}`, 40 - index))
    await settle()
    vi.setSystemTime(NOW + 100_000) // asleep: all twenty are overdue
    const steps: string[] = []
    const flush = observeFlushes(rig.host, () => steps.push('flush'))
    rig.fake.send.mockImplementation((message) => {
      steps.push(`send ${/<prompt>(P\d+)<\/prompt>/.exec((message.content[0] as { text: string }).text)![1]}`)
    })
    const append = observeAppends(rig.fake.agent.session, (_type, data) =>
      steps.push(`append P${ids.indexOf((data as { id: string }).id)}`),
    )
    // The timer waits for the 21 s loop (P19); when it fires, all twenty are due.
    await advance(21_000)
    flush.mockRestore()
    append.mockRestore()
    const order = Array.from({ length: 20 }, (_, index) => `P${19 - index}`)
    expect(steps).toEqual([...order.flatMap((name) => ['flush', `send ${name}`, `append ${name}`, 'flush']), 'flush'])
    expect(await persistedLoopChanges(rig.host, SESSION)).toEqual(loopChanges(rig.fake.agent))
  })

  it("decides each loop of a batch on the agent as the batch left it: the first's wake-up started the turn that took the second's heartbeats", async () => {
    const first = await rig.create('first', 2)
    const second = await rig.create('second', 3)
    await settle()
    // Two stale heartbeats of the second loop wait in the idle agent's inbox (a log from another build).
    const stale = () => heartbeatMessage(second, { prompt: 'second' })
    rig.fake.agent.inbox.append('next-step', stale())
    rig.fake.agent.inbox.append('next-turn', stale())
    // Like DSH: a waking send to an idle agent starts a turn that claims at once (all next-step input and the first queued turn).
    rig.fake.send.mockImplementation((message, target) => {
      rig.fake.agent.inbox.append(target, message)
      if (rig.fake.agent.status === 'idle') {
        rig.fake.setStatus('running')
        rig.fake.agent.inbox.claim('next-turn', 1)
      }
    })
    vi.setSystemTime(NOW + 3000) // when the timer (2 s) fires, both are due: first (at 2 s), then second (3 s)
    await advance(2000)
    // The first's wake-up claimed both stale heartbeats into the turn it started: the second, due in a running turn
    // that already took its heartbeat, coalesces (decided on the idle agent from before, it would replace them instead).
    expect(
      rig.fake.send.mock.calls.map(([message, target]) => [(message.content[0] as { text: string }).text, target]),
    ).toEqual([[heartbeatText(first, 'first'), 'next-turn']])
    expect(rig.fake.agent.inbox.nextTurn.map((message) => (message.content[0] as { text: string }).text)).toEqual([
      heartbeatText(first, 'first'),
    ])
    expect(loopChanges(rig.fake.agent).slice(-2)).toMatchObject([
      { operation: 'dispatch', id: first },
      { operation: 'dispatch', id: second },
    ])
  })

  it('dispatches every overdue loop once, earliest first, each in its own send', async () => {
    const a = await rig.create('A', 4)
    const b = await rig.create('B', 2)
    const c = await rig.create('C', 3)
    vi.setSystemTime(NOW + 10_000) // the process was asleep: all three are overdue
    await advance(2000)
    expect(sentTexts(rig.fake)).toEqual([heartbeatText(b, 'B'), heartbeatText(c, 'C'), heartbeatText(a, 'A')])
  })
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
      expect(scenario.sent.map((heartbeat) => [heartbeat.loopId, heartbeat.at])).toEqual([[ids[0], NOW + 5000]])
      expect(await durable()).toEqual(creates(ids))
      await advance(1000)
      expect(await durable()).toEqual([...creates(ids), ...ids.map((id) => dispatchRecord(id, NOW + 10_000))])
      expect(scenario.sent.map((heartbeat) => [heartbeat.loopId, heartbeat.at])).toEqual([
        [ids[0], NOW + 5000],
        [ids[1], NOW + 6000],
        [ids[2], NOW + 6000],
      ])
      await advance(4000)
      expect(scenario.sent).toHaveLength(6)
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
    expect(scenario.sent.map((heartbeat) => heartbeat.loopId)).toEqual([ids[0], ids[1]])
    expect(await durable()).toEqual([...creates(ids), dispatchRecord(ids[0], NOW + 10_000)])
    await advance(1000)
    expect(scenario.sent.map((heartbeat) => [heartbeat.loopId, heartbeat.at])).toEqual([
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
        scenario.sent.filter((_heartbeat, index) => index !== 1),
      ).violations,
    ).toEqual([])
  })

  it('agent.send refuses the second loop: the first is sent and saved, the rest wait for the retry and are sent once', async () => {
    const ids = await threeLoops()
    onSend(2, () => {
      throw new Error('inbox closed (injected)')
    })
    await advance(1000)
    expect(scenario.sent.map((heartbeat) => heartbeat.loopId)).toEqual([ids[0]])
    expect(await durable()).toEqual([...creates(ids), dispatchRecord(ids[0], NOW + 10_000)])
    await advance(1000)
    expect(scenario.sent.map((heartbeat) => [heartbeat.loopId, heartbeat.at])).toEqual([
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
    expect(scenario.sent.map((heartbeat) => heartbeat.loopId)).toEqual([ids[0]])
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
    await expectConsistent(SESSION, [...scenario.sent, ...resumedSent])
  })

  it('the runtime is disposed by its first send while three loops are due: nothing more is sent, the first dispatch is saved, nothing is armed', async () => {
    await rig.reboot({ loop: false })
    const bare = await createFakeAgent(rig.host, 'ses-batch-dispose')
    const bareSent = recordHeartbeats(bare.send)
    const runtime = ownRuntime(rig.host, bare.agent)
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

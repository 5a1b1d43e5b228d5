import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { SessionId } from '@deepseek-ai/dsh-session'
import { FIRST_RETRY_DELAY_MS, LoopRuntime, MAX_TIMER_WAIT_MS, chooseDelivery } from '../src/loop.ts'
import * as loopPlugin from '../src/index.ts'
import { failFlush, holdFlushes, recordTimers } from './support/faults.ts'
import { createChange } from '../src/domain.ts'
import { createUserMessage } from '@deepseek-ai/dsh-llm'
import {
  AGENT_OPTIONS,
  advance,
  bootHost,
  createFakeAgent,
  useFakeClock,
  loopChanges,
  persistedLoopChanges,
  resumeFakeAgent,
  runTool,
  settle,
  signal,
  type FakeAgent,
  type Host,
  startFakeHost,
  stopFakeHost,
  TEST_NOW,
} from './support/host.ts'

const NOW = TEST_NOW
let host: Host
let fake: FakeAgent
beforeEach(async () => {
  ;({ host, fake } = await startFakeHost('ses-run'))
})
afterEach(() => stopFakeHost(host))

/** Create a loop through the real tool and return its id. */
async function create(prompt: string, seconds: number, target: FakeAgent = fake): Promise<string> {
  const result = await runTool(host, target.agent, 'loop_create', { prompt, time_in_seconds: seconds })
  if (result.isError) throw new Error(result.error.message)
  return (result.value as { id: string }).id
}

/** The exact heartbeat text for an id and prompt. */
const heartbeat = (id: string, prompt: string) =>
  `<heartbeat>\n  <loop_id>${id}</loop_id>\n  <prompt>${prompt}</prompt>\n</heartbeat>`

/** The heartbeat text of each send, in order. */
const sentTexts = (target: FakeAgent = fake) =>
  target.send.mock.calls.map(([message]) => (message.content[0] as { text: string }).text)

describe('delivery', () => {
  it('sends a one-second loop exactly once at its due boundary, idle → next-turn with wakeup', async () => {
    const id = await create('Check whether the build is still healthy', 1)
    await advance(999)
    expect(fake.send).not.toHaveBeenCalled()
    await advance(1)
    expect(fake.send).toHaveBeenCalledTimes(1)
    const [message, target, wakeup] = fake.send.mock.calls[0]!
    expect(target).toBe('next-turn')
    expect(wakeup).toBe(true)
    expect(message).toEqual({
      id: expect.any(String),
      role: 'user',
      content: [{ type: 'text', text: heartbeat(id, 'Check whether the build is still healthy') }],
      source: { kind: 'plugin', plugin: 'loop' },
    })
    expect(fake.steer).not.toHaveBeenCalled()
    expect(fake.followup).not.toHaveBeenCalled()
    expect(loopChanges(fake.agent)).toEqual([
      {
        version: 1,
        operation: 'create',
        loop: { id, prompt: 'Check whether the build is still healthy', time_in_seconds: 1, next_at: NOW + 1000 },
      },
      { version: 1, operation: 'dispatch', id, next_at: NOW + 2000 },
    ])
    expect(await persistedLoopChanges(host, 'ses-run')).toEqual(loopChanges(fake.agent))
  })

  it('keeps recurring: three seconds of a one-second loop are three sends', async () => {
    await create('tick', 1)
    await advance(3000)
    expect(fake.send).toHaveBeenCalledTimes(3)
    expect(
      loopChanges(fake.agent)
        .slice(1)
        .map((change) => (change as { next_at: number }).next_at),
    ).toEqual([NOW + 2000, NOW + 3000, NOW + 4000])
  })

  it('sends next-step with wakeup when the agent is running', async () => {
    const id = await create('while busy', 2)
    fake.setStatus('running')
    await advance(2000)
    expect(fake.send.mock.calls).toEqual([
      [expect.objectContaining({ content: [{ type: 'text', text: heartbeat(id, 'while busy') }] }), 'next-step', true],
    ])
    fake.setStatus('idle')
    await advance(2000)
    expect(fake.send.mock.calls.map(([, target, wakeup]) => [target, wakeup])).toEqual([
      ['next-step', true],
      ['next-turn', true],
    ])
    expect(fake.steer).not.toHaveBeenCalled()
    expect(fake.followup).not.toHaveBeenCalled()
  })

  it('runs a drive as flush, send, append of the dispatch, flush, in exactly that order', async () => {
    const id = await create('in order', 1)
    await settle()
    const steps: string[] = []
    const realFlush = host.ctx.sessions.flush
    const flush = vi.spyOn(host.ctx.sessions, 'flush').mockImplementation((session) => {
      steps.push(`flush ${session.id}`)
      return realFlush(session)
    })
    fake.send.mockImplementation((message, target) => {
      steps.push(
        `send ${(message.content[0] as { text: string }).text === heartbeat(id, 'in order') ? id : 'other'} ${target}`,
      )
    })
    const session = fake.agent.session
    const realAppend = session.append.bind(session) as (
      type: string,
      data: unknown,
    ) => ReturnType<typeof session.append>
    const append = vi.spyOn(session, 'append').mockImplementation(((type: string, data: unknown) => {
      steps.push(`append ${type} ${JSON.stringify(data)}`)
      return realAppend(type, data)
    }) as typeof session.append)
    await advance(1000)
    flush.mockRestore()
    append.mockRestore()
    expect(steps).toEqual([
      'flush ses-run',
      `send ${id} next-turn`,
      `append loop/change ${JSON.stringify({ version: 1, operation: 'dispatch', id, next_at: NOW + 2000 })}`,
      'flush ses-run',
      // Step 11: the drive it requests flushes, finds nothing due and arms the timer.
      'flush ses-run',
    ])
    expect(await persistedLoopChanges(host, 'ses-run')).toEqual(loopChanges(fake.agent))
  })

  it('drives 20 loops overdue together one at a time (§7.2): next_at order, each dispatch flushed before the next send', async () => {
    // Created in this order; overdue by different amounts, so they fall due in reverse creation order.
    const ids: string[] = []
    for (let index = 0; index < 20; index += 1) ids.push(await create(`P${index}`, 40 - index))
    await settle()
    vi.setSystemTime(NOW + 100_000) // asleep: all twenty are overdue
    const steps: string[] = []
    const realFlush = host.ctx.sessions.flush
    const flush = vi.spyOn(host.ctx.sessions, 'flush').mockImplementation((session) => {
      steps.push('flush')
      return realFlush(session)
    })
    fake.send.mockImplementation((message) => {
      steps.push(`send ${/<prompt>(P\d+)<\/prompt>/.exec((message.content[0] as { text: string }).text)![1]}`)
    })
    const session = fake.agent.session
    const realAppend = session.append.bind(session) as (
      type: string,
      data: unknown,
    ) => ReturnType<typeof session.append>
    const append = vi.spyOn(session, 'append').mockImplementation(((type: string, data: unknown) => {
      steps.push(`append P${ids.indexOf((data as { id: string }).id)}`)
      return realAppend(type, data)
    }) as typeof session.append)
    // The timer waits for the 21 s loop (P19); when it fires, all twenty are due.
    await advance(21_000)
    flush.mockRestore()
    append.mockRestore()
    const order = Array.from({ length: 20 }, (_, index) => `P${19 - index}`)
    expect(steps).toEqual([...order.flatMap((name) => ['flush', `send ${name}`, `append ${name}`, 'flush']), 'flush'])
    expect(await persistedLoopChanges(host, 'ses-run')).toEqual(loopChanges(fake.agent))
  })

  it('decides each loop of a batch on the inbox as the batch left it: a heartbeat its own wake-up claimed no longer waits', async () => {
    const first = await create('first', 2)
    const second = await create('second', 3)
    await settle()
    // Two stale heartbeats of the second loop wait in the idle agent's inbox (a log from another build).
    const stale = () =>
      createUserMessage({
        content: [{ type: 'text', text: heartbeat(second, 'second') }],
        source: { kind: 'plugin', plugin: 'loop' },
      })
    fake.agent.inbox.append('next-step', stale())
    fake.agent.inbox.append('next-turn', stale())
    // Like DSH: a waking send to an idle agent starts a turn that claims at once (all next-step input and the first queued turn).
    fake.send.mockImplementation((message, target) => {
      fake.agent.inbox.append(target, message)
      if (fake.agent.status === 'idle') {
        fake.setStatus('running')
        fake.agent.inbox.claim('next-turn', 1)
      }
    })
    vi.setSystemTime(NOW + 3000) // when the timer (2 s) fires, both are due: first (at 2 s), then second (3 s)
    await advance(2000)
    // The first's wake-up claimed both stale heartbeats into the open turn: the second goes to the next turn, not coalesced.
    expect(
      fake.send.mock.calls.map(([message, target]) => [(message.content[0] as { text: string }).text, target]),
    ).toEqual([
      [heartbeat(first, 'first'), 'next-turn'],
      [heartbeat(second, 'second'), 'next-turn'],
    ])
    expect(fake.agent.inbox.nextTurn.map((message) => (message.content[0] as { text: string }).text)).toEqual([
      heartbeat(first, 'first'),
      heartbeat(second, 'second'),
    ])
  })

  it('escapes the id and prompt inside the heartbeat', async () => {
    const id = await create(`Is "main" <green> & 'ok'?`, 1)
    await advance(1000)
    expect(sentTexts()).toEqual([heartbeat(id, 'Is &quot;main&quot; &lt;green&gt; &amp; &apos;ok&apos;?')])
  })
})

describe('timer', () => {
  it('arms one timer for the earliest loop and dispatches several loops in next_at order', async () => {
    const slow = await create('slow', 3)
    const fast = await create('fast', 2)
    expect(vi.getTimerCount()).toBe(1)
    await advance(2000)
    expect(sentTexts()).toEqual([heartbeat(fast, 'fast')])
    await advance(1000)
    expect(sentTexts()).toEqual([heartbeat(fast, 'fast'), heartbeat(slow, 'slow')])
    expect(vi.getTimerCount()).toBe(1)
  })

  it('dispatches every overdue loop once, earliest first, each in its own send', async () => {
    const a = await create('A', 4)
    const b = await create('B', 2)
    const c = await create('C', 3)
    vi.setSystemTime(NOW + 10_000) // the process was asleep: all three are overdue
    await advance(2000)
    expect(sentTexts()).toEqual([heartbeat(b, 'B'), heartbeat(c, 'C'), heartbeat(a, 'A')])
  })

  it('does not burst missed intervals: one heartbeat, next occurrence in the future', async () => {
    const id = await create('tick', 1)
    vi.setSystemTime(NOW + 5000) // five intervals pass without the timer firing
    await advance(1000)
    expect(fake.send).toHaveBeenCalledTimes(1)
    expect(loopChanges(fake.agent).at(-1)).toEqual({ version: 1, operation: 'dispatch', id, next_at: NOW + 7000 })
  })

  it('waits at most a minute at a time, re-reading the clock, and fires a far loop on time', async () => {
    const seconds = 3 * 3600 // three hours: 180 one-minute waits
    await create('every three hours', seconds)
    await advance(MAX_TIMER_WAIT_MS - 1, MAX_TIMER_WAIT_MS)
    expect(vi.getTimerCount()).toBe(1)
    await advance(seconds * 1000 - MAX_TIMER_WAIT_MS, MAX_TIMER_WAIT_MS)
    expect(fake.send).not.toHaveBeenCalled()
    await advance(1)
    expect(fake.send).toHaveBeenCalledTimes(1)
  })

  it('fires an overdue loop within a minute when the wall clock jumps while the timer waits (sleep)', async () => {
    const id = await create('hourly', 3600)
    await advance(1000)
    // The machine sleeps for two hours: the wall clock moves, the timer does not count it.
    vi.setSystemTime(Date.now() + 2 * 3_600_000)
    await advance(MAX_TIMER_WAIT_MS, 1000)
    expect(sentTexts()).toEqual([heartbeat(id, 'hourly')])
    expect(loopChanges(fake.agent).at(-1)).toEqual({
      version: 1,
      operation: 'dispatch',
      id,
      next_at: NOW + 3 * 3_600_000,
    })
  })

  it('reschedules durably a loop whose next_at the clock left more than one interval ahead', async () => {
    vi.setSystemTime(NOW + 365 * 86_400_000) // the clock jumped a year ahead
    const id = await create('every two seconds', 2)
    vi.setSystemTime(NOW) // and was corrected
    // The timer armed for two seconds wakes, finds next_at a year ahead and moves it to one interval from now.
    await advance(2000)
    expect(loopChanges(fake.agent).at(-1)).toEqual({ version: 1, operation: 'dispatch', id, next_at: NOW + 4000 })
    expect(fake.send).not.toHaveBeenCalled()
    await advance(2000)
    expect(sentTexts()).toEqual([heartbeat(id, 'every two seconds')])
    expect(await persistedLoopChanges(host, 'ses-run')).toEqual(loopChanges(fake.agent))
  })

  it('does not duplicate a dispatch when drive requests from tool calls race the timer', async () => {
    const id = await create('once', 1)
    await settle()
    vi.setSystemTime(NOW + 1000)
    // Each create commits and requests a drive; the timer fires in the middle of them.
    const creates = Array.from({ length: 4 }, (_, index) =>
      runTool(host, fake.agent, 'loop_create', { prompt: `other ${index}`, time_in_seconds: 3600 }),
    )
    await vi.advanceTimersByTimeAsync(1)
    await Promise.all(creates)
    await settle()
    expect(sentTexts()).toEqual([heartbeat(id, 'once')])
    expect(
      loopChanges(fake.agent).filter((change) => (change as { operation: string }).operation === 'dispatch'),
    ).toEqual([{ version: 1, operation: 'dispatch', id, next_at: NOW + 2000 }])
  })

  it('stops firing after delete and clears the timer', async () => {
    const id = await create('bye', 1)
    await advance(1000)
    await runTool(host, fake.agent, 'loop_delete', { id })
    await settle()
    expect(vi.getTimerCount()).toBe(0)
    await advance(10_000)
    expect(fake.send).toHaveBeenCalledTimes(1)
  })
})

describe('lifecycle', () => {
  it('a disposed agent clears its timer and never dispatches again', async () => {
    await create('stale', 1)
    expect(vi.getTimerCount()).toBe(1)
    await fake.handle.dispose()
    expect(vi.getTimerCount()).toBe(0)
    await advance(5000)
    expect(fake.send).not.toHaveBeenCalled()
  })

  it('a runtime replaced while its drive is in flight stays inert; the replacement sends the due heartbeat once', async () => {
    // A host whose plugin fiber the test holds, so the runtime serving this live session can be
    // replaced (a hot reload) while the old runtime's drive waits on its flush.
    const reloadable = await bootHost({ loop: false })
    try {
      const oldFiber = reloadable.ctx.plugin(loopPlugin)
      await oldFiber
      const agent = await createFakeAgent(reloadable, 'ses-reload')
      const timers = recordTimers()
      const created = await runTool(reloadable, agent.agent, 'loop_create', { prompt: 'carry on', time_in_seconds: 2 })
      if (created.isError) throw new Error(created.error.message)
      const id = (created.value as { id: string }).id
      await settle()
      const oldTimer = timers.armed.find((timer) => timer.delay === 2000)!
      timers.restore()
      await advance(1999)
      const held = holdFlushes(reloadable)
      await vi.advanceTimersByTimeAsync(1)
      expect(held.waiting()).toBe(1) // the old runtime's drive, before its decision

      const oldDisposal = oldFiber.dispose()
      const newFiber = reloadable.ctx.plugin(loopPlugin)
      await vi.advanceTimersByTimeAsync(0)
      expect(held.waiting()).toBe(2) // the replacement's first drive is live beside the old one
      // A late timer of the old runtime, while the replacement is live, requests nothing.
      oldTimer.callback()
      await vi.advanceTimersByTimeAsync(0)
      expect(held.waiting()).toBe(2)

      await held.release()
      await oldDisposal
      await newFiber
      await settle()
      expect(sentTexts(agent)).toEqual([heartbeat(id, 'carry on')])
      const expected = [
        { version: 1, operation: 'create', loop: { id, prompt: 'carry on', time_in_seconds: 2, next_at: NOW + 2000 } },
        { version: 1, operation: 'dispatch', id, next_at: NOW + 4000 },
      ]
      expect(loopChanges(agent.agent)).toEqual(expected)
      expect(await persistedLoopChanges(reloadable, 'ses-reload')).toEqual(expected)
      // The next occurrence: while the replacement's drive waits, the old runtime's timer fires late.
      await advance(1999)
      const heldAgain = holdFlushes(reloadable)
      await vi.advanceTimersByTimeAsync(1)
      expect(heldAgain.waiting()).toBe(1)
      oldTimer.callback()
      await vi.advanceTimersByTimeAsync(0)
      expect(heldAgain.waiting()).toBe(1)
      await heldAgain.release()
      await settle()
      expect(sentTexts(agent)).toEqual([heartbeat(id, 'carry on'), heartbeat(id, 'carry on')])
      const listed = await runTool(reloadable, agent.agent, 'loop_list', {})
      expect(
        listed.isError
          ? listed.error
          : (listed.value as { id: string; next_at: number }[]).map((loop) => [loop.id, loop.next_at]),
      ).toEqual([[id, NOW + 6000]])
    } finally {
      await reloadable.dispose()
    }
  })

  it('an overdue loop fires once when its session resumes after downtime', async () => {
    const id = await create('after downtime', 1)
    await fake.handle.dispose()
    vi.setSystemTime(NOW + 3_600_000)
    const resumed = await resumeFakeAgent(host, 'ses-run')
    await settle()
    expect(sentTexts(resumed)).toEqual([heartbeat(id, 'after downtime')])
    expect(loopChanges(resumed.agent).at(-1)).toEqual({
      version: 1,
      operation: 'dispatch',
      id,
      next_at: NOW + 3_601_000,
    })
  })
})

describe('failures', () => {
  it('sends nothing when the agent is disposed while the pre-dispatch flush waits', async () => {
    await create('too late', 1)
    await settle()
    let release!: () => void
    const real = host.ctx.sessions.flush.bind(host.ctx.sessions)
    const spy = vi
      .spyOn(host.ctx.sessions, 'flush')
      .mockImplementationOnce(
        (session) => new Promise<boolean>((resolve) => (release = () => void real(session).then(resolve))),
      )
    await vi.advanceTimersByTimeAsync(1000)
    expect(spy).toHaveBeenCalledTimes(1)
    const disposal = fake.handle.dispose()
    release()
    spy.mockRestore()
    await disposal
    expect(fake.send).not.toHaveBeenCalled()
    expect(loopChanges(fake.agent).map((change) => (change as { operation: string }).operation)).toEqual(['create'])
  })

  it('does not send when the pre-dispatch flush fails, and retries with backoff', async () => {
    await create('retry', 1)
    const spy = vi.spyOn(host.ctx.sessions, 'flush').mockRejectedValue(new Error('disk gone'))
    await advance(1000)
    expect(fake.send).not.toHaveBeenCalled()
    expect(loopChanges(fake.agent)).toHaveLength(1)
    await advance(FIRST_RETRY_DELAY_MS)
    expect(spy).toHaveBeenCalledTimes(2)
    spy.mockRestore()
    await advance(2 * FIRST_RETRY_DELAY_MS)
    expect(fake.send).toHaveBeenCalledTimes(1)
  })

  it('does not count the advance as durable when the post-dispatch flush fails', async () => {
    const id = await create('once', 1)
    const real = host.ctx.sessions.flush.bind(host.ctx.sessions)
    const spy = vi
      .spyOn(host.ctx.sessions, 'flush')
      .mockImplementationOnce(real)
      .mockRejectedValueOnce(new Error('disk full'))
    await advance(1000)
    expect(fake.send).toHaveBeenCalledTimes(1)
    expect(await persistedLoopChanges(host, 'ses-run')).toEqual([loopChanges(fake.agent)[0]])
    spy.mockRestore()
    // The retry drive flushes the in-memory dispatch first, then finds nothing due: no second send.
    await advance(FIRST_RETRY_DELAY_MS - 1)
    await settle()
    expect(await persistedLoopChanges(host, 'ses-run')).toEqual([
      loopChanges(fake.agent)[0],
      { version: 1, operation: 'dispatch', id, next_at: NOW + 2000 },
    ])
    expect(fake.send).toHaveBeenCalledTimes(1)
  })

  it('arms nothing when a drive fails while its agent is being disposed', async () => {
    await create('disposed mid-flush', 1)
    await settle()
    const timersWithLoop = vi.getTimerCount()
    let rejectFlush: (reason: unknown) => void = () => undefined
    const spy = vi.spyOn(host.ctx.sessions, 'flush').mockImplementationOnce(
      () =>
        new Promise<boolean>((_, reject) => {
          rejectFlush = reject
        }),
    )
    await vi.advanceTimersByTimeAsync(1000)
    expect(spy).toHaveBeenCalledTimes(1)
    const disposal = fake.handle.dispose()
    await settle() // disposal now waits for the drive, which waits for the flush
    rejectFlush('storage detached')
    await disposal
    spy.mockRestore()
    // The loop's timer was cleared by the drive and no retry timer was armed after disposal.
    expect(vi.getTimerCount()).toBe(timersWithLoop - 1)
    await advance(5000)
    expect(fake.send).not.toHaveBeenCalled()
  })

  it('names non-Error flush failures in the tool error', async () => {
    const spy = vi.spyOn(host.ctx.sessions, 'flush').mockRejectedValue('EIO')
    const listed = await runTool(host, fake.agent, 'loop_list', {})
    expect(listed.isError ? listed.error.message : 'succeeded').toBe('Session persistence failed: EIO')
    spy.mockRestore()
  })

  it('appends no dispatch when the inbox refuses the heartbeat', async () => {
    await create('refused', 1)
    fake.send.mockImplementationOnce(() => {
      throw new Error('inbox closed')
    })
    await advance(1000)
    expect(loopChanges(fake.agent)).toHaveLength(1)
    await advance(FIRST_RETRY_DELAY_MS)
    expect(fake.send).toHaveBeenCalledTimes(2)
    expect(loopChanges(fake.agent)).toHaveLength(2)
  })

  it('doubles the retry delay while the inbox keeps refusing, up to the cap', async () => {
    await create('refused again', 1)
    fake.send.mockImplementation(() => {
      throw new Error('inbox closed')
    })
    await advance(1000)
    expect(fake.send).toHaveBeenCalledTimes(1)
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
      expect(fake.send).toHaveBeenCalledTimes(attempt - 1)
      await advance(1)
      expect(fake.send).toHaveBeenCalledTimes(attempt)
    }
    expect(loopChanges(fake.agent)).toHaveLength(1)
  })

  /**
   * The session `fake` reopened after a corrupt record reached its log: the only way one gets
   * there, since the runtime is the log's only writer of loop changes (a damaged file, another
   * build). The record is appended past the runtime, flushed, and the agent resumed.
   */
  async function reopenWithCorruptRecord(data: unknown): Promise<FakeAgent> {
    fake.agent.session.append('loop/change', data as never)
    await host.ctx.sessions.flush(fake.agent.session)
    const id = fake.agent.session.id
    await fake.handle.dispose()
    fake = await resumeFakeAgent(host, id)
    return fake
  }

  it('fails closed on a corrupt record in the log it reopens: nothing fires and tool calls get the diagnostic', async () => {
    await create('armed', 60)
    await settle()
    const reopened = await reopenWithCorruptRecord({ version: 1, operation: 'delete', id: 'loop_missing' })
    await advance(120_000, 10_000)
    expect(reopened.send).not.toHaveBeenCalled()
    const listed = await runTool(host, reopened.agent, 'loop_list', {})
    expect(listed.isError ? listed.error.message : undefined).toBe(
      'Loops in this session are stopped: its loop log is corrupt (corrupt loop/change record: delete targets inactive loop loop_missing).',
    )
  })

  it('fails closed on a corrupt log without touching other sessions', async () => {
    const healthy = await createFakeAgent(host, 'ses-healthy')
    await create('fine', 1, healthy)
    await create('doomed', 1)
    await settle()
    const reopened = await reopenWithCorruptRecord({ version: 1, operation: 'delete', id: 'loop_missing' })
    healthy.send.mockClear()
    await advance(3000)
    expect(reopened.send).not.toHaveBeenCalled()
    expect(healthy.send).toHaveBeenCalledTimes(3)
    const listed = await runTool(host, reopened.agent, 'loop_list', {})
    expect(listed.isError ? listed.error : undefined).toEqual({
      message:
        'Loops in this session are stopped: its loop log is corrupt (corrupt loop/change record: delete targets inactive loop loop_missing).',
      info: { name: 'LoopError', code: 'corrupt_loop_log' },
    })
  })

  it('names the corrupt record to every tool call and refuses writes', async () => {
    await settle()
    const reopened = await reopenWithCorruptRecord({ version: 9 })
    const message =
      'Loops in this session are stopped: its loop log is corrupt (corrupt loop/change record: unsupported version 9).'
    const listed = await runTool(host, reopened.agent, 'loop_list', {})
    expect(listed.isError ? listed.error.message : 'succeeded').toBe(message)
    const created = await runTool(host, reopened.agent, 'loop_create', { prompt: 'p', time_in_seconds: 1 })
    expect(created.isError ? created.error.message : 'succeeded').toBe(message)
    expect(loopChanges(reopened.agent)).toHaveLength(1)
  })
})

describe('the queue, driven directly', () => {
  // A host without the plugin, so the runtime under test is the only one for its agent.
  let bare: Host
  let agent: FakeAgent

  beforeEach(async () => {
    useFakeClock()
    bare = await bootHost({ loop: false })
    agent = await createFakeAgent(bare, 'ses-queue')
  })
  afterEach(() => stopFakeHost(bare))

  /** Replace flush with one whose acknowledgements the test releases. */
  function holdFlushes() {
    const held: ((acknowledged: boolean) => void)[] = []
    const spy = vi
      .spyOn(bare.ctx.sessions, 'flush')
      .mockImplementation(() => new Promise<boolean>((resolve) => held.push(resolve)))
    return {
      spy,
      held,
      release() {
        spy.mockRestore()
        for (const resolve of held.splice(0)) resolve(true)
      },
    }
  }

  /** Append a create for a loop due at the current instant. */
  function appendDueLoop(id: string): void {
    agent.agent.session.append(
      'loop/change',
      createChange({ id, prompt: 'due now', time_in_seconds: 60, next_at: Date.now() }),
    )
  }

  /** A runtime whose first drive, for a loop due now, waits in its pre-dispatch flush. */
  async function driveHeldAtFlush(id: string) {
    appendDueLoop(id)
    const runtime = new LoopRuntime(bare.ctx, agent.agent, { oneShot: false })
    const flushes = holdFlushes()
    runtime.start()
    await vi.advanceTimersByTimeAsync(0)
    return { runtime, flushes }
  }

  it('coalesces drive requests made during a drive: the due loop is sent and dispatched once', async () => {
    const { runtime, flushes } = await driveHeldAtFlush('loop_once')
    expect(flushes.spy).toHaveBeenCalledTimes(1)
    for (let request = 0; request < 5; request += 1) runtime.requestDrive()
    flushes.release()
    await settle()
    expect(agent.send).toHaveBeenCalledTimes(1)
    expect(loopChanges(agent.agent).map((change) => (change as { operation: string }).operation)).toEqual([
      'create',
      'dispatch',
    ])
    await runtime.dispose()
  })

  it('decides again after the pre-dispatch flush: a clock set back meanwhile leaves nothing due, so nothing is sent', async () => {
    const { runtime, flushes } = await driveHeldAtFlush('loop_clock')
    expect(flushes.spy).toHaveBeenCalledTimes(1)
    // The wall clock moves back ten seconds while the flush is in progress.
    vi.setSystemTime(Date.now() - 10_000)
    flushes.release()
    await settle()
    expect(agent.send).not.toHaveBeenCalled()
    expect(loopChanges(agent.agent).map((change) => (change as { operation: string }).operation)).toEqual(['create'])
    // It stays armed: once the clock reaches the occurrence again, it fires.
    await advance(10_000)
    expect(agent.send).toHaveBeenCalledTimes(1)
    await runtime.dispose()
  })

  it('orders a tool transaction behind the running drive: a loop deleted meanwhile is still sent once, then never again', async () => {
    const { runtime, flushes } = await driveHeldAtFlush('loop_due')
    const deletion = runtime.transact('loop_delete', signal(), (state) => ({
      result: Object.keys(state.loops),
      change: { version: 1, operation: 'delete', id: 'loop_due' },
    }))
    await vi.advanceTimersByTimeAsync(0)
    // The transaction waits behind the drive: nothing was deleted or flushed for it yet.
    expect(flushes.spy).toHaveBeenCalledTimes(1)
    flushes.release()
    // The drive decided first (one send and its dispatch), then the delete saw the loop still active.
    expect(await deletion).toEqual(['loop_due'])
    await settle()
    expect(agent.send).toHaveBeenCalledTimes(1)
    expect(loopChanges(agent.agent).map((change) => (change as { operation: string }).operation)).toEqual([
      'create',
      'dispatch',
      'delete',
    ])
    await advance(120_000, 60_000)
    expect(agent.send).toHaveBeenCalledTimes(1)
    await runtime.dispose()
  })

  it('dispose waits for a queued transaction before it resolves', async () => {
    const runtime = new LoopRuntime(bare.ctx, agent.agent, { oneShot: false })
    await settle()
    const flushes = holdFlushes()
    const listing = runtime.transact('loop_list', signal(), (state) => ({ result: Object.keys(state.loops).length }))
    await vi.advanceTimersByTimeAsync(0)
    let disposed = false
    const disposal = runtime.dispose().then(() => {
      disposed = true
    })
    await vi.advanceTimersByTimeAsync(0)
    expect(disposed).toBe(false)
    flushes.release()
    // Disposal began while the transaction waited: its second liveness check refuses it.
    await expect(listing).rejects.toThrow(
      'The loops of this session have moved on: this agent or the loop plugin was replaced or is shutting down. Call the tool again; the live one answers.',
    )
    await disposal
    expect(disposed).toBe(true)
  })

  it('a drive queued before disposal does nothing once it runs', async () => {
    appendDueLoop('loop_late')
    const runtime = new LoopRuntime(bare.ctx, agent.agent, { oneShot: false })
    const flushes = holdFlushes()
    const blocker = runtime.transact('loop_list', signal(), () => ({ result: undefined }))
    await vi.advanceTimersByTimeAsync(0)
    runtime.start() // queued behind the transaction
    const disposal = runtime.dispose()
    flushes.release()
    await blocker.catch(() => undefined)
    await disposal
    await settle()
    expect(agent.send).not.toHaveBeenCalled()
    expect(loopChanges(agent.agent)).toHaveLength(1)
  })

  it('a runtime for an agent that is not a live root never drives or transacts', async () => {
    const child = await agent.agent.ctx.agents.create({
      sessionId: SessionId('ses-queue-child'),
      meta: { cwd: bare.root },
      agentOptions: AGENT_OPTIONS,
    })
    const send = vi.spyOn(child.agent, 'send').mockImplementation(() => undefined)
    child.agent.session.append(
      'loop/change',
      createChange({ id: 'loop_child', prompt: 'not mine to run', time_in_seconds: 1, next_at: Date.now() }),
    )
    const runtime = new LoopRuntime(bare.ctx, child.agent, { oneShot: false })
    const flush = vi.spyOn(bare.ctx.sessions, 'flush')
    runtime.start()
    await advance(3000)
    expect(send).not.toHaveBeenCalled()
    expect(flush).not.toHaveBeenCalled()
    await expect(runtime.transact('loop_list', signal(), () => ({ result: 1 }))).rejects.toThrow(
      'The loops of this session have moved on: this agent or the loop plugin was replaced or is shutting down. Call the tool again; the live one answers.',
    )
    flush.mockRestore()
    await runtime.dispose()
    await child.dispose()
  })
})

describe('a log that was corrupt before the runtime observed it', () => {
  it('fails closed at the first drive and names the record to tool calls', async () => {
    useFakeClock()
    const bare = await bootHost({ loop: false })
    const agent = await createFakeAgent(bare, 'ses-early-corrupt')
    agent.agent.session.append('loop/change', { version: 1, operation: 'dispatch', id: 'loop_ghost', next_at: 5 })
    const runtime = new LoopRuntime(bare.ctx, agent.agent, { oneShot: false })
    runtime.start()
    await advance(2000)
    expect(agent.send).not.toHaveBeenCalled()
    await expect(runtime.transact('loop_list', signal(), () => ({ result: 0 }))).rejects.toThrow(
      'Loops in this session are stopped: its loop log is corrupt (corrupt loop/change record: dispatch targets inactive loop loop_ghost).',
    )
    await runtime.dispose()
    await stopFakeHost(bare)
  })

  it('fails closed without a retry when its first flush fails too', async () => {
    useFakeClock()
    const bare = await bootHost({ loop: false })
    const agent = await createFakeAgent(bare, 'ses-early-corrupt-unflushed')
    agent.agent.session.append('loop/change', { version: 1, operation: 'delete', id: 'loop_ghost' })
    const injection = failFlush(bare, 'reject', { times: 1 })
    const runtime = new LoopRuntime(bare.ctx, agent.agent, { oneShot: false })
    runtime.start()
    await advance(5000)
    injection.restore()
    // A retry would have flushed again after 1 s.
    expect(injection.calls()).toBe(1)
    expect(agent.send).not.toHaveBeenCalled()
    await expect(runtime.transact('loop_list', signal(), () => ({ result: 0 }))).rejects.toThrow(
      'Loops in this session are stopped: its loop log is corrupt (corrupt loop/change record: delete targets inactive loop loop_ghost).',
    )
    await runtime.dispose()
    await stopFakeHost(bare)
  })
})

describe('one waiting heartbeat per loop', () => {
  /** Make the fake agent's send admit the message to its real, durable inbox without running a model. */
  function admitToInbox(target: FakeAgent): void {
    target.send.mockImplementation((message, inboxTarget) => target.agent.inbox.append(inboxTarget, message))
  }

  it('advances the schedule without sending while the heartbeat waits unconsumed, and sends again once it is taken', async () => {
    admitToInbox(fake)
    fake.setStatus('running') // a long model step: nothing consumes the inbox
    const id = await create('one at a time', 1)
    await advance(7000)
    expect(fake.send).toHaveBeenCalledTimes(1)
    expect(fake.agent.inbox.nextStep.map((message) => (message.content[0] as { text: string }).text)).toEqual([
      heartbeat(id, 'one at a time'),
    ])
    // Seven occurrences: one heartbeat, six durable advances without a send.
    expect(loopChanges(fake.agent).slice(1)).toEqual(
      [2, 3, 4, 5, 6, 7, 8].map((second) => ({ version: 1, operation: 'dispatch', id, next_at: NOW + second * 1000 })),
    )
    const spliced = fake.agent.session.events.filter((event) => event.type === 'agent/inbox/spliced')
    expect(spliced).toHaveLength(1)
    // The heartbeat leaves the inbox (the user discards it, or a step takes it): the next occurrence sends.
    fake.agent.inbox.remove(fake.agent.inbox.nextStep[0]!.id)
    await advance(1000)
    expect(fake.send).toHaveBeenCalledTimes(2)
  })

  it('still knows the heartbeat is waiting after a crash, from the session log', async () => {
    admitToInbox(fake)
    const id = await create('survives a crash', 1)
    await advance(1000)
    expect(fake.send).toHaveBeenCalledTimes(1)
    // The process dies without shutting down: a second host opens the same files (the first is never disposed first).
    fake.setStatus('running')
    const restarted = await bootHost({ root: host.root })
    try {
      const resumed = await resumeFakeAgent(restarted, 'ses-run')
      admitToInbox(resumed)
      resumed.setStatus('running') // a turn is under way: it will take the waiting heartbeat
      expect(resumed.agent.inbox.nextTurn.map((message) => (message.content[0] as { text: string }).text)).toEqual([
        heartbeat(id, 'survives a crash'),
      ])
      await advance(3000)
      expect(resumed.send).not.toHaveBeenCalled()
      expect(loopChanges(resumed.agent).at(-1)).toEqual({ version: 1, operation: 'dispatch', id, next_at: NOW + 5000 })
    } finally {
      await restarted.dispose()
    }
  })

  it('replaces a heartbeat left waiting in an idle inbox: the fresh one wakes the agent, and only one ever waits', async () => {
    admitToInbox(fake)
    fake.setStatus('running')
    const id = await create('stale', 1)
    await advance(1000)
    const stale = fake.agent.inbox.nextStep[0]!
    // The turn ends without taking it (Stop keeping the inbox, an error): the agent is idle, the heartbeat waits.
    fake.setStatus('idle')
    await advance(1000)
    expect(
      fake.send.mock.calls.map(([message, target, wakeup]) => [
        (message.content[0] as { text: string }).text,
        target,
        wakeup,
      ]),
    ).toEqual([
      [heartbeat(id, 'stale'), 'next-step', true],
      [heartbeat(id, 'stale'), 'next-turn', true],
    ])
    const fresh = fake.send.mock.calls[1]![0]
    expect(fresh.id).not.toBe(stale.id)
    expect(fake.agent.inbox.nextStep).toEqual([])
    expect(fake.agent.inbox.nextTurn).toEqual([fresh])
    // The log: the stale one admitted, durably cancelled, then the fresh one admitted; then the dispatch.
    const log = fake.agent.session.events
    const tail = log.slice(log.findIndex((event) => event.type === 'agent/inbox/spliced'))
    expect(tail.map((event) => [event.type, event.data])).toEqual([
      ['agent/inbox/spliced', { target: 'next-step', start: 0, inserted: [stale] }],
      ['loop/change', { version: 1, operation: 'dispatch', id, next_at: NOW + 2000 }],
      ['agent/inbox/spliced', { target: 'next-step', start: 0, removedCount: 1, inserted: [], outcome: 'canceled' }],
      ['agent/inbox/spliced', { target: 'next-turn', start: 0, inserted: [fresh] }],
      ['loop/change', { version: 1, operation: 'dispatch', id, next_at: NOW + 3000 }],
    ])
  })

  it('replaces a heartbeat an idle agent still holds after a restart', async () => {
    admitToInbox(fake)
    const id = await create('after restart', 1)
    await advance(1000)
    const restarted = await bootHost({ root: host.root })
    try {
      const resumed = await resumeFakeAgent(restarted, 'ses-run')
      admitToInbox(resumed)
      const [stale] = resumed.agent.inbox.nextTurn
      expect((stale!.content[0] as { text: string }).text).toBe(heartbeat(id, 'after restart'))
      await advance(1000)
      expect(resumed.send).toHaveBeenCalledTimes(1)
      expect(resumed.agent.inbox.nextTurn).toEqual([resumed.send.mock.calls[0]![0]])
      expect(resumed.agent.inbox.nextTurn[0]!.id).not.toBe(stale!.id)
    } finally {
      await restarted.dispose()
    }
  })

  it("a delete takes the loop's waiting heartbeat out of the inbox, durably, before its delete record; other messages stay", async () => {
    admitToInbox(fake)
    fake.setStatus('running')
    const gone = await create('deleted while waiting', 1)
    const kept = await create('kept', 1)
    fake.agent.inbox.append(
      'next-turn',
      createUserMessage({ content: [{ type: 'text', text: 'the user queued this' }], source: { kind: 'user' } }),
    )
    await advance(1000)
    const [goneBeat, keptBeat] = fake.agent.inbox.nextStep
    expect([goneBeat, keptBeat].map((message) => (message!.content[0] as { text: string }).text)).toEqual([
      heartbeat(gone, 'deleted while waiting'),
      heartbeat(kept, 'kept'),
    ])
    const before = fake.agent.session.events.length
    const result = await runTool(host, fake.agent, 'loop_delete', { id: gone })
    expect(result.isError).toBe(false)
    expect(fake.agent.inbox.nextStep).toEqual([keptBeat])
    expect(fake.agent.inbox.nextTurn.map((message) => (message.content[0] as { text: string }).text)).toEqual([
      'the user queued this',
    ])
    expect(fake.agent.session.events.slice(before).map((event) => [event.type, event.data])).toEqual([
      ['agent/inbox/spliced', { target: 'next-step', start: 0, removedCount: 1, inserted: [], outcome: 'canceled' }],
      ['loop/change', { version: 1, operation: 'delete', id: gone }],
    ])
    // Durable: a restart replays an inbox without it.
    const restarted = await bootHost({ root: host.root })
    try {
      const resumed = await resumeFakeAgent(restarted, 'ses-run')
      expect(resumed.agent.inbox.nextStep.map((message) => message.id)).toEqual([keptBeat!.id])
    } finally {
      await restarted.dispose()
    }
  })

  it('replaces every waiting heartbeat of the loop when an idle inbox holds more than one (a log from another build)', async () => {
    admitToInbox(fake)
    const id = await create('twice', 1)
    const beat = () =>
      createUserMessage({
        content: [{ type: 'text', text: heartbeat(id, 'twice') }],
        source: { kind: 'plugin', plugin: 'loop' },
      })
    fake.agent.inbox.append('next-turn', beat())
    fake.agent.inbox.append('next-step', beat())
    await advance(1000)
    expect(fake.send).toHaveBeenCalledTimes(1)
    expect(fake.agent.inbox.nextStep).toEqual([])
    expect(fake.agent.inbox.nextTurn).toEqual([fake.send.mock.calls[0]![0]])
  })

  it('ignores inbox messages that are not its heartbeats', async () => {
    fake.agent.inbox.append('next-turn', {
      id: 'msg-user' as never,
      role: 'user',
      content: [{ type: 'text', text: 'hello' }],
      source: { kind: 'user' },
    } as never)
    await create('unrelated', 1)
    await advance(1000)
    expect(fake.send).toHaveBeenCalledTimes(1)
  })
})

describe('admitting a step', () => {
  const beat = (id: string) =>
    createUserMessage({
      content: [{ type: 'text', text: heartbeat(id, id) }],
      source: { kind: 'plugin', plugin: 'loop' },
    })
  const user = createUserMessage({ content: [{ type: 'text', text: 'hello' }], source: { kind: 'user' } })

  it('drops only heartbeats of loops that are not active, keeps the decision when nothing is dropped, and passes a rejection', async () => {
    useFakeClock()
    const bare = await bootHost({ loop: false })
    const agent = await createFakeAgent(bare, 'ses-admit')
    agent.agent.session.append(
      'loop/change',
      createChange({ id: 'loop_live', prompt: 'loop_live', time_in_seconds: 60, next_at: Date.now() + 60_000 }),
    )
    const runtime = new LoopRuntime(bare.ctx, agent.agent, { oneShot: false })
    const live = beat('loop_live')
    const kept = { kind: 'enter' as const, messages: [user, live] }
    expect(runtime.admitStep([user, live], kept)).toBe(kept)
    const gone = beat('loop_gone')
    expect(runtime.admitStep([gone, user, live], { kind: 'enter', messages: [gone, user, live] })).toEqual({
      kind: 'enter',
      messages: [user, live],
    })
    // Only the deleted loop's heartbeat was claimed: what a hook added for the step (a context snapshot) goes with it.
    const snapshot = createUserMessage({
      content: [{ type: 'text', text: 'Current runtime context.' }],
      source: { kind: 'plugin', plugin: 'runtime-context' },
    })
    expect(runtime.admitStep([gone], { kind: 'enter', messages: [gone, snapshot] })).toEqual({
      kind: 'enter',
      messages: [],
    })
    // Nothing claimed (a step after tool calls): a deleted loop's heartbeat a hook added is dropped, the step still runs.
    expect(runtime.admitStep([], { kind: 'enter', messages: [gone, user] })).toEqual({
      kind: 'enter',
      messages: [user],
    })
    const rejected = { kind: 'reject' as const }
    expect(runtime.admitStep([gone], rejected)).toBe(rejected)
    // A corrupt log: nothing is known about the loops, so the step passes unchanged.
    const damaged = await createFakeAgent(bare, 'ses-admit-corrupt')
    damaged.agent.session.append('loop/change', { version: 1, operation: 'delete', id: 'loop_ghost' })
    const stopped = new LoopRuntime(bare.ctx, damaged.agent, { oneShot: false })
    const unknown = { kind: 'enter' as const, messages: [gone] }
    expect(stopped.admitStep([gone], unknown)).toBe(unknown)
    // And every later step too: the fault stands.
    expect(stopped.admitStep([gone], unknown)).toBe(unknown)
    await stopped.dispose()
    await runtime.dispose()
    await stopFakeHost(bare)
  })
})

describe('reading the log', () => {
  it('reads it once, on first need; every later change is one the runtime appended and folds itself', async () => {
    useFakeClock()
    const bare = await bootHost({ loop: false })
    const agent = await createFakeAgent(bare, 'ses-read-once')
    const session = agent.agent.session
    // Appended before the runtime existed: the first read finds them.
    session.append(
      'loop/change',
      createChange({ id: 'loop_one', prompt: 'one', time_in_seconds: 60, next_at: Date.now() + 60_000 }),
    )
    session.append(
      'loop/change',
      createChange({ id: 'loop_two', prompt: 'two', time_in_seconds: 1, next_at: Date.now() + 1000 }),
    )
    const reads = vi.spyOn(session, 'events', 'get')
    const runtime = new LoopRuntime(bare.ctx, agent.agent, { oneShot: false })
    expect(await runtime.transact('loop_list', signal(), (state) => ({ result: Object.keys(state.loops) }))).toEqual([
      'loop_one',
      'loop_two',
    ])
    expect(reads).toHaveBeenCalledTimes(1)
    runtime.start()
    // Three occurrences of loop_two: three heartbeats and three dispatches, folded as they are appended.
    await advance(3000)
    expect(agent.send).toHaveBeenCalledTimes(3)
    const deleted = await runtime.transact('loop_delete', signal(), (state) => ({
      result: Object.values(state.loops).map((loop) => loop.next_at),
      change: { version: 1, operation: 'delete', id: 'loop_two' },
    }))
    expect(deleted).toEqual([Date.now() + 60_000 - 3000, Date.now() + 1000])
    expect(await runtime.transact('loop_list', signal(), (state) => ({ result: Object.keys(state.loops) }))).toEqual([
      'loop_one',
    ])
    await advance(3000)
    expect(agent.send).toHaveBeenCalledTimes(3)
    expect(reads).toHaveBeenCalledTimes(1)
    reads.mockRestore()
    await runtime.dispose()
    await stopFakeHost(bare)
  })
})

describe('catching up with a log the runtime did not follow', () => {
  it('knows which loops the open turn already took, and only the open turn', async () => {
    useFakeClock()
    const bare = await bootHost({ loop: false })
    const agent = await createFakeAgent(bare, 'ses-catch-up')
    const session = agent.agent.session
    const beat = (id: string) =>
      createUserMessage({
        content: [{ type: 'text', text: heartbeat(id, id) }],
        source: { kind: 'plugin', plugin: 'loop' },
      })
    session.append(
      'loop/change',
      createChange({ id: 'loop_taken', prompt: 'loop_taken', time_in_seconds: 1, next_at: Date.now() + 1000 }),
    )
    session.append(
      'loop/change',
      createChange({ id: 'loop_earlier', prompt: 'loop_earlier', time_in_seconds: 1, next_at: Date.now() + 1000 }),
    )
    // A closed turn took loop_earlier; the open turn took loop_taken.
    session.append('turn/start', { turn: 1 })
    session.append('step/start', { turn: 1, step: 1 })
    session.append('user/message', beat('loop_earlier'), { surfaceOp: 'append' })
    session.append('step/end', { turn: 1, step: 1 })
    session.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    session.append('turn/start', { turn: 2 })
    session.append('step/start', { turn: 2, step: 1 })
    session.append('user/message', beat('loop_taken'), { surfaceOp: 'append' })
    agent.setStatus('running')
    const runtime = new LoopRuntime(bare.ctx, agent.agent, { oneShot: false })
    runtime.start()
    await advance(1000)
    expect(
      agent.send.mock.calls.map(([message, target]) => [(message.content[0] as { text: string }).text, target]),
    ).toEqual([
      [heartbeat('loop_taken', 'loop_taken'), 'next-turn'],
      [heartbeat('loop_earlier', 'loop_earlier'), 'next-step'],
    ])
    await runtime.dispose()
    await stopFakeHost(bare)
  })
})

describe('a heartbeat claimed but not yet logged', () => {
  it("already counts as the open turn's: the next occurrence waits for the next turn", async () => {
    fake.send.mockImplementation((message, inboxTarget) => fake.agent.inbox.append(inboxTarget, message))
    fake.setStatus('running')
    const id = await create('claimed', 1)
    await advance(1000)
    expect(fake.send.mock.calls.map(([, target]) => target)).toEqual(['next-step'])
    // DSH takes it out of the inbox for the next step; the step's user message is logged only later.
    const [claimed] = fake.agent.inbox.claim('next-step', 1)
    expect(claimed?.content).toEqual([{ type: 'text', text: heartbeat(id, 'claimed') }])
    expect(fake.agent.inbox.nextStep).toEqual([])
    await advance(1000)
    expect(fake.send.mock.calls.map(([, target]) => target)).toEqual(['next-step', 'next-turn'])
  })
})

describe('delivery rule', () => {
  it.each([
    ['idle', { running: false, waiting: false, inOpenTurn: false }, { kind: 'send', target: 'next-turn' }],
    [
      'running, not yet in this turn',
      { running: true, waiting: false, inOpenTurn: false },
      { kind: 'send', target: 'next-step' },
    ],
    [
      'running, already in this turn',
      { running: true, waiting: false, inOpenTurn: true },
      { kind: 'send', target: 'next-turn' },
    ],
    [
      'a heartbeat left waiting in an idle inbox',
      { running: false, waiting: true, inOpenTurn: false },
      { kind: 'replace', target: 'next-turn' },
    ],
    ['a heartbeat still waiting (running)', { running: true, waiting: true, inOpenTurn: true }, { kind: 'coalesce' }],
  ])('%s', (_name, facts, expected) => {
    expect(chooseDelivery(facts)).toEqual(expected)
  })
})

/**
 * The runtime (src/loop.ts) on a real host, one exact case each: delivery and its order of flush,
 * send and dispatch, the injected clock, a corrupt log, the queue of drives and
 * transactions, cancellation, the pre-step filter, and reading the log once, as the dock reads it.
 * Interleavings of faults, Stops, crashes, clock jumps, deletes and reloads are the simulation's
 * (test/sim/), judged against its reference model.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { CallId, createUserMessage } from '@deepseek-ai/dsh-llm'
import { SessionId, type Session } from '@deepseek-ai/dsh-session'
import { registerLoopCommand } from '../src/commands.ts'
import { DEFAULT_LOOP_CONFIG } from '../src/config.ts'
import { LoopError } from '../src/errors.ts'
import { MAX_TIMER_WAIT_MS } from '../src/drive.ts'
import { createChange, deleteChange } from '../src/fold.ts'
import { LoopRuntime } from '../src/loop.ts'
import { registerLoopTools } from '../src/tools.ts'
import { failFlush, failNextLoopAppend, holdFlushes, observeAppends, observeFlushes } from './support/faults.ts'
import { heartbeatText } from './support/heartbeat-xml.ts'
import { heartbeatMessage } from './support/loop-fixtures.ts'
import { ManualClock } from './support/manual-clock.ts'
import {
  advance,
  AGENT_OPTIONS,
  createFakeAgent,
  createRelatedFakeAgent,
  failureMessageOf,
  failureOf,
  loopChanges,
  outcomeOf,
  ownRuntime,
  persistedLoopChanges,
  resumeFakeAgent,
  runCommand,
  runTool,
  sentTexts,
  settle,
  signal,
  useFakeHost,
  type FakeAgent,
  type Host,
} from './support/host.ts'
import { NOW } from './support/epoch.ts'

const rig = useFakeHost('ses-run')

/** Append a create to a session's log past the runtime: a loop due `dueInMs` from now (one interval unless given). */
function appendCreate(session: Session, id: string, prompt: string, seconds: number, dueInMs = seconds * 1000): void {
  session.append('loop/change', createChange({ id, prompt, time_in_seconds: seconds, next_at: Date.now() + dueInMs }))
}

/** A host without the plugin and a fake agent on it: a runtime the test builds is the only one for that agent. */
async function bareAgent(sessionId: string): Promise<{ bare: Host; agent: FakeAgent }> {
  const bare = await rig.boot({ loop: false })
  return { bare, agent: await createFakeAgent(bare, sessionId) }
}

/** What every tool call of a session whose loop log is corrupt is told, naming the record at fault. */
const corruptLog = (record: string) =>
  `Loops in this session are stopped: its loop log is corrupt (corrupt loop/change record: ${record}).`

/** A hand-made transaction's error for a change whose flush fails; these tests' flushes succeed. */
const notSaved = (error: unknown) => new LoopError('persistence_failed', 'not saved', { cause: error })

describe('delivery', () => {
  it('sends a one-second loop exactly once at its due boundary, idle → next-turn with wakeup', async () => {
    const id = await rig.create('Check whether the build is still healthy', 1)
    await advance(999)
    expect(rig.fake.send).not.toHaveBeenCalled()
    await advance(1)
    expect(rig.fake.send).toHaveBeenCalledTimes(1)
    const [message, target, wakeup] = rig.fake.send.mock.calls[0]!
    expect(target).toBe('next-turn')
    expect(wakeup).toBe(true)
    expect(message).toEqual({
      id: expect.any(String),
      role: 'user',
      content: [{ type: 'text', text: heartbeatText(id, 'Check whether the build is still healthy') }],
      source: { kind: 'plugin', plugin: 'loop' },
    })
    expect(rig.fake.steer).not.toHaveBeenCalled()
    expect(rig.fake.followup).not.toHaveBeenCalled()
    expect(loopChanges(rig.fake.agent)).toEqual([
      {
        version: 1,
        operation: 'create',
        loop: { id, prompt: 'Check whether the build is still healthy', time_in_seconds: 1, next_at: NOW + 1000 },
      },
      { version: 1, operation: 'dispatch', id, next_at: NOW + 2000 },
    ])
    expect(await persistedLoopChanges(rig.host, 'ses-run')).toEqual(loopChanges(rig.fake.agent))
  })

  it('runs a drive as flush, send, append of the dispatch, flush, in exactly that order', async () => {
    const id = await rig.create('in order', 1)
    await settle()
    const steps: string[] = []
    const flush = observeFlushes(rig.host, (session) => steps.push(`flush ${session.id}`))
    rig.fake.send.mockImplementation((message, target) => {
      steps.push(
        `send ${(message.content[0] as { text: string }).text === heartbeatText(id, 'in order') ? id : 'other'} ${target}`,
      )
    })
    const append = observeAppends(rig.fake.agent.session, (type, data) =>
      steps.push(`append ${type} ${JSON.stringify(data)}`),
    )
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
    expect(await persistedLoopChanges(rig.host, 'ses-run')).toEqual(loopChanges(rig.fake.agent))
  })

  it('escapes the id and prompt inside the heartbeat', async () => {
    const id = await rig.create(`Is "main" <green> & 'ok'?`, 1)
    await advance(1000)
    expect(sentTexts(rig.fake)).toEqual([heartbeatText(id, 'Is &quot;main&quot; &lt;green&gt; &amp; &apos;ok&apos;?')])
  })
})

describe('a corrupt loop log: the session fails closed', () => {
  /**
   * The session `fake` reopened after a corrupt record reached its log: the only way one gets
   * there, since the runtime is the log's only writer of loop changes (a damaged file, another
   * build). The record is appended past the runtime, flushed, and the agent resumed.
   */
  async function reopenWithCorruptRecord(data: unknown): Promise<FakeAgent> {
    rig.fake.agent.session.append('loop/change', data as never)
    await rig.host.ctx.sessions.flush(rig.fake.agent.session)
    const id = rig.fake.agent.session.id
    await rig.fake.handle.dispose()
    rig.fake = await resumeFakeAgent(rig.host, id)
    return rig.fake
  }

  it('fails closed on a corrupt record in the log it reopens: nothing fires and tool calls get the diagnostic', async () => {
    await rig.create('armed', 60)
    await settle()
    const reopened = await reopenWithCorruptRecord({ version: 1, operation: 'delete', id: 'loop_missing' })
    await advance(120_000, 10_000)
    expect(reopened.send).not.toHaveBeenCalled()
    const listed = await runTool(rig.host, reopened.agent, 'loop_list', {})
    expect(failureMessageOf(listed)).toBe(corruptLog('delete targets inactive loop loop_missing'))
  })

  it('fails closed on a corrupt log without touching other sessions', async () => {
    const healthy = await createFakeAgent(rig.host, 'ses-healthy')
    await rig.create('fine', 1, healthy)
    await rig.create('doomed', 1)
    await settle()
    const reopened = await reopenWithCorruptRecord({ version: 1, operation: 'delete', id: 'loop_missing' })
    healthy.send.mockClear()
    await advance(3000)
    expect(reopened.send).not.toHaveBeenCalled()
    expect(healthy.send).toHaveBeenCalledTimes(3)
    const listed = await runTool(rig.host, reopened.agent, 'loop_list', {})
    expect(failureOf(listed)).toEqual({
      message: corruptLog('delete targets inactive loop loop_missing'),
      info: { name: 'LoopError', code: 'corrupt_loop_log' },
    })
  })

  it('names the corrupt record to every tool call and refuses writes', async () => {
    await settle()
    const reopened = await reopenWithCorruptRecord({ version: 9 })
    const message = corruptLog('unsupported version 9')
    const listed = await runTool(rig.host, reopened.agent, 'loop_list', {})
    expect(failureMessageOf(listed)).toBe(message)
    const created = await runTool(rig.host, reopened.agent, 'loop_create', { prompt: 'p', time_in_seconds: 1 })
    expect(failureMessageOf(created)).toBe(message)
    expect(loopChanges(reopened.agent)).toHaveLength(1)
  })

  // Corrupt before the runtime first read it: a runtime the test starts on that log.
  it('fails closed at the first drive and names the record to tool calls', async () => {
    const { bare, agent } = await bareAgent('ses-early-corrupt')
    agent.agent.session.append('loop/change', { version: 1, operation: 'dispatch', id: 'loop_ghost', next_at: 5 })
    const runtime = ownRuntime(bare, agent.agent)
    runtime.start()
    await advance(2000)
    expect(agent.send).not.toHaveBeenCalled()
    await expect(runtime.transact('loop_list', signal(), () => ({ result: 0 }))).rejects.toThrow(
      corruptLog('dispatch targets inactive loop loop_ghost'),
    )
    await runtime.dispose()
  })

  it('fails closed without a retry when its first flush fails too', async () => {
    const { bare, agent } = await bareAgent('ses-early-corrupt-unflushed')
    agent.agent.session.append('loop/change', { version: 1, operation: 'delete', id: 'loop_ghost' })
    const injection = failFlush(bare, 'reject', { times: 1 })
    const runtime = ownRuntime(bare, agent.agent)
    runtime.start()
    await advance(5000)
    injection.restore()
    // A retry would have flushed again after 1 s.
    expect(injection.calls()).toBe(1)
    expect(agent.send).not.toHaveBeenCalled()
    await expect(runtime.transact('loop_list', signal(), () => ({ result: 0 }))).rejects.toThrow(
      corruptLog('delete targets inactive loop loop_ghost'),
    )
    await runtime.dispose()
  })
})

describe('the queue, driven directly', () => {
  // A host without the plugin, so the runtime under test is the only one for its agent.
  let bare: Host
  let agent: FakeAgent

  beforeEach(async () => {
    ;({ bare, agent } = await bareAgent('ses-queue'))
  })

  /** Append a create for a loop due at the current instant. */
  function appendDueLoop(id: string): void {
    agent.agent.session.append(
      'loop/change',
      createChange({ id, prompt: 'due now', time_in_seconds: 60, next_at: Date.now() }),
    )
  }

  it('dispose waits for a queued transaction before it resolves', async () => {
    const runtime = ownRuntime(bare, agent.agent)
    await settle()
    const flushes = holdFlushes(bare)
    const listing = runtime.transact('loop_list', signal(), (state) => ({ result: state.loops.length }))
    await vi.advanceTimersByTimeAsync(0)
    let disposed = false
    const disposal = runtime.dispose().then(() => {
      disposed = true
    })
    await vi.advanceTimersByTimeAsync(0)
    expect(disposed).toBe(false)
    const released = flushes.release()
    // Disposal began while the transaction waited: its second liveness check refuses it.
    await expect(listing).rejects.toThrow(
      'The loops of this session have moved on: this agent or the loop plugin was replaced or is shutting down. Call the tool again; the live one answers.',
    )
    await released
    await disposal
    expect(disposed).toBe(true)
  })

  it('a drive queued before disposal does nothing once it runs', async () => {
    appendDueLoop('loop_late')
    const runtime = ownRuntime(bare, agent.agent)
    const flushes = holdFlushes(bare)
    const blocker = runtime.transact('loop_list', signal(), () => ({ result: undefined }))
    await vi.advanceTimersByTimeAsync(0)
    runtime.start() // queued behind the transaction
    const disposal = runtime.dispose()
    const released = flushes.release()
    await blocker.catch(() => undefined)
    await released
    await disposal
    await settle()
    expect(agent.send).not.toHaveBeenCalled()
    expect(loopChanges(agent.agent)).toHaveLength(1)
  })

  it("holds a fork's record of its inherited loops for its first change or drive: a refused call appends nothing", async () => {
    agent.agent.session.append(
      'loop/change',
      createChange({ id: 'loop_parent', prompt: "the parent's", time_in_seconds: 60, next_at: Date.now() + 60_000 }),
    )
    const fork = await createRelatedFakeAgent(bare, 'ses-queue-fork', 'fork', agent.agent)
    const own = () =>
      fork.agent.session.events
        .slice(fork.agent.session.header.seedLength)
        .filter((event) => event.type === 'loop/change')
        .map((event) => event.data)
    const runtime = ownRuntime(bare, fork.agent)
    // A call refused over the fold reads the log, and appends nothing.
    const refused = new LoopError('loop_not_found', 'No active loop loop_parent.')
    await expect(
      runtime.transact('loop_delete', signal(), () => {
        throw refused
      }),
    ).rejects.toBe(refused)
    expect(own()).toEqual([])
    // Its first drive appends it; an append that throws is retried a second later.
    failNextLoopAppend(fork.agent.session)
    runtime.start()
    await vi.advanceTimersByTimeAsync(0)
    expect(own()).toEqual([])
    await advance(1000)
    expect(own()).toEqual([{ version: 1, operation: 'fork', ids: ['loop_parent'] }])
    // Once: a change after it appends only itself.
    await runtime.transact('loop_delete', signal(), () => ({ result: undefined }))
    expect(own()).toHaveLength(1)
    await runtime.dispose()
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
    const runtime = ownRuntime(bare, child.agent)
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

describe('admitting a step', () => {
  const beat = (id: string) => heartbeatMessage(id)
  const user = createUserMessage({ content: [{ type: 'text', text: 'hello' }], source: { kind: 'user' } })

  it('drops only heartbeats of loops that are not active, keeps the decision when nothing is dropped, and passes a rejection', async () => {
    const { bare, agent } = await bareAgent('ses-admit')
    appendCreate(agent.agent.session, 'loop_live', 'loop_live', 60)
    const runtime = ownRuntime(bare, agent.agent)
    const live = beat('loop_live')
    const kept = { kind: 'enter' as const, messages: [user, live] }
    expect(runtime.admitStep([user, live], kept, 1)).toBe(kept)
    const gone = beat('loop_gone')
    expect(runtime.admitStep([gone, user, live], { kind: 'enter', messages: [gone, user, live] }, 1)).toEqual({
      kind: 'enter',
      messages: [user, live],
    })
    // Only the deleted loop's heartbeat was claimed: what a hook added for the step (a context snapshot) goes with it.
    const snapshot = createUserMessage({
      content: [{ type: 'text', text: 'Current runtime context.' }],
      source: { kind: 'plugin', plugin: 'runtime-context' },
    })
    expect(runtime.admitStep([gone], { kind: 'enter', messages: [gone, snapshot] }, 1)).toEqual({
      kind: 'enter',
      messages: [],
    })
    // Nothing claimed (a step after tool calls): a deleted loop's heartbeat a hook added is dropped, the step still runs.
    expect(runtime.admitStep([], { kind: 'enter', messages: [gone, user] }, 2)).toEqual({
      kind: 'enter',
      messages: [user],
    })
    const rejected = { kind: 'reject' as const }
    expect(runtime.admitStep([gone], rejected, 2)).toBe(rejected)
    // A corrupt log: nothing is known about the loops, so the step passes unchanged.
    const damaged = await createFakeAgent(bare, 'ses-admit-corrupt')
    damaged.agent.session.append('loop/change', { version: 1, operation: 'delete', id: 'loop_ghost' })
    const stopped = ownRuntime(bare, damaged.agent)
    const unknown = { kind: 'enter' as const, messages: [gone] }
    expect(stopped.admitStep([gone], unknown, 1)).toBe(unknown)
    // And every later step too: the fault stands.
    expect(stopped.admitStep([gone], unknown, 1)).toBe(unknown)
    await stopped.dispose()
    await runtime.dispose()
  })
})

describe('reading the log', () => {
  it('reads it once, on first need; every later change is one the runtime appended and folds itself', async () => {
    const { bare, agent } = await bareAgent('ses-read-once')
    const session = agent.agent.session
    // Appended before the runtime existed: the first read finds them.
    appendCreate(session, 'loop_one', 'one', 60)
    appendCreate(session, 'loop_two', 'two', 1)
    const reads = vi.spyOn(session, 'events', 'get')
    const runtime = ownRuntime(bare, agent.agent)
    expect(
      await runtime.transact('loop_list', signal(), (state) => ({ result: state.loops.map((loop) => loop.id) })),
    ).toEqual(['loop_one', 'loop_two'])
    expect(reads).toHaveBeenCalledTimes(1)
    runtime.start()
    // Three occurrences of loop_two: three heartbeats and three dispatches, folded as they are appended.
    await advance(3000)
    expect(agent.send).toHaveBeenCalledTimes(3)
    const deleted = await runtime.transact('loop_delete', signal(), (state) => ({
      result: state.loops.map((loop) => loop.next_at),
      change: { version: 1, operation: 'delete', id: 'loop_two' },
      notSaved,
    }))
    expect(deleted).toEqual([Date.now() + 60_000 - 3000, Date.now() + 1000])
    expect(
      await runtime.transact('loop_list', signal(), (state) => ({ result: state.loops.map((loop) => loop.id) })),
    ).toEqual(['loop_one'])
    await advance(3000)
    expect(agent.send).toHaveBeenCalledTimes(3)
    expect(reads).toHaveBeenCalledTimes(1)
    reads.mockRestore()
    await runtime.dispose()
  })
})

describe('a log the runtime and the dock read alike', () => {
  it('a deleted id created again is one active loop to both: it is listed, fires and shows in the dock', async () => {
    const first = await createFakeAgent(rig.host, 'ses-reused')
    const session = first.agent.session
    appendCreate(session, 'loop_again', 'first life', 60)
    session.append('loop/change', deleteChange('loop_again'))
    appendCreate(session, 'loop_again', 'second life', 1)
    await first.handle.dispose()
    const resumed = await resumeFakeAgent(rig.host, 'ses-reused')
    const listed = await runTool(rig.host, resumed.agent, 'loop_list', {})
    expect((listed.value as { id: string; prompt: string }[]).map(({ id, prompt }) => [id, prompt])).toEqual([
      ['loop_again', 'second life'],
    ])
    expect(rig.host.ctx.sessionProjections.snapshot(resumed.agent.session).values['loop']).toEqual({
      loops: [{ id: 'loop_again', prompt: 'second life', time_in_seconds: 1, next_at: NOW + 1000 }],
    })
    await advance(1000)
    expect(sentTexts(resumed)).toEqual([heartbeatText('loop_again', 'second life')])
  })

  it('a create of an active id stops the runtime with its diagnostic, and the dock shows no loops', async () => {
    const first = await createFakeAgent(rig.host, 'ses-twice')
    const session = first.agent.session
    appendCreate(session, 'loop_twice', 'first', 60)
    appendCreate(session, 'loop_twice', 'second', 60)
    await first.handle.dispose()
    const resumed = await resumeFakeAgent(rig.host, 'ses-twice')
    const listed = await runTool(rig.host, resumed.agent, 'loop_list', {})
    expect(failureMessageOf(listed)).toBe(corruptLog('create of active loop loop_twice'))
    expect(rig.host.ctx.sessionProjections.snapshot(resumed.agent.session).values['loop']).toEqual({ loops: [] })
  })
})

describe('cancellation', () => {
  it('saves nothing when the call is cancelled while it waits for the flush', async () => {
    const { host, fake } = rig
    const held = holdFlushes(host)
    const controller = new AbortController()
    const call = host.ctx.tools.execute({
      callId: CallId('cancel-1'),
      name: 'loop_create',
      arguments: { prompt: 'never', time_in_seconds: 1 },
      signal: controller.signal,
      agent: fake.agent,
    })
    await vi.advanceTimersByTimeAsync(0)
    controller.abort()
    await held.release()
    const result = await call
    expect(failureOf(result)).toEqual({
      message: 'loop_create was cancelled; nothing was saved.',
      info: { name: 'LoopError', code: 'cancelled' },
    })
    await advance(3000)
    expect(loopChanges(fake.agent)).toEqual([])
    expect(fake.send).not.toHaveBeenCalled()
    // A retry creates exactly one loop.
    expect((await runTool(host, fake.agent, 'loop_create', { prompt: 'once', time_in_seconds: 60 })).isError).toBe(
      false,
    )
    expect(loopChanges(fake.agent)).toHaveLength(1)
  })

  it('keeps a change once it is appended, even if the caller cancels during the final flush', async () => {
    const { host, fake } = rig
    const controller = new AbortController()
    let flushes = 0
    // The second flush of the call is the one after its append.
    const spy = observeFlushes(host, () => {
      if (++flushes === 2) controller.abort()
    })
    const result = await host.ctx.tools.execute({
      callId: CallId('cancel-2'),
      name: 'loop_create',
      arguments: { prompt: 'kept', time_in_seconds: 60 },
      signal: controller.signal,
      agent: fake.agent,
    })
    spy.mockRestore()
    // The host reports the cancellation; the loop was already saved and stays (loop_list shows it).
    expect(failureMessageOf(result)).toBe('tool call aborted')
    expect(loopChanges(fake.agent)).toEqual([
      { version: 1, operation: 'create', loop: expect.objectContaining({ prompt: 'kept' }) },
    ])
  })
})

describe('background work belongs to no caller', () => {
  it('delivers a heartbeat outside the initiator of the call that created the loop', async () => {
    // Real timers: Node carries the caller's async context into a timer armed inside it (fake timers would not).
    vi.useRealTimers()
    const host = await rig.boot()
    const fake = await createFakeAgent(host, 'ses-initiator')
    const initiators: unknown[] = []
    fake.send.mockImplementation(() => void initiators.push(host.ctx.agents.currentInitiator()))
    const created = await host.ctx.agents.withInitiator(fake.agent, async () => {
      expect(host.ctx.agents.currentInitiator()).toBe(fake.agent)
      return runTool(host, fake.agent, 'loop_create', { prompt: 'mine?', time_in_seconds: 1 })
    })
    expect(created.isError).toBe(false)
    const deadline = Date.now() + 10_000
    while (initiators.length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
    expect(initiators).toEqual([undefined, undefined])
  }, 15_000)
})

describe('the runtime on an injected clock', () => {
  // Real timers and a real host; only the runtime's clock is the test's. No global is patched.
  let host: Host
  let fake: FakeAgent
  let clock: ManualClock
  let runtime: LoopRuntime
  let disposeTools: () => void

  beforeEach(async () => {
    vi.useRealTimers()
    ;({ bare: host, agent: fake } = await bareAgent('ses-clock'))
    clock = new ManualClock(NOW)
    runtime = ownRuntime(host, fake.agent, clock)
    disposeTools = registerLoopTools(fake.agent.ctx, runtime, { config: () => DEFAULT_LOOP_CONFIG, oneShotHost: false })
    runtime.start()
  })
  afterEach(async () => {
    disposeTools()
    await runtime.dispose()
  })

  /** Wait for every drive and transaction queued so far: a read-only transaction runs behind them. */
  const idle = () => runtime.transact('barrier', signal(), () => ({ result: undefined }))

  /** Wait, on a loaded machine too, until the runtime armed exactly these timers. */
  const armed = (instants: number[]) =>
    vi.waitFor(() => expect(clock.pending()).toEqual(instants), { timeout: 20_000, interval: 5 })

  it('fires a due loop exactly when the clock passes next_at, not a millisecond before', async () => {
    const created = await runTool(host, fake.agent, 'loop_create', {
      prompt: 'on the manual clock',
      time_in_seconds: 120,
    })
    expect(outcomeOf(created)).toMatchObject({
      next_at: NOW + 120_000,
      state: 'scheduled',
    })
    // The wait is capped: the first wake-up only re-reads the clock.
    await armed([NOW + MAX_TIMER_WAIT_MS])
    clock.advance(MAX_TIMER_WAIT_MS)
    await armed([NOW + 120_000])
    await idle()
    expect(fake.send).not.toHaveBeenCalled()
    clock.advance(120_000 - MAX_TIMER_WAIT_MS - 1)
    await idle()
    expect(fake.send).not.toHaveBeenCalled()
    expect(clock.pending()).toEqual([NOW + 120_000])
    clock.advance(1)
    await vi.waitFor(() => expect(fake.send).toHaveBeenCalledTimes(1), { timeout: 20_000, interval: 5 })
    await armed([NOW + 120_000 + MAX_TIMER_WAIT_MS])
    expect(loopChanges(fake.agent).slice(1)).toEqual([
      { version: 1, operation: 'dispatch', id: expect.stringMatching(/^loop_/), next_at: NOW + 240_000 },
    ])
  })

  it('stamps tool results and /loop list replies with the injected clock', async () => {
    const disposeCommand = registerLoopCommand(host.ctx, clock)
    try {
      const created = await runCommand(host, fake.agent, '/loop 90 stamped')
      expect(created).toMatchObject({ kind: 'success', text: expect.stringContaining('every 1m 30s, next in 1m 30s.') })
      clock.advance(30_000)
      const listed = await runTool(host, fake.agent, 'loop_list', {})
      expect(outcomeOf(listed)).toMatchObject([{ next_at: NOW + 90_000, state: 'scheduled' }])
      const reply = await runCommand(host, fake.agent, '/loop list')
      expect(reply).toMatchObject({
        kind: 'success',
        text: expect.stringContaining('next in 1m (2026-11-30T00:01:30.000Z)'),
      })
    } finally {
      disposeCommand()
    }
  })
})

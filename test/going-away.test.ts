/**
 * Agents, runtimes and the plugin going away or being replaced mid-flight, with fake timers on a real
 * host: disposal during a drive's flushes, a replacement that cannot go live until the old drive ends,
 * a hot reload while a tool call waits, late timers after disposal (hot reloads with drives, calls and
 * timers in flight at any moment are the simulation's, test/sim/). The durable log is read back and
 * audited against the sends.
 */
import { SessionId } from '@deepseek-ai/dsh-session'
import { describe, expect, it, vi } from 'vitest'
import * as loopPlugin from '../src/index.ts'
import {
  advance,
  createFakeAgent,
  createLoop,
  listedOf,
  loopChanges,
  persistedLoopChanges,
  resumeFakeAgent,
  runTool,
  settle,
} from './support/host.ts'
import { NOW } from './support/epoch.ts'
import { failFlush, holdFlushes, holdNthFlush, recordTimers } from './support/faults.ts'
import { recordHeartbeats } from './support/ledger.ts'
import { createRecord, dispatchRecord, useScenario } from './support/scenario.ts'

const SESSION = 'ses-going-away'
const scenario = useScenario(SESSION)
const { rig, durable, expectConsistent } = scenario

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
    expect(scenario.sent).toHaveLength(1)
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
    await expectConsistent(SESSION, [...scenario.sent, ...resumedSent])
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
    expect(scenario.sent).toEqual([])
    expect(replacementSent.map((heartbeat) => heartbeat.loopId)).toEqual([id])
    await expectConsistent(SESSION, replacementSent)
  })
})

describe('the plugin goes away mid-flight', () => {
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

describe('a runtime replaced by a hot reload', () => {
  it('refuses a tool call whose runtime was replaced while the call waited, and the replacement answers for the session', async () => {
    const host = await rig.boot({ loop: false })
    const oldFiber = host.ctx.plugin(loopPlugin)
    await oldFiber
    const fake = await createFakeAgent(host, 'ses-replaced')
    const id = await createLoop(host, fake.agent, 'kept', 60)
    await settle()
    const held = holdFlushes(host)
    const waiting = runTool(host, fake.agent, 'loop_create', {
      prompt: 'asked of the old runtime',
      time_in_seconds: 60,
    })
    await vi.advanceTimersByTimeAsync(0)
    expect(held.waiting()).toBe(1)
    // Replace the runtime serving this live session (a hot reload) while the old one's call waits on its flush.
    const oldDisposal = oldFiber.dispose()
    const newFiber = host.ctx.plugin(loopPlugin)
    await vi.advanceTimersByTimeAsync(0)
    const answered = runTool(host, fake.agent, 'loop_list', {})
    await vi.advanceTimersByTimeAsync(0)
    await held.release()
    expect(await waiting).toEqual({
      isError: true,
      error: {
        message:
          'The loops of this session have moved on: this agent or the loop plugin was replaced or is shutting down. Call the tool again; the live one answers.',
        info: { name: 'LoopError', code: 'agent_unavailable' },
      },
      content: [
        {
          type: 'text',
          text: 'Error: The loops of this session have moved on: this agent or the loop plugin was replaced or is shutting down. Call the tool again; the live one answers.',
        },
      ],
    })
    const listed = await answered
    expect(listedOf(listed, 'id')).toEqual([id])
    await oldDisposal
    await newFiber
    await settle()
    const expected = [
      { version: 1, operation: 'create', loop: { id, prompt: 'kept', time_in_seconds: 60, next_at: NOW + 60_000 } },
    ]
    expect(loopChanges(fake.agent)).toEqual(expected)
    expect(await persistedLoopChanges(host, 'ses-replaced')).toEqual(expected)
    expect(host.ctx.agents.get(SessionId('ses-replaced'))).toBe(fake.agent)
  })
})

/** Background work belongs to no caller: a heartbeat is delivered outside the initiator of the call that created its loop. */
import { describe, expect, it } from 'vitest'
import { bootHost, createFakeAgent, runTool, useHosts } from './support/host.ts'

const { track } = useHosts()

describe('background work belongs to no caller', () => {
  it('delivers a heartbeat outside the initiator of the call that created the loop', async () => {
    // Real timers: Node carries the caller's async context into a timer armed inside it (fake timers would not).
    const host = track(await bootHost())
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

/** Cancellation at the real tool boundary: nothing is saved before the append, a change once appended is kept. */
import { CallId } from '@deepseek-ai/dsh-llm'
import { describe, expect, it, vi } from 'vitest'
import { advance, createFakeAgent, loopChanges, runTool, useHosts } from './support/host.ts'

const { boot } = useHosts()

describe('cancellation', () => {
  it('saves nothing when the call is cancelled while it waits for the flush', async () => {
    const host = await boot()
    const fake = await createFakeAgent(host, 'ses-cancel')
    const held: (() => void)[] = []
    const real = host.ctx.sessions.flush.bind(host.ctx.sessions)
    const spy = vi
      .spyOn(host.ctx.sessions, 'flush')
      .mockImplementation(
        (session) => new Promise<boolean>((resolve) => held.push(() => void real(session).then(resolve))),
      )
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
    spy.mockRestore()
    for (const release of held.splice(0)) release()
    const result = await call
    expect(result.isError ? result.error : 'succeeded').toEqual({
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
    const host = await boot()
    const fake = await createFakeAgent(host, 'ses-cancel-late')
    const controller = new AbortController()
    const real = host.ctx.sessions.flush.bind(host.ctx.sessions)
    const spy = vi
      .spyOn(host.ctx.sessions, 'flush')
      .mockImplementationOnce(real)
      .mockImplementationOnce((session) => {
        controller.abort()
        return real(session)
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
    expect(result.isError ? result.error.message : 'succeeded').toBe('tool call aborted')
    expect(loopChanges(fake.agent)).toEqual([
      { version: 1, operation: 'create', loop: expect.objectContaining({ prompt: 'kept' }) },
    ])
  })
})

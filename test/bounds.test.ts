/**
 * The long-running rules at the real tool boundary: configured bounds (patch row
 * and DSH's settings document), cancellation up to the append, one-shot hosts,
 * call presentation, initiator-free background work and registration rollback.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { defineTool } from '@deepseek-ai/dsh-tools'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { LoopRuntime } from '../src/loop.ts'
import { registerLoopTools } from '../src/tools.ts'
import { DEFAULT_LOOP_CONFIG } from '../src/config.ts'
import { advance, bootHost, createFakeAgent, loopChanges, runTool, settle, tempDir, useFakeClock, type Host, TEST_NOW } from './support/host.ts'
import { CallId } from '@deepseek-ai/dsh-llm'

const hosts: Host[] = []
async function boot(options: Parameters<typeof bootHost>[0] = {}): Promise<Host> {
  useFakeClock()
  const host = await bootHost(options)
  hosts.push(host)
  return host
}
afterEach(async () => {
  for (const host of hosts.splice(0)) await host.dispose()
  vi.useRealTimers()
})

const TOO_MANY = (active: number, limit: number) =>
  `This session already has ${active} active ${active === 1 ? 'loop' : 'loops'}; the limit is ${limit} (plugin setting maxLoopsPerSession). Delete one with loop_delete (or /loop delete <id>) first.`

describe('configured bounds', () => {
  it('defaults to 20 loops per session and 4000 characters per prompt', async () => {
    const host = await boot()
    const fake = await createFakeAgent(host, 'ses-defaults')
    for (let index = 0; index < 20; index += 1) {
      const result = await runTool(host, fake.agent, 'loop_create', { prompt: `p${index}`, time_in_seconds: 3600 })
      expect(result.isError).toBe(false)
    }
    const refused = await runTool(host, fake.agent, 'loop_create', { prompt: 'one more', time_in_seconds: 3600 })
    expect(refused.isError ? refused.error : undefined).toEqual({ message: TOO_MANY(20, 20), info: { name: 'LoopError', code: 'too_many_loops' } })
    const long = await runTool(host, fake.agent, 'loop_create', { prompt: 'x'.repeat(1_000_000), time_in_seconds: 1 })
    expect(long.isError ? long.error.message : undefined).toBe(
      'prompt is 1000000 characters; the limit is 4000 (plugin setting maxPromptLength). Shorten it, or point to a file the agent can read.',
    )
    expect(loopChanges(fake.agent)).toHaveLength(20)
  })

  it('reads the bounds from the plugin row config and appends nothing when refusing', async () => {
    const host = await boot({ loopConfig: { maxLoopsPerSession: 2, maxPromptLength: 10 } })
    const fake = await createFakeAgent(host, 'ses-row')
    await runTool(host, fake.agent, 'loop_create', { prompt: 'a', time_in_seconds: 60 })
    await runTool(host, fake.agent, 'loop_create', { prompt: 'b', time_in_seconds: 60 })
    const refused = await runTool(host, fake.agent, 'loop_create', { prompt: 'c', time_in_seconds: 60 })
    expect(refused.isError ? refused.error.message : undefined).toBe(TOO_MANY(2, 2))
    const long = await runTool(host, fake.agent, 'loop_create', { prompt: 'x'.repeat(11), time_in_seconds: 60 })
    expect(long.isError ? long.error.message : undefined).toBe(
      'prompt is 11 characters; the limit is 10 (plugin setting maxPromptLength). Shorten it, or point to a file the agent can read.',
    )
    expect(loopChanges(fake.agent).map((change) => (change as { operation: string }).operation)).toEqual(['create', 'create'])
  })

  it('refuses an invalid row config at load', async () => {
    const host = await boot({ loop: false })
    const loopPlugin = await import('../src/index.ts')
    await expect(host.ctx.plugin(loopPlugin, { maxLoopsPerSession: 0 } as never)).rejects.toThrow()
    expect(host.ctx.tools.schemas().map((schema) => schema.name)).not.toContain('loop_create')
  })

  it('follows the loop section of the DSH settings document, live', async () => {
    const settingsPath = join(tempDir('loop-settings-'), 'settings.yaml')
    writeFileSync(settingsPath, 'loop:\n  maxLoopsPerSession: 1\n')
    const host = await boot({ settingsPath })
    const fake = await createFakeAgent(host, 'ses-settings')
    await runTool(host, fake.agent, 'loop_create', { prompt: 'first', time_in_seconds: 60 })
    const refused = await runTool(host, fake.agent, 'loop_create', { prompt: 'second', time_in_seconds: 60 })
    expect(refused.isError ? refused.error.message : undefined).toBe(TOO_MANY(1, 1))
    const settings = host.ctx.get('settings') as { update(ns: string, patch: object): Promise<void> }
    await settings.update('loop', { maxLoopsPerSession: 2 })
    const allowed = await runTool(host, fake.agent, 'loop_create', { prompt: 'second', time_in_seconds: 60 })
    expect(allowed.isError).toBe(false)
  })
})

describe('cancellation', () => {
  it('saves nothing when the call is cancelled while it waits for the flush', async () => {
    const host = await boot()
    const fake = await createFakeAgent(host, 'ses-cancel')
    const held: (() => void)[] = []
    const real = host.ctx.sessions.flush.bind(host.ctx.sessions)
    const spy = vi.spyOn(host.ctx.sessions, 'flush').mockImplementation((session) => new Promise<boolean>((resolve) => held.push(() => void real(session).then(resolve))))
    const controller = new AbortController()
    const call = host.ctx.tools.execute({ callId: CallId('cancel-1'), name: 'loop_create', arguments: { prompt: 'never', time_in_seconds: 1 }, signal: controller.signal, agent: fake.agent })
    await vi.advanceTimersByTimeAsync(0)
    controller.abort()
    spy.mockRestore()
    for (const release of held.splice(0)) release()
    const result = await call
    expect(result.isError ? result.error : 'succeeded').toEqual({ message: 'loop_create was cancelled; nothing was saved.', info: { name: 'LoopError', code: 'cancelled' } })
    await advance(3000)
    expect(loopChanges(fake.agent)).toEqual([])
    expect(fake.send).not.toHaveBeenCalled()
    // A retry creates exactly one loop.
    expect((await runTool(host, fake.agent, 'loop_create', { prompt: 'once', time_in_seconds: 60 })).isError).toBe(false)
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
    const result = await host.ctx.tools.execute({ callId: CallId('cancel-2'), name: 'loop_create', arguments: { prompt: 'kept', time_in_seconds: 60 }, signal: controller.signal, agent: fake.agent })
    spy.mockRestore()
    // The host reports the cancellation; the loop was already saved and stays (loop_list shows it).
    expect(result.isError ? result.error.message : 'succeeded').toBe('tool call aborted')
    expect(loopChanges(fake.agent)).toEqual([{ version: 1, operation: 'create', loop: expect.objectContaining({ prompt: 'kept' }) }])
  })
})

describe('one-shot hosts (dsh --profile headless)', () => {
  const NOTE = 'This is a one-shot run (dsh --profile headless): loops are saved in this session but nothing fires in this run; they start when the session is opened in a long-lived DSH (dsh web).'

  it('saves loops, tells the model, and never dispatches or arms a timer', async () => {
    const host = await boot({ oneShot: true })
    const fake = await createFakeAgent(host, 'ses-oneshot')
    const schema = host.ctx.tools.schemas(fake.agent).find((candidate) => candidate.name === 'loop_create')!
    expect(schema.description.endsWith(` ${NOTE}`)).toBe(true)
    const created = await runTool(host, fake.agent, 'loop_create', { prompt: 'later', time_in_seconds: 1 })
    expect(created.content).toEqual([{ type: 'text', text: `${JSON.stringify(created.isError ? undefined : created.value)}\n${NOTE}` }])
    await advance(5000)
    expect(fake.send).not.toHaveBeenCalled()
    expect(vi.getTimerCount()).toBe(0)
    expect(loopChanges(fake.agent)).toEqual([{ version: 1, operation: 'create', loop: { id: expect.any(String), prompt: 'later', time_in_seconds: 1, next_at: TEST_NOW + 1000 } }])
  })
})

describe('how calls read in the conversation', () => {
  it('presents each call as what it does', async () => {
    const host = await boot()
    const fake = await createFakeAgent(host, 'ses-present')
    const present = (name: string, args: unknown) => host.ctx.tools.get(name, fake.agent)!.presentCall!(args)
    expect(present('loop_create', { prompt: 'Check whether CI is green', time_in_seconds: 300 })).toEqual({
      card: 'generic',
      kind: 'other',
      title: 'Create loop · every 5m · Check whether CI is green',
      rawInput: 'Check whether CI is green',
    })
    expect((present('loop_create', { prompt: `  ${'word '.repeat(40)}\n`, time_in_seconds: 90 }) as { title: string }).title).toBe(
      `Create loop · every 1m 30s · ${'word '.repeat(16).slice(0, 79)}…`,
    )
    // A surrogate pair across the cut: the title stays well-formed (a UTF-16 cut left a lone \ud83d).
    const emoji = (present('loop_create', { prompt: `${'a'.repeat(78)}😀😀 more`, time_in_seconds: 60 }) as { title: string }).title
    expect(emoji).toBe(`Create loop · every 1m · ${'a'.repeat(78)}😀…`)
    expect(/\p{Cs}/u.test(emoji)).toBe(false)
    expect(present('loop_list', {})).toEqual({ card: 'generic', kind: 'read', title: 'List loops' })
    expect(present('loop_delete', { id: 'loop_1a2b3c4d' })).toEqual({ card: 'generic', kind: 'delete', title: 'Delete loop · loop_1a2b3c4d' })
  })
})

describe('background work belongs to no caller', () => {
  it('delivers a heartbeat outside the initiator of the call that created the loop', async () => {
    // Real timers: Node carries the caller's async context into a timer armed inside it (fake timers would not).
    const host = await bootHost()
    hosts.push(host)
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

describe('registration', () => {
  it('rolls back a partial registration and disposes idempotently', async () => {
    const host = await boot({ loop: false })
    const fake = await createFakeAgent(host, 'ses-rollback')
    // Something already owns loop_list in this agent's scope: the second registration fails.
    fake.agent.ctx.tools.register(
      defineTool({ name: 'loop_list', description: 'taken', parameters: {}, output: { schema: { type: 'string' }, render: () => [] }, execute: async () => 'taken' }),
    )
    const runtime = new LoopRuntime(host.ctx, fake.agent, { oneShot: false })
    expect(() => registerLoopTools(fake.agent.ctx, runtime, { config: () => DEFAULT_LOOP_CONFIG, oneShot: false })).toThrow()
    expect(host.ctx.tools.get('loop_create', fake.agent)).toBeUndefined()
    expect(host.ctx.tools.get('loop_list', fake.agent)?.description).toBe('taken')

    const other = await createFakeAgent(host, 'ses-rollback-2')
    const dispose = registerLoopTools(other.agent.ctx, new LoopRuntime(host.ctx, other.agent, { oneShot: false }), { config: () => DEFAULT_LOOP_CONFIG, oneShot: false })
    dispose()
    dispose()
    expect(host.ctx.tools.get('loop_create', other.agent)).toBeUndefined()
    await settle()
    await runtime.dispose()
  })
})

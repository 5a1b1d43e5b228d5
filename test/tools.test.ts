import { SessionId } from '@deepseek-ai/dsh-session'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import {
  AGENT_OPTIONS,
  createFakeAgent,
  loopChanges,
  persistedLoopChanges,
  runTool,
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
  ;({ host, fake } = await startFakeHost('ses-tools'))
})
afterEach(() => stopFakeHost(host))

const loopToolNames = (scope?: Parameters<Host['ctx']['tools']['schemas']>[0]) =>
  host.ctx.tools
    .schemas(scope)
    .map((schema) => schema.name)
    .filter((name) => name.startsWith('loop_'))

describe('registration', () => {
  it('gives a root agent exactly the three loop tools, and the global view none', () => {
    expect(loopToolNames(fake.agent)).toEqual(['loop_create', 'loop_list', 'loop_delete'])
    expect(loopToolNames()).toEqual([])
  })

  it('states strict schemas and the documented descriptions to the model', () => {
    const schemas = Object.fromEntries(host.ctx.tools.schemas(fake.agent).map((schema) => [schema.name, schema]))
    expect(schemas.loop_create?.description).toBe(
      'Schedule a recurring prompt in this session. Every time_in_seconds seconds the prompt arrives as a <heartbeat> user message: at the next step if you are working, as a new turn if idle (at most one heartbeat per loop in a turn; occurrences while one is still waiting are skipped). Returns the loop with its id; use loop_delete to stop it.',
    )
    expect(schemas.loop_list?.description).toBe(
      'List the active loops of this session with id, prompt, interval in seconds, next_at (epoch ms) and state.',
    )
    expect(schemas.loop_delete?.description).toBe(
      'Stop one active loop of this session by the id that loop_create or loop_list returned.',
    )
    expect(schemas.loop_create?.parameters).toMatchObject({
      type: 'object',
      required: ['prompt', 'time_in_seconds'],
      properties: { prompt: { type: 'string' }, time_in_seconds: { type: 'integer' } },
    })
    expect(Object.keys((schemas.loop_list?.parameters as { properties: object }).properties)).toEqual([])
    expect(schemas.loop_delete?.parameters).toMatchObject({ required: ['id'], properties: { id: { type: 'string' } } })
  })

  it('never shows the tools to a child agent', async () => {
    const child = await fake.agent.ctx.agents.create({
      sessionId: SessionId('ses-child'),
      meta: { cwd: host.root },
      agentOptions: AGENT_OPTIONS,
    })
    expect(host.ctx.agents.roots()).not.toContain(child.agent)
    expect(loopToolNames(child.agent)).toEqual([])
    const result = await runTool(host, child.agent, 'loop_list', {})
    expect(result.isError).toBe(true)
    await child.dispose()
  })

  it('removes the tools with their agent', async () => {
    const agent = fake.agent
    await fake.handle.dispose()
    expect(loopToolNames(agent)).toEqual([])
  })
})

describe('loop_create', () => {
  it('returns the LoopView, appends one create event and flushes it to disk before success', async () => {
    const result = await runTool(host, fake.agent, 'loop_create', {
      prompt: '  Check whether the build is still healthy ',
      time_in_seconds: 30,
    })
    expect(result.isError).toBe(false)
    if (result.isError) return
    const view = result.value as { id: string }
    expect(view).toEqual({
      id: expect.stringMatching(/^loop_[0-9a-f]{8}$/),
      prompt: 'Check whether the build is still healthy',
      time_in_seconds: 30,
      next_at: NOW + 30_000,
      state: 'scheduled',
      delivery_mode: 'session-local',
    })
    expect(result.content).toEqual([{ type: 'text', text: JSON.stringify(view) }])
    const expected = {
      version: 1,
      operation: 'create',
      loop: {
        id: view.id,
        prompt: 'Check whether the build is still healthy',
        time_in_seconds: 30,
        next_at: NOW + 30_000,
      },
    }
    expect(loopChanges(fake.agent)).toEqual([expected])
    expect(await persistedLoopChanges(host, 'ses-tools')).toEqual([expected])
  })

  it.each([
    [
      { prompt: 'p', time_in_seconds: 30, title: 'x' },
      'loop_create does not accept "title"; it takes only prompt and time_in_seconds.',
    ],
    [
      { prompt: 'p', time_in_seconds: 30, allow_steer: true },
      'loop_create does not accept "allow_steer"; it takes only prompt and time_in_seconds.',
    ],
    [
      { prompt: ' \n ', time_in_seconds: 30 },
      'prompt must be a string with visible content (whitespace and invisible characters alone do not count).',
    ],
    [
      { prompt: 'p', time_in_seconds: 0 },
      'time_in_seconds must be a positive whole number of seconds, for example 30.',
    ],
    [
      { prompt: 'p', time_in_seconds: -3 },
      'time_in_seconds must be a positive whole number of seconds, for example 30.',
    ],
  ])('rejects %j before appending anything', async (args, message) => {
    const result = await runTool(host, fake.agent, 'loop_create', args)
    expect(result.isError).toBe(true)
    if (!result.isError) return
    expect(result.error.message).toBe(message)
    expect(loopChanges(fake.agent)).toEqual([])
  })

  it('lets the registry schema reject wrong types before the body runs', async () => {
    const cases: [unknown, string][] = [
      [{ prompt: 'p', time_in_seconds: 1.5 }, 'invalid arguments: "time_in_seconds" must be an integer'],
      [{ prompt: 'p', time_in_seconds: '30' }, 'invalid arguments: "time_in_seconds" must be an integer'],
      [{ time_in_seconds: 30 }, 'invalid arguments: missing required property "prompt"'],
    ]
    for (const [args, message] of cases) {
      const result = await runTool(host, fake.agent, 'loop_create', args)
      expect(result.isError ? result.error : undefined).toEqual({
        message,
        info: { name: 'ToolArgsError', code: 'INVALID_ARGS' },
      })
    }
    expect(loopChanges(fake.agent)).toEqual([])
  })
})

describe('loop_list and loop_delete', () => {
  it('lists in creation order with derived state, then deletes by id', async () => {
    const first = await runTool(host, fake.agent, 'loop_create', { prompt: 'one', time_in_seconds: 5 })
    const second = await runTool(host, fake.agent, 'loop_create', { prompt: 'two', time_in_seconds: 50 })
    if (first.isError || second.isError) throw new Error('create failed')
    const [a, b] = [first.value as { id: string }, second.value as { id: string }]
    const listed = await runTool(host, fake.agent, 'loop_list', {})
    expect(listed.isError ? listed.error : listed.value).toEqual([
      {
        id: a.id,
        prompt: 'one',
        time_in_seconds: 5,
        next_at: NOW + 5000,
        state: 'scheduled',
        delivery_mode: 'session-local',
      },
      {
        id: b.id,
        prompt: 'two',
        time_in_seconds: 50,
        next_at: NOW + 50_000,
        state: 'scheduled',
        delivery_mode: 'session-local',
      },
    ])

    const deleted = await runTool(host, fake.agent, 'loop_delete', { id: a.id })
    expect(deleted.isError ? deleted.error : deleted.value).toEqual({ deleted: true, id: a.id })
    expect(loopChanges(fake.agent).at(-1)).toEqual({ version: 1, operation: 'delete', id: a.id })
    expect((await persistedLoopChanges(host, 'ses-tools')).at(-1)).toEqual({
      version: 1,
      operation: 'delete',
      id: a.id,
    })
    const after = await runTool(host, fake.agent, 'loop_list', {})
    expect(after.isError ? after.error : (after.value as { id: string }[]).map((loop) => loop.id)).toEqual([b.id])
  })

  it('rejects unknown ids, already deleted ids and malformed input without appending', async () => {
    const created = await runTool(host, fake.agent, 'loop_create', { prompt: 'one', time_in_seconds: 5 })
    if (created.isError) throw new Error('create failed')
    const id = (created.value as { id: string }).id
    await runTool(host, fake.agent, 'loop_delete', { id })
    const before = loopChanges(fake.agent).length
    const cases: [unknown, string][] = [
      [{ id }, `No active loop "${id}" in this session; run loop_list (or /loop list) to see its loops.`],
      [
        { id: 'loop_nope' },
        'No active loop "loop_nope" in this session; run loop_list (or /loop list) to see its loops.',
      ],
      [
        { id: '' },
        'id must be a loop id such as loop_1a2b3c4d (loop_ then letters, digits, _ or -); run loop_list to see them.',
      ],
      [{ id, session_id: 'ses-other' }, 'loop_delete does not accept "session_id"; it takes only id.'],
    ]
    for (const [args, message] of cases) {
      const result = await runTool(host, fake.agent, 'loop_delete', args)
      expect(result.isError ? result.error.message : 'succeeded').toBe(message)
    }
    const list = await runTool(host, fake.agent, 'loop_list', { id })
    expect(list.isError ? list.error.message : 'succeeded').toBe(
      'loop_list does not accept "id"; it takes no arguments.',
    )
    expect(loopChanges(fake.agent).length).toBe(before)
  })
})

describe('session isolation', () => {
  it('never lists, deletes or receives another session loop', async () => {
    const other = await createFakeAgent(host, 'ses-other')
    const created = await runTool(host, other.agent, 'loop_create', { prompt: 'theirs', time_in_seconds: 1 })
    if (created.isError) throw new Error('create failed')
    const theirs = (created.value as { id: string }).id

    const listed = await runTool(host, fake.agent, 'loop_list', {})
    expect(listed.isError ? listed.error : listed.value).toEqual([])
    const deleted = await runTool(host, fake.agent, 'loop_delete', { id: theirs })
    expect(deleted.isError ? deleted.error.message : 'succeeded').toBe(
      `No active loop "${theirs}" in this session; run loop_list (or /loop list) to see its loops.`,
    )

    await vi.advanceTimersByTimeAsync(1000)
    expect(other.send).toHaveBeenCalledTimes(1)
    expect(fake.send).not.toHaveBeenCalled()
    expect(loopChanges(fake.agent)).toEqual([])
  })

  it('refuses a call that names another agent than the owner', async () => {
    const definition = host.ctx.tools.get('loop_list', fake.agent)
    await expect(definition!.execute({}, { agent: undefined } as never)).rejects.toThrow(
      'Loop tools act only for the agent of the session that owns them.',
    )
  })
})

describe('persistence failures', () => {
  it('reports a flush that resolves false as an error and appends nothing', async () => {
    const spy = vi.spyOn(host.ctx.sessions, 'flush').mockResolvedValue(false)
    const result = await runTool(host, fake.agent, 'loop_create', { prompt: 'p', time_in_seconds: 5 })
    expect(result.isError ? result.error : undefined).toEqual({
      message: 'Session persistence did not acknowledge the flush; no persistence is mounted for this session.',
      info: { name: 'LoopError', code: 'persistence_failed' },
    })
    expect(loopChanges(fake.agent)).toEqual([])
    spy.mockRestore()
  })

  it('reports a rejected flush after the append as an error, never a success', async () => {
    const real = host.ctx.sessions.flush.bind(host.ctx.sessions)
    const spy = vi
      .spyOn(host.ctx.sessions, 'flush')
      .mockImplementationOnce(real)
      .mockRejectedValueOnce(new Error('disk full'))
    const result = await runTool(host, fake.agent, 'loop_create', { prompt: 'p', time_in_seconds: 5 })
    spy.mockRestore()
    // The error names the loop: it is live in this session, so the caller can list or delete it.
    const [created] = loopChanges(fake.agent) as [{ loop: { id: string } }]
    const id = created.loop.id
    expect(result.isError ? result.error : 'succeeded').toEqual({
      message: `loop_create changed ${id} in this session (${id} is active now), but saving the change failed, so it may not survive a restart; run loop_list to check it before retrying. Session persistence failed: disk full`,
      info: { name: 'LoopError', code: 'persistence_failed' },
    })
    const listed = await runTool(host, fake.agent, 'loop_list', {})
    expect(listed.isError ? undefined : (listed.value as { id: string }[]).map((loop) => loop.id)).toEqual([id])
    const deleteSpy = vi
      .spyOn(host.ctx.sessions, 'flush')
      .mockImplementationOnce(real)
      .mockRejectedValueOnce(new Error('disk full'))
    const deleted = await runTool(host, fake.agent, 'loop_delete', { id })
    deleteSpy.mockRestore()
    expect(deleted.isError ? deleted.error.message : 'succeeded').toBe(
      `loop_delete changed ${id} in this session (${id} is deleted now), but saving the change failed, so it may not survive a restart; run loop_list to check it before retrying. Session persistence failed: disk full`,
    )
  })

  it('reports a flush that throws synchronously as an error', async () => {
    const spy = vi.spyOn(host.ctx.sessions, 'flush').mockImplementation(() => {
      throw new Error('session "ses-tools" is not live in this store')
    })
    const result = await runTool(host, fake.agent, 'loop_list', {})
    expect(result.isError ? result.error.message : 'succeeded').toBe(
      'Session persistence failed: session "ses-tools" is not live in this store',
    )
    spy.mockRestore()
  })
})

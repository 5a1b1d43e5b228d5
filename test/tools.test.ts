/**
 * The loop tools (src/tools.ts) through the real tool runtime: registration and its rollback,
 * schemas, validation, isolation, and how each call reads (presentCall); and the view they
 * return, over plain records. How a call reports a failing flush is the simulation's (test/sim/).
 */
import { SessionId } from '@deepseek-ai/dsh-session'
import { defineTool } from '@deepseek-ai/dsh-tools'
import { describe, expect, it, vi } from 'vitest'
import { DEFAULT_LOOP_CONFIG } from '../src/config.ts'
import { renderHeartbeat } from '../src/shared/heartbeat.ts'
import { registerLoopTools, toLoopView } from '../src/tools.ts'
import {
  AGENT_OPTIONS,
  createFakeAgent,
  failureMessageOf,
  failureOf,
  listedOf,
  loopChanges,
  outcomeOf,
  ownRuntime,
  persistedLoopChanges,
  runTool,
  settle,
  useFakeHost,
  type Host,
} from './support/host.ts'
import { NOW } from './support/epoch.ts'
import { holdFlushes } from './support/faults.ts'
import { parseHeartbeat } from './support/heartbeat-xml.ts'
import { loopA } from './support/loop-fixtures.ts'

const rig = useFakeHost('ses-tools')

const loopToolNames = (scope?: Parameters<Host['ctx']['tools']['schemas']>[0]) =>
  rig.host.ctx.tools
    .schemas(scope)
    .map((schema) => schema.name)
    .filter((name) => name.startsWith('loop_'))

describe('registration', () => {
  it('gives a root agent exactly the three loop tools, and the global view none', () => {
    expect(loopToolNames(rig.fake.agent)).toEqual(['loop_create', 'loop_list', 'loop_delete'])
    expect(loopToolNames()).toEqual([])
  })

  it('states strict schemas and the documented descriptions to the model', () => {
    const schemas = Object.fromEntries(
      rig.host.ctx.tools.schemas(rig.fake.agent).map((schema) => [schema.name, schema]),
    )
    expect(schemas.loop_create?.description).toBe(
      'Schedule a recurring prompt in this session. Every time_in_seconds seconds the prompt arrives as a <heartbeat> user message: at the next step if you are working, as a new turn if idle (at most one heartbeat per loop in a turn; while one waits during your work, later occurrences are skipped). Returns the loop with its id; use loop_delete to stop it.',
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
    const child = await rig.fake.agent.ctx.agents.create({
      sessionId: SessionId('ses-child'),
      meta: { cwd: rig.host.root },
      agentOptions: AGENT_OPTIONS,
    })
    expect(rig.host.ctx.agents.roots()).not.toContain(child.agent)
    expect(loopToolNames(child.agent)).toEqual([])
    const result = await runTool(rig.host, child.agent, 'loop_list', {})
    expect(result.isError).toBe(true)
    await child.dispose()
  })

  it('removes the tools with their agent', async () => {
    const agent = rig.fake.agent
    await rig.fake.handle.dispose()
    expect(loopToolNames(agent)).toEqual([])
  })

  it('rolls back a partial registration and disposes idempotently', async () => {
    const host = await rig.boot({ loop: false })
    const fake = await createFakeAgent(host, 'ses-rollback')
    // Something already owns loop_list in this agent's scope: the second registration fails.
    fake.agent.ctx.tools.register(
      defineTool({
        name: 'loop_list',
        description: 'taken',
        parameters: {},
        output: { schema: { type: 'string' }, render: () => [] },
        execute: async () => 'taken',
      }),
    )
    const runtime = ownRuntime(host, fake.agent)
    expect(() =>
      registerLoopTools(fake.agent.ctx, runtime, { config: () => DEFAULT_LOOP_CONFIG, oneShotHost: false }),
    ).toThrow()
    expect(host.ctx.tools.get('loop_create', fake.agent)).toBeUndefined()
    expect(host.ctx.tools.get('loop_list', fake.agent)?.description).toBe('taken')

    const other = await createFakeAgent(host, 'ses-rollback-2')
    const dispose = registerLoopTools(other.agent.ctx, ownRuntime(host, other.agent), {
      config: () => DEFAULT_LOOP_CONFIG,
      oneShotHost: false,
    })
    dispose()
    dispose()
    expect(host.ctx.tools.get('loop_create', other.agent)).toBeUndefined()
    await settle()
    await runtime.dispose()
  })
})

describe('loop_create', () => {
  it('returns the LoopView, appends one create event and flushes it to disk before success', async () => {
    const result = await rig.tool('loop_create', {
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
    expect(loopChanges(rig.fake.agent)).toEqual([expected])
    expect(await persistedLoopChanges(rig.host, 'ses-tools')).toEqual([expected])
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
    [{ prompt: ' \n ', time_in_seconds: 30 }, 'prompt must be a string with non-whitespace content.'],
    [
      { prompt: 'p', time_in_seconds: 0 },
      'time_in_seconds must be a positive whole number of seconds, for example 30.',
    ],
    [
      { prompt: 'p', time_in_seconds: -3 },
      'time_in_seconds must be a positive whole number of seconds, for example 30.',
    ],
  ])('rejects %j before appending anything', async (args, message) => {
    const result = await rig.tool('loop_create', args)
    expect(result.isError).toBe(true)
    if (!result.isError) return
    expect(result.error.message).toBe(message)
    expect(loopChanges(rig.fake.agent)).toEqual([])
  })

  it('refuses a prompt whose every heartbeat no XML reader would accept, before appending anything', async () => {
    const prompt = 'ring the bell \u0007 when done'
    expect(() => parseHeartbeat(renderHeartbeat({ ...loopA, prompt }))).toThrow(/^not well-formed XML/)
    const result = await rig.tool('loop_create', { prompt, time_in_seconds: 1 })
    expect(failureOf(result)).toEqual({
      message:
        'prompt contains the control or non-text character U+0007 at position 15; only text, tabs and line breaks are allowed.',
      info: { name: 'LoopError', code: 'invalid_prompt' },
    })
    expect(loopChanges(rig.fake.agent)).toEqual([])
  })

  it('refuses, at the instant the record is made, an interval the clock moved past the last date while the call queued', async () => {
    // Valid for ten more seconds when called; the transaction's pre-flush is held while a minute passes.
    const seconds = Math.floor((8.64e15 - Date.now()) / 1000) - 10
    const held = holdFlushes(rig.host)
    const call = rig.tool('loop_create', { prompt: 'p', time_in_seconds: seconds })
    await vi.waitFor(() => expect(held.waiting()).toBe(1))
    vi.setSystemTime(Date.now() + 60_000)
    await held.release()
    const result = await call
    const longestNow = Math.floor((8.64e15 - Date.now()) / 1000)
    expect(longestNow).toBeLessThan(seconds)
    expect(failureOf(result)).toEqual({
      message: `time_in_seconds is ${seconds}, so the first heartbeat would fall after +275760-09-13T00:00:00.000Z, the last date a timestamp can hold; the longest interval accepted now is ${longestNow} seconds.`,
      info: { name: 'LoopError', code: 'invalid_interval' },
    })
    expect(loopChanges(rig.fake.agent)).toEqual([])
  })

  it('lets the registry schema reject wrong types before the body runs', async () => {
    const cases: [unknown, string][] = [
      [{ prompt: 'p', time_in_seconds: 1.5 }, 'invalid arguments: "time_in_seconds" must be an integer'],
      [{ prompt: 'p', time_in_seconds: '30' }, 'invalid arguments: "time_in_seconds" must be an integer'],
      [{ time_in_seconds: 30 }, 'invalid arguments: missing required property "prompt"'],
    ]
    for (const [args, message] of cases) {
      const result = await rig.tool('loop_create', args)
      expect(failureOf(result)).toEqual({
        message,
        info: { name: 'ToolArgsError', code: 'INVALID_ARGS' },
      })
    }
    expect(loopChanges(rig.fake.agent)).toEqual([])
  })
})

describe('loop_list and loop_delete', () => {
  it('lists in creation order with derived state, then deletes by id', async () => {
    const first = await rig.tool('loop_create', { prompt: 'one', time_in_seconds: 5 })
    const second = await rig.tool('loop_create', { prompt: 'two', time_in_seconds: 50 })
    if (first.isError || second.isError) throw new Error('create failed')
    const [a, b] = [first.value as { id: string }, second.value as { id: string }]
    const listed = await rig.tool('loop_list', {})
    expect(outcomeOf(listed)).toEqual([
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

    const deleted = await rig.tool('loop_delete', { id: a.id })
    expect(outcomeOf(deleted)).toEqual({ deleted: true, id: a.id })
    expect(loopChanges(rig.fake.agent).at(-1)).toEqual({ version: 1, operation: 'delete', id: a.id })
    expect((await persistedLoopChanges(rig.host, 'ses-tools')).at(-1)).toEqual({
      version: 1,
      operation: 'delete',
      id: a.id,
    })
    const after = await rig.tool('loop_list', {})
    expect(listedOf(after, 'id')).toEqual([b.id])
  })

  it('rejects unknown ids, already deleted ids and malformed input without appending', async () => {
    const created = await rig.tool('loop_create', { prompt: 'one', time_in_seconds: 5 })
    if (created.isError) throw new Error('create failed')
    const id = (created.value as { id: string }).id
    await rig.tool('loop_delete', { id })
    const before = loopChanges(rig.fake.agent).length
    const cases: [unknown, string][] = [
      [{ id }, `No active loop "${id}" in this session; run loop_list (or /loop list) to see its loops.`],
      [
        { id: 'loop_nope' },
        'No active loop "loop_nope" in this session; run loop_list (or /loop list) to see its loops.',
      ],
      [
        { id: '' },
        'id must be a loop id such as loop_3fa9c2d1 (loop_ then letters, digits, _ or -); run loop_list to see them.',
      ],
      [{ id, session_id: 'ses-other' }, 'loop_delete does not accept "session_id"; it takes only id.'],
    ]
    for (const [args, message] of cases) {
      const result = await rig.tool('loop_delete', args)
      expect(failureMessageOf(result)).toBe(message)
    }
    const list = await rig.tool('loop_list', { id })
    expect(failureMessageOf(list)).toBe('loop_list does not accept "id"; it takes no arguments.')
    expect(loopChanges(rig.fake.agent).length).toBe(before)
  })
})

describe('session isolation', () => {
  it('never lists, deletes or receives another session loop', async () => {
    const other = await createFakeAgent(rig.host, 'ses-other')
    const created = await runTool(rig.host, other.agent, 'loop_create', { prompt: 'theirs', time_in_seconds: 1 })
    if (created.isError) throw new Error('create failed')
    const theirs = (created.value as { id: string }).id

    const listed = await rig.tool('loop_list', {})
    expect(outcomeOf(listed)).toEqual([])
    const deleted = await rig.tool('loop_delete', { id: theirs })
    expect(failureMessageOf(deleted)).toBe(
      `No active loop "${theirs}" in this session; run loop_list (or /loop list) to see its loops.`,
    )

    await vi.advanceTimersByTimeAsync(1000)
    expect(other.send).toHaveBeenCalledTimes(1)
    expect(rig.fake.send).not.toHaveBeenCalled()
    expect(loopChanges(rig.fake.agent)).toEqual([])
  })

  it('refuses a call that names another agent than the owner', async () => {
    const definition = rig.host.ctx.tools.get('loop_list', rig.fake.agent)
    await expect(definition!.execute({}, { agent: undefined } as never)).rejects.toThrow(
      'Loop tools act only for the agent of the session that owns them.',
    )
  })
})

describe('how calls read in the conversation', () => {
  it('presents each call as what it does', async () => {
    const present = (name: string, args: unknown) => rig.host.ctx.tools.get(name, rig.fake.agent)!.presentCall!(args)
    expect(present('loop_create', { prompt: 'Check whether CI is green', time_in_seconds: 300 })).toEqual({
      card: 'generic',
      kind: 'other',
      title: 'Create loop · every 5m · Check whether CI is green',
      rawInput: 'Check whether CI is green',
    })
    expect(
      (present('loop_create', { prompt: `  ${'word '.repeat(40)}\n`, time_in_seconds: 90 }) as { title: string }).title,
    ).toBe(`Create loop · every 1m 30s · ${'word '.repeat(16).slice(0, 79)}…`)
    // A surrogate pair across the cut: the title stays well-formed (a UTF-16 cut left a lone \ud83d).
    const emoji = (
      present('loop_create', { prompt: `${'a'.repeat(78)}😀😀 more`, time_in_seconds: 60 }) as { title: string }
    ).title
    expect(emoji).toBe(`Create loop · every 1m · ${'a'.repeat(78)}😀…`)
    expect(/\p{Cs}/u.test(emoji)).toBe(false)
    expect(present('loop_list', {})).toEqual({ card: 'generic', kind: 'read', title: 'List loops' })
    expect(present('loop_delete', { id: 'loop_1a2b3c4d' })).toEqual({
      card: 'generic',
      kind: 'delete',
      title: 'Delete loop · loop_1a2b3c4d',
    })
  })
})

describe('views', () => {
  it('derives scheduled and overdue views, overdue from next_at on', () => {
    expect(toLoopView(loopA, NOW)).toStrictEqual({ ...loopA, state: 'scheduled', delivery_mode: 'session-local' })
    expect(toLoopView(loopA, NOW + 999)).toStrictEqual({ ...loopA, state: 'scheduled', delivery_mode: 'session-local' })
    expect(toLoopView(loopA, NOW + 1000)).toStrictEqual({ ...loopA, state: 'overdue', delivery_mode: 'session-local' })
    expect(toLoopView(loopA, NOW + 5000)).toStrictEqual({ ...loopA, state: 'overdue', delivery_mode: 'session-local' })
  })

  it('leaves the record as it was', () => {
    const record = Object.freeze({ ...loopA })
    const view = toLoopView(record, NOW)
    expect(view).not.toBe(record)
    expect(record).toStrictEqual(loopA)
  })
})

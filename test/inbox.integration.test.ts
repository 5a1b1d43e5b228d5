/**
 * A heartbeat left in the inbox, against the real agent loop and the published mock
 * LLM on loopback (real timers): every way an idle agent can be left holding one
 * (Stop keeping the inbox, Stop clearing it, a turn that ends in an error, a
 * crash) and a delete while one waits or is being claimed.
 */
import { cpSync } from 'node:fs'
import type { Agent } from '@deepseek-ai/dsh-agent'
import type { MockLlmServerOptions } from '@deepseek-ai/dsh-llm-mock-server'
import { SessionId, type SessionEvent } from '@deepseek-ai/dsh-session'
import { expect, it } from 'vitest'
import * as loopPlugin from '../src/index.ts'
import { readHeartbeat } from '../src/shared/heartbeat.ts'
import {
  AGENT_OPTIONS,
  createLoopByCommand,
  createRealAgent,
  runCommand,
  sendTask,
  until,
  useMockModel,
} from './support/host.ts'
import { tempDir } from '../harness/temp-dir.ts'

const model = useMockModel()

/** A model whose every step streams for about 3 s (10 chunks, 300 ms apart). */
const SLOW_STEPS: Omit<MockLlmServerOptions, 'port'> = {
  sequence: ['slow_success'],
  repeatLast: true,
  successText: 'a step that takes a while..',
  chunkSize: 3,
  chunkDelayMs: 300,
}

/** Messages of one loop waiting in the inbox. */
const waitingOf = (agent: Agent, id: string) =>
  [...agent.inbox.nextStep, ...agent.inbox.nextTurn].filter((message) => readHeartbeat(message)?.loopId === id)

/** The loop's heartbeats that reached a step (logged user messages). */
const deliveredOf = (events: readonly SessionEvent[], id: string) =>
  events.filter((event) => event.type === 'user/message' && readHeartbeat(event.data)?.loopId === id)

/** Whether a request the model received carried the loop's heartbeat. */
const modelSaw = (id: string) =>
  model.server.requests.some((request) => JSON.stringify(request.body).includes(`<loop_id>${id}</loop_id>`))

const turnStarts = (events: readonly SessionEvent[]) => events.filter((event) => event.type === 'turn/start').length

/** Replay the log's inbox splices: the most heartbeats of one loop ever waiting at once. */
function mostWaiting(events: readonly SessionEvent[], id: string): number {
  const pending = new Map<string, boolean>()
  let most = 0
  const lists: Record<string, string[]> = { 'next-step': [], 'next-turn': [] }
  for (const event of events) {
    if (event.type !== 'agent/inbox/spliced') continue
    const data = event.data as { target: string; start: number; removedCount?: number; inserted: { id: string }[] }
    const list = lists[data.target]!
    list.splice(data.start, data.removedCount ?? 0, ...data.inserted.map((message) => message.id))
    for (const message of data.inserted) pending.set(message.id, readHeartbeat(message)?.loopId === id)
    most = Math.max(
      most,
      [...lists['next-step']!, ...lists['next-turn']!].filter((messageId) => pending.get(messageId)).length,
    )
  }
  return most
}

/** A host on the slow model and a real agent on `sessionId` with a one-second loop of `prompt`. */
async function slowAgentWithLoop(sessionId: string, prompt: string) {
  const host = await model.start(SLOW_STEPS)
  const agent = await createRealAgent(host, sessionId)
  return { host, agent, id: await createLoopByCommand(host, agent, 1, prompt) }
}

/** Wait until one heartbeat of the loop waits in the inbox. */
const untilOneWaiting = (agent: Agent, id: string) =>
  until('a waiting heartbeat', () => waitingOf(agent, id).length === 1)

/** The loop's `dispatch` records: one per occurrence handled, sent or coalesced. */
const dispatchesOf = (events: readonly SessionEvent[], id: string) =>
  events.filter(
    (event) =>
      event.type === 'loop/change' &&
      (event.data as { operation: string; id?: string }).operation === 'dispatch' &&
      (event.data as { id?: string }).id === id,
  ).length

/**
 * Wait until the turn the loop's first heartbeat opened is still running and a later occurrence
 * has been handled in it: coalesced (a dispatch, nothing sent), since that turn already took one.
 */
const untilCoalescedIntoHeartbeatTurn = (agent: Agent, id: string) =>
  until(
    'an occurrence coalesced into the running heartbeat turn',
    () => agent.status === 'running' && dispatchesOf(agent.session.events, id) >= 2,
  )

/** Wait until a heartbeat of the loop reaches a step logged after position `from`. */
const untilDeliveredAfter = (what: string, agent: Agent, id: string, from: number) =>
  until(what, () => deliveredOf(agent.session.events.slice(from), id).length > 0, 10_000)

/** A user's long task, as the composer queues it. */
const task = (agent: Agent) => sendTask(agent, 'the long task')

it('Stop keeping the inbox while a next-step heartbeat waits: the next occurrence wakes the idle agent with a fresh one', async () => {
  const { host, agent, id } = await slowAgentWithLoop('ses-stop-step', 'STOP_STEP')
  task(agent)
  await until('a next-step heartbeat waiting behind the long step', () =>
    agent.inbox.nextStep.some((message) => readHeartbeat(message)?.loopId === id),
  )
  const [stale] = waitingOf(agent, id)
  // DSH web's Stop (session.cancel in dsh-host-apiproxy).
  agent.cancel({ kind: 'user' }, { keepInbox: true })
  const stoppedAt = agent.session.events.length
  await untilDeliveredAfter('a heartbeat delivered after Stop', agent, id, stoppedAt)

  const events = agent.session.events
  const after = events.slice(stoppedAt)
  expect(after.find((event) => event.type === 'turn/end')?.data).toMatchObject({ turn: 1, reason: { kind: 'aborted' } })
  const [delivered] = deliveredOf(after, id)
  expect((delivered!.data as { id: string }).id).not.toBe(stale!.id)
  expect(deliveredOf(events, id).some((event) => (event.data as { id: string }).id === stale!.id)).toBe(false)
  expect(turnStarts(events)).toBeGreaterThanOrEqual(2)
  expect(mostWaiting(events, id)).toBe(1)
  await until('a model request carrying the heartbeat', () => modelSaw(id), 10_000)
  await runCommand(host, agent, `/loop delete ${id}`)
}, 30_000)

it('Stop during a heartbeat turn an occurrence coalesced into: the next occurrence wakes the idle agent', async () => {
  const { host, agent, id } = await slowAgentWithLoop('ses-stop-turn', 'STOP_TURN')
  // The first heartbeat opens a (slow) turn; the next occurrence coalesces into it, nothing waits.
  await untilCoalescedIntoHeartbeatTurn(agent, id)
  expect(waitingOf(agent, id)).toEqual([])
  agent.cancel({ kind: 'user' }, { keepInbox: true })
  const stoppedAt = agent.session.events.length
  await untilDeliveredAfter('a heartbeat delivered after Stop', agent, id, stoppedAt)
  expect(turnStarts(agent.session.events.slice(stoppedAt))).toBeGreaterThanOrEqual(1)
  expect(mostWaiting(agent.session.events, id)).toBe(1)
  await runCommand(host, agent, `/loop delete ${id}`)
}, 30_000)

it('Stop clearing the inbox discards the waiting heartbeat: the next occurrence is sent as usual', async () => {
  const { host, agent, id } = await slowAgentWithLoop('ses-stop-clear', 'STOP_CLEAR')
  task(agent)
  await untilOneWaiting(agent, id)
  agent.cancel({ kind: 'user' })
  expect(waitingOf(agent, id)).toEqual([])
  const stoppedAt = agent.session.events.length
  await untilDeliveredAfter('a heartbeat delivered after Stop', agent, id, stoppedAt)
  expect(mostWaiting(agent.session.events, id)).toBe(1)
  await runCommand(host, agent, `/loop delete ${id}`)
}, 30_000)

it('a turn that ends in an error with a heartbeat waiting: the next occurrence replaces it and the loop keeps firing', async () => {
  // The task's request is held until the loop's heartbeat waits for the next step, then refused (a non-retryable 400).
  const host = await model.start({
    sequence: ['invalid_request', 'success'],
    repeatLast: true,
    successText: 'fine now',
  })
  let release!: () => void
  const held = new Promise<void>((resolve) => (release = resolve))
  let first = true
  host.ctx.on('agent/request', async (_payload, next) => {
    if (first) {
      first = false
      await held
    }
    return next()
  })
  const agent = await createRealAgent(host, 'ses-error-turn')
  task(agent)
  await until('the task turn', () => agent.status === 'running')
  const id = await createLoopByCommand(host, agent, 1, 'ERROR_TURN')
  await until('a next-step heartbeat waiting behind the held request', () =>
    agent.inbox.nextStep.some((message) => readHeartbeat(message)?.loopId === id),
  )
  release()
  await until('the turn to end in an error', () =>
    agent.session.events.some(
      (event) => event.type === 'turn/end' && (event.data as { reason: { kind: string } }).reason.kind === 'error',
    ),
  )
  const failedAt = agent.session.events.length
  await untilDeliveredAfter('a heartbeat delivered after the failed turn', agent, id, failedAt)
  await until(
    'the model to answer it',
    () => agent.session.events.slice(failedAt).some((event) => event.type === 'assistant/message'),
    10_000,
  )
  expect(mostWaiting(agent.session.events, id)).toBe(1)
  await runCommand(host, agent, `/loop delete ${id}`)
}, 30_000)

it('a crash while a heartbeat waits (the turn was interrupted): the resumed idle agent is woken by the next occurrence', async () => {
  const { host: first, agent: before, id } = await slowAgentWithLoop('ses-crash', 'CRASH')
  task(before)
  await untilOneWaiting(before, id)
  await first.ctx.sessions.flush(before.session)
  // SIGKILL: the next process finds the files exactly as they are now (a clean shutdown would cancel the inbox).
  const root = tempDir()
  cpSync(first.root, root, { recursive: true })
  await model.dispose(first)

  const second = await model.start(SLOW_STEPS, root)
  const { agent } = await second.ctx.agents.resume({
    resumeSessionId: SessionId('ses-crash'),
    agentOptions: AGENT_OPTIONS,
  })
  const resumedAt = agent.session.events.length
  expect(agent.status).toBe('idle')
  expect(waitingOf(agent, id)).toHaveLength(1)
  await untilDeliveredAfter('a heartbeat delivered after the crash', agent, id, resumedAt)
  expect(mostWaiting(agent.session.events, id)).toBe(1)
  await runCommand(second, agent, `/loop delete ${id}`)
}, 30_000)

it('/loop delete while a next-step heartbeat waits: it never reaches the model', async () => {
  const { host, agent, id } = await slowAgentWithLoop('ses-delete-step', 'DELETE_STEP')
  task(agent)
  await untilOneWaiting(agent, id)
  expect(await runCommand(host, agent, `/loop delete ${id}`)).toEqual({ kind: 'success', text: `Deleted ${id}.` })
  expect(waitingOf(agent, id)).toEqual([])
  await agent.whenIdle()
  expect(deliveredOf(agent.session.events, id)).toEqual([])
  expect(modelSaw(id)).toBe(false)
  expect(turnStarts(agent.session.events)).toBe(1)
}, 30_000)

it('/loop delete during a heartbeat turn: no further turn', async () => {
  const { host, agent, id } = await slowAgentWithLoop('ses-delete-turn', 'DELETE_TURN')
  await untilCoalescedIntoHeartbeatTurn(agent, id)
  expect(await runCommand(host, agent, `/loop delete ${id}`)).toEqual({ kind: 'success', text: `Deleted ${id}.` })
  await agent.whenIdle()
  // Two intervals more, idle: a loop still active would have woken the agent by now.
  await new Promise((resolve) => setTimeout(resolve, 2_000))
  // Only the heartbeat that opened the running turn, which was under way before the delete.
  expect(deliveredOf(agent.session.events, id)).toHaveLength(1)
  expect(turnStarts(agent.session.events)).toBe(1)
}, 30_000)

it('a delete decided after DSH claimed the heartbeat for a step, before the step is entered: the step goes without it', async () => {
  const host = await model.start({ sequence: ['success'], repeatLast: true, successText: 'done' })
  let release!: () => void
  const held = new Promise<void>((resolve) => (release = resolve))
  let claimed = false
  host.ctx.on('agent/inbox/claimed', ({ message }) => {
    if (readHeartbeat(message) !== undefined) claimed = true
  })
  // Another plugin's pre-step hook that takes its time (DSH's own assemble the system prompt here).
  host.ctx.on('agent/pre-step', async (_payload, next) => {
    if (claimed) await held
    return next()
  })
  const agent = await createRealAgent(host, 'ses-delete-claimed')
  const id = await createLoopByCommand(host, agent, 1, 'DELETE_CLAIMED')
  await until('the heartbeat claimed for a step', () => claimed)
  expect(waitingOf(agent, id)).toEqual([])
  expect(await runCommand(host, agent, `/loop delete ${id}`)).toEqual({ kind: 'success', text: `Deleted ${id}.` })
  release()
  await agent.whenIdle()
  expect(deliveredOf(agent.session.events, id)).toEqual([])
  // The turn the heartbeat opened ends without a step: no model request at all (not even one with only DSH's context).
  expect(model.server.requests).toEqual([])
  const turn = agent.session.events
    .filter((event) => event.type.startsWith('turn/') || event.type.startsWith('step/'))
    .map((event) => [event.type, event.data])
  expect(turn).toEqual([
    ['turn/start', { turn: 1 }],
    ['turn/end', { turn: 1, reason: { kind: 'completed' } }],
  ])
}, 30_000)

it('a hot reload while DSH holds a claimed heartbeat before its step: that turn takes the loop once', async () => {
  const host = await model.start({ sequence: ['success'], repeatLast: true, successText: 'done' }, undefined, {
    loop: false,
  })
  const first = host.ctx.plugin(loopPlugin)
  await first
  let release!: () => void
  const held = new Promise<void>((resolve) => (release = resolve))
  let claims = 0
  host.ctx.on('agent/inbox/claimed', ({ message }) => {
    if (readHeartbeat(message) !== undefined) claims += 1
  })
  // DSH assembles the system prompt between the claim and the step: here, a hook that takes its time.
  host.ctx.on('agent/pre-step', async (_payload, next) => {
    if (claims === 1) await held
    return next()
  })
  const agent = await createRealAgent(host, 'ses-reload-claimed')
  const id = await createLoopByCommand(host, agent, 1, 'RELOADED_WHILE_CLAIMED')
  await until('the heartbeat claimed for a step', () => claims === 1)
  // The plugin is replaced meanwhile: the claimed heartbeat is in neither the inbox nor the log.
  await first.dispose()
  await host.ctx.plugin(loopPlugin)
  // The next occurrence falls due while the claimed step still waits.
  await new Promise((resolve) => setTimeout(resolve, 1_500))
  release()
  await until('the first turn to end', () =>
    agent.session.events.some((event) => event.type === 'turn/end' && event.data.turn === 1),
  )
  expect(await runCommand(host, agent, `/loop delete ${id}`)).toEqual({ kind: 'success', text: `Deleted ${id}.` })
  await agent.whenIdle()
  const firstTurn = agent.session.events.slice(
    agent.session.events.findIndex((event) => event.type === 'turn/start'),
    agent.session.events.findIndex((event) => event.type === 'turn/end') + 1,
  )
  expect(deliveredOf(firstTurn, id)).toHaveLength(1)
}, 30_000)

it('a child agent (no loops of its own) enters its steps untouched', async () => {
  const host = await model.start({ sequence: ['success'], repeatLast: true, successText: 'child answer' })
  const parent = await createRealAgent(host, 'ses-parent')
  const { agent: child } = await parent.ctx.agents.create({
    sessionId: SessionId('ses-child'),
    meta: { cwd: host.root },
    agentOptions: AGENT_OPTIONS,
  })
  sendTask(child, 'child task')
  await until('the child to answer', () => child.session.events.some((event) => event.type === 'assistant/message'))
  await child.whenIdle()
  expect(
    child.session.events
      .filter((event) => event.type === 'user/message')
      .map((event) => (event.data as { content: { text: string }[] }).content[0]!.text),
  ).toEqual(['child task'])
}, 30_000)

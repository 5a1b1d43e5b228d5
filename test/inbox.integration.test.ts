/**
 * A heartbeat left in the inbox, against the real agent loop and the published mock
 * LLM on loopback (real timers): every way an idle agent can be left holding one
 * (Stop keeping the inbox, Stop clearing it, a turn that ends in an error, a
 * crash) and a delete while one waits or is being claimed.
 */
import { cpSync } from 'node:fs'
import type { Agent } from '@deepseek-ai/dsh-agent'
import { createUserMessage } from '@deepseek-ai/dsh-llm'
import { startMockLlmServer, type MockLlmServer, type MockLlmServerOptions } from '@deepseek-ai/dsh-llm-mock-server'
import { SessionId, type SessionEvent } from '@deepseek-ai/dsh-session'
import { afterEach, expect, it } from 'vitest'
import { readHeartbeat } from '../src/shared/heartbeat.ts'
import { AGENT_OPTIONS, bootHost, runCommand, tempDir, type Host } from './support/host.ts'

const hosts: Host[] = []
let server: MockLlmServer | undefined

afterEach(async () => {
  for (const host of hosts.splice(0)) await host.dispose()
  await server?.close()
  server = undefined
})

/** A model whose every step streams for about 3 s (10 chunks, 300 ms apart). */
const SLOW_STEPS: Omit<MockLlmServerOptions, 'port'> = {
  sequence: ['slow_success'],
  repeatLast: true,
  successText: 'a step that takes a while..',
  chunkSize: 3,
  chunkDelayMs: 300,
}

/** Boot a real host against a fresh mock model. */
async function start(script: Omit<MockLlmServerOptions, 'port'>, root = tempDir()): Promise<Host> {
  server ??= await startMockLlmServer({ port: 0, ...script })
  const host = await bootHost({ root, baseURL: `${server.baseURL}/v1` })
  hosts.push(host)
  return host
}

/** A real root agent (real `send`, real inbox, real turns). */
async function agentOn(host: Host, id: string): Promise<Agent> {
  return (
    await host.ctx.agents.create({ sessionId: SessionId(id), meta: { cwd: host.root }, agentOptions: AGENT_OPTIONS })
  ).agent
}

/** Poll until a condition holds, failing with a description after the deadline. */
async function until(what: string, condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** `/loop <seconds> <prompt>` through the real command runtime; returns the id. */
async function createLoop(host: Host, agent: Agent, seconds: number, prompt: string): Promise<string> {
  const reply = await runCommand(host, agent, `/loop ${seconds} ${prompt}`)
  const id = /^Created (loop_[0-9a-f]{8}):/.exec(reply.text ?? '')?.[1]
  if (id === undefined) throw new Error(`unexpected create reply: ${reply.text}`)
  return id
}

/** Messages of one loop waiting in the inbox. */
const waitingOf = (agent: Agent, id: string) =>
  [...agent.inbox.nextStep, ...agent.inbox.nextTurn].filter((message) => readHeartbeat(message)?.loopId === id)

/** The loop's heartbeats that reached a step (logged user messages). */
const deliveredOf = (events: readonly SessionEvent[], id: string) =>
  events.filter((event) => event.type === 'user/message' && readHeartbeat(event.data)?.loopId === id)

/** Whether a request the model received carried the loop's heartbeat. */
const modelSaw = (id: string) =>
  server!.requests.some((request) => JSON.stringify(request.body).includes(`<loop_id>${id}</loop_id>`))

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

/** A user's long task, as the composer queues it. */
const task = (agent: Agent) =>
  agent.send(
    createUserMessage({ content: [{ type: 'text', text: 'the long task' }], source: { kind: 'user' } }),
    'next-turn',
    true,
  )

it('Stop keeping the inbox while a next-step heartbeat waits: the next occurrence wakes the idle agent with a fresh one', async () => {
  const host = await start(SLOW_STEPS)
  const agent = await agentOn(host, 'ses-stop-step')
  const id = await createLoop(host, agent, 1, 'STOP_STEP')
  task(agent)
  await until('a next-step heartbeat waiting behind the long step', () =>
    agent.inbox.nextStep.some((message) => readHeartbeat(message)?.loopId === id),
  )
  const [stale] = waitingOf(agent, id)
  // DSH web's Stop (session.cancel in dsh-host-apiproxy).
  agent.cancel({ kind: 'user' }, { keepInbox: true })
  const stoppedAt = agent.session.events.length
  await until(
    'a heartbeat delivered after Stop',
    () => deliveredOf(agent.session.events.slice(stoppedAt), id).length > 0,
    10_000,
  )

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

it('Stop keeping the inbox while a next-turn heartbeat waits behind a heartbeat turn: the loop keeps firing', async () => {
  const host = await start(SLOW_STEPS)
  const agent = await agentOn(host, 'ses-stop-turn')
  const id = await createLoop(host, agent, 1, 'STOP_TURN')
  // The first heartbeat opens a (slow) turn; the next one waits for the next turn.
  await until('a next-turn heartbeat waiting behind the heartbeat turn', () =>
    agent.inbox.nextTurn.some((message) => readHeartbeat(message)?.loopId === id),
  )
  agent.cancel({ kind: 'user' }, { keepInbox: true })
  const stoppedAt = agent.session.events.length
  await until(
    'a heartbeat delivered after Stop',
    () => deliveredOf(agent.session.events.slice(stoppedAt), id).length > 0,
    10_000,
  )
  expect(turnStarts(agent.session.events.slice(stoppedAt))).toBeGreaterThanOrEqual(1)
  expect(mostWaiting(agent.session.events, id)).toBe(1)
  await runCommand(host, agent, `/loop delete ${id}`)
}, 30_000)

it('Stop clearing the inbox discards the waiting heartbeat: the next occurrence is sent as usual', async () => {
  const host = await start(SLOW_STEPS)
  const agent = await agentOn(host, 'ses-stop-clear')
  const id = await createLoop(host, agent, 1, 'STOP_CLEAR')
  task(agent)
  await until('a waiting heartbeat', () => waitingOf(agent, id).length === 1)
  agent.cancel({ kind: 'user' })
  expect(waitingOf(agent, id)).toEqual([])
  const stoppedAt = agent.session.events.length
  await until(
    'a heartbeat delivered after Stop',
    () => deliveredOf(agent.session.events.slice(stoppedAt), id).length > 0,
    10_000,
  )
  expect(mostWaiting(agent.session.events, id)).toBe(1)
  await runCommand(host, agent, `/loop delete ${id}`)
}, 30_000)

it('a turn that ends in an error with a heartbeat waiting: the next occurrence replaces it and the loop keeps firing', async () => {
  // The heartbeat turn's request is held until the next heartbeat waits, then refused (a non-retryable 400).
  const host = await start({ sequence: ['invalid_request', 'success'], repeatLast: true, successText: 'fine now' })
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
  const agent = await agentOn(host, 'ses-error-turn')
  const id = await createLoop(host, agent, 1, 'ERROR_TURN')
  await until('a next-turn heartbeat waiting behind the held request', () =>
    agent.inbox.nextTurn.some((message) => readHeartbeat(message)?.loopId === id),
  )
  release()
  await until('the turn to end in an error', () =>
    agent.session.events.some(
      (event) => event.type === 'turn/end' && (event.data as { reason: { kind: string } }).reason.kind === 'error',
    ),
  )
  const failedAt = agent.session.events.length
  await until(
    'a heartbeat delivered after the failed turn',
    () => deliveredOf(agent.session.events.slice(failedAt), id).length > 0,
    10_000,
  )
  await until(
    'the model to answer it',
    () => agent.session.events.slice(failedAt).some((event) => event.type === 'assistant/message'),
    10_000,
  )
  expect(mostWaiting(agent.session.events, id)).toBe(1)
  await runCommand(host, agent, `/loop delete ${id}`)
}, 30_000)

it('a crash while a heartbeat waits (the turn was interrupted): the resumed idle agent is woken by the next occurrence', async () => {
  const first = await start(SLOW_STEPS)
  const before = await agentOn(first, 'ses-crash')
  const id = await createLoop(first, before, 1, 'CRASH')
  task(before)
  await until('a waiting heartbeat', () => waitingOf(before, id).length === 1)
  await first.ctx.sessions.flush(before.session)
  // SIGKILL: the next process finds the files exactly as they are now (a clean shutdown would cancel the inbox).
  const root = tempDir()
  cpSync(first.root, root, { recursive: true })
  await hosts.shift()!.dispose()

  const second = await start(SLOW_STEPS, root)
  const { agent } = await second.ctx.agents.resume({
    resumeSessionId: SessionId('ses-crash'),
    agentOptions: AGENT_OPTIONS,
  })
  const resumedAt = agent.session.events.length
  expect(agent.status).toBe('idle')
  expect(waitingOf(agent, id)).toHaveLength(1)
  await until(
    'a heartbeat delivered after the crash',
    () => deliveredOf(agent.session.events.slice(resumedAt), id).length > 0,
    10_000,
  )
  expect(mostWaiting(agent.session.events, id)).toBe(1)
  await runCommand(second, agent, `/loop delete ${id}`)
}, 30_000)

it('/loop delete while a next-step heartbeat waits: it never reaches the model', async () => {
  const host = await start(SLOW_STEPS)
  const agent = await agentOn(host, 'ses-delete-step')
  const id = await createLoop(host, agent, 1, 'DELETE_STEP')
  task(agent)
  await until('a waiting heartbeat', () => waitingOf(agent, id).length === 1)
  expect(await runCommand(host, agent, `/loop delete ${id}`)).toEqual({ kind: 'success', text: `Deleted ${id}.` })
  expect(waitingOf(agent, id)).toEqual([])
  await agent.whenIdle()
  expect(deliveredOf(agent.session.events, id)).toEqual([])
  expect(modelSaw(id)).toBe(false)
  expect(turnStarts(agent.session.events)).toBe(1)
}, 30_000)

it('/loop delete while a next-turn heartbeat waits: no further turn', async () => {
  const host = await start(SLOW_STEPS)
  const agent = await agentOn(host, 'ses-delete-turn')
  const id = await createLoop(host, agent, 1, 'DELETE_TURN')
  await until('a next-turn heartbeat waiting behind the heartbeat turn', () =>
    agent.inbox.nextTurn.some((message) => readHeartbeat(message)?.loopId === id),
  )
  expect(await runCommand(host, agent, `/loop delete ${id}`)).toEqual({ kind: 'success', text: `Deleted ${id}.` })
  await agent.whenIdle()
  // Only the heartbeat that opened the running turn, which was under way before the delete.
  expect(deliveredOf(agent.session.events, id)).toHaveLength(1)
  expect(turnStarts(agent.session.events)).toBe(1)
}, 30_000)

it('a delete decided after DSH claimed the heartbeat for a step, before the step is entered: the step goes without it', async () => {
  const host = await start({ sequence: ['success'], repeatLast: true, successText: 'done' })
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
  const agent = await agentOn(host, 'ses-delete-claimed')
  const id = await createLoop(host, agent, 1, 'DELETE_CLAIMED')
  await until('the heartbeat claimed for a step', () => claimed)
  expect(waitingOf(agent, id)).toEqual([])
  expect(await runCommand(host, agent, `/loop delete ${id}`)).toEqual({ kind: 'success', text: `Deleted ${id}.` })
  release()
  await agent.whenIdle()
  expect(deliveredOf(agent.session.events, id)).toEqual([])
  // The turn the heartbeat opened ends without a step: no model request at all (not even one with only DSH's context).
  expect(server!.requests).toEqual([])
  const turn = agent.session.events
    .filter((event) => event.type.startsWith('turn/') || event.type.startsWith('step/'))
    .map((event) => [event.type, event.data])
  expect(turn).toEqual([
    ['turn/start', { turn: 1 }],
    ['turn/end', { turn: 1, reason: { kind: 'completed' } }],
  ])
}, 30_000)

it('a child agent (no loops of its own) enters its steps untouched', async () => {
  const host = await start({ sequence: ['success'], repeatLast: true, successText: 'child answer' })
  const parent = await agentOn(host, 'ses-parent')
  const { agent: child } = await parent.ctx.agents.create({
    sessionId: SessionId('ses-child'),
    meta: { cwd: host.root },
    agentOptions: AGENT_OPTIONS,
  })
  child.send(
    createUserMessage({ content: [{ type: 'text', text: 'child task' }], source: { kind: 'user' } }),
    'next-turn',
    true,
  )
  await until('the child to answer', () => child.session.events.some((event) => event.type === 'assistant/message'))
  await child.whenIdle()
  expect(
    child.session.events
      .filter((event) => event.type === 'user/message')
      .map((event) => (event.data as { content: { text: string }[] }).content[0]!.text),
  ).toEqual(['child task'])
}, 30_000)

/**
 * The real agent loop against the published mock LLM server on loopback: a
 * heartbeat wakes an idle agent into a real turn, and a running agent takes a
 * heartbeat as next-step input inside the same turn. Real timers throughout.
 */
import type { SessionEvent } from '@deepseek-ai/dsh-session'
import { expect, it } from 'vitest'
import { heartbeatText } from './support/heartbeat-xml.ts'
import { createLoopByCommand, createRealAgent, runCommand, sendTask, until, useMockModel } from './support/host.ts'

const model = useMockModel()

/** The text of the last user message in one recorded chat-completions request. */
function lastUserText(body: unknown): string {
  const messages = (body as { messages: { role: string; content: unknown }[] }).messages
  const last = messages.filter((message) => message.role === 'user').at(-1)
  const content = last?.content
  if (typeof content === 'string') return content
  return (content as { type: string; text?: string }[]).map((part) => part.text ?? '').join('')
}

/** Index of the first event matching a predicate, failing when absent. */
function indexOf(events: readonly SessionEvent[], predicate: (event: SessionEvent) => boolean, what: string): number {
  const index = events.findIndex(predicate)
  if (index === -1) throw new Error(`no ${what} in ${events.map((event) => event.type).join(', ')}`)
  return index
}

it('a due heartbeat wakes the idle agent and a real turn answers it', async () => {
  const host = await model.start({
    sequence: ['success'],
    repeatLast: true,
    successText: 'heartbeat handled',
  })
  const agent = await createRealAgent(host, 'ses-model-idle')
  expect(agent.status).toBe('idle')

  const id = await createLoopByCommand(host, agent, 1, 'LOOP_SMOKE_OK')
  await until('the first model request', () => model.server.requests.length >= 1)
  expect(lastUserText(model.server.requests[0]!.body)).toBe(heartbeatText(id, 'LOOP_SMOKE_OK'))
  await until('the assistant reply', () => agent.session.events.some((event) => event.type === 'assistant/message'))
  await runCommand(host, agent, `/loop delete ${id}`)

  const events = agent.session.events
  const spliced = events.find((event) => event.type === 'agent/inbox/spliced')
  expect(spliced?.data).toMatchObject({ target: 'next-turn' })
  const userMessage = events.find((event) => event.type === 'user/message')
  expect(userMessage?.data).toMatchObject({
    source: { kind: 'plugin', plugin: 'loop' },
    content: [{ type: 'text', text: heartbeatText(id, 'LOOP_SMOKE_OK') }],
  })
  expect(indexOf(events, (event) => event.type === 'turn/start', 'turn/start')).toBeLessThan(
    indexOf(events, (event) => event.type === 'assistant/message', 'assistant/message'),
  )
})

it('a running agent takes the heartbeat as next-step input inside the same turn', async () => {
  // The first request streams slowly so the turn is still running when the loop is due.
  const host = await model.start({
    sequence: ['slow_success', 'success'],
    repeatLast: true,
    successText: 'working on it, still working, almost done',
    chunkSize: 4,
    chunkDelayMs: 250,
  })
  const agent = await createRealAgent(host, 'ses-model-busy')

  const id = await createLoopByCommand(host, agent, 1, 'LOOP_BUSY_OK')
  sendTask(agent, 'start a long task')
  await until('the agent to run', () => agent.status === 'running')
  await until('a request carrying the heartbeat', () =>
    model.server.requests.some((request) => lastUserText(request.body) === heartbeatText(id, 'LOOP_BUSY_OK')),
  )
  await runCommand(host, agent, `/loop delete ${id}`)
  await agent.whenIdle()

  expect(lastUserText(model.server.requests[0]!.body)).toBe('start a long task')
  const events = agent.session.events
  const heartbeatSplice = events.find(
    (event) => event.type === 'agent/inbox/spliced' && JSON.stringify(event.data).includes('LOOP_BUSY_OK'),
  )
  expect(heartbeatSplice?.data).toMatchObject({ target: 'next-step' })
  // Same turn: the heartbeat's user message comes after the first turn/start and before its turn/end.
  const firstTurnStart = indexOf(events, (event) => event.type === 'turn/start', 'turn/start')
  const heartbeatMessage = indexOf(
    events,
    (event) => event.type === 'user/message' && JSON.stringify(event.data).includes('LOOP_BUSY_OK'),
    'heartbeat user/message',
  )
  const firstTurnEnd = indexOf(events, (event) => event.type === 'turn/end', 'turn/end')
  expect(firstTurnStart).toBeLessThan(heartbeatMessage)
  expect(heartbeatMessage).toBeLessThan(firstTurnEnd)
}, 30_000)

it('a 1 s loop and a busy agent: every turn ends, one heartbeat per turn, never more than one waiting', async () => {
  // Every step streams for about 2.5 s, so a 1 s loop falls due two or three times per step.
  const host = await model.start({
    sequence: ['slow_success'],
    repeatLast: true,
    successText: 'step output that takes a while',
    chunkSize: 3,
    chunkDelayMs: 250,
  })
  const agent = await createRealAgent(host, 'ses-model-fast-loop')
  const id = await createLoopByCommand(host, agent, 1, 'FAST_LOOP')
  sendTask(agent, 'the task')
  const turnEnds = () => agent.session.events.filter((event) => event.type === 'turn/end').length
  await until('three turns to end', () => turnEnds() >= 3, 30_000)
  await runCommand(host, agent, `/loop delete ${id}`)
  await agent.whenIdle()

  const events = agent.session.events
  const isHeartbeat = (event: SessionEvent) => JSON.stringify(event.data).includes('FAST_LOOP')
  // Per turn: at most one heartbeat user message.
  let inTurn = 0
  for (const event of events) {
    if (event.type === 'turn/start') inTurn = 0
    if (event.type === 'user/message' && isHeartbeat(event)) inTurn += 1
    expect(inTurn).toBeLessThanOrEqual(1)
  }
  // At every point of the log, at most one heartbeat admitted and not yet taken.
  let waiting = 0
  for (const event of events) {
    if (event.type === 'agent/inbox/spliced' && isHeartbeat(event)) waiting += 1
    if (event.type === 'user/message' && isHeartbeat(event)) waiting -= 1
    expect(waiting).toBeLessThanOrEqual(1)
  }
  // The task's turn ended with the task's own first request answered by the model.
  expect(lastUserText(model.server.requests[0]!.body)).toBe('the task')
  const dispatches = events.filter(
    (event) => event.type === 'loop/change' && (event.data as { operation: string }).operation === 'dispatch',
  ).length
  const delivered = events.filter((event) => event.type === 'user/message' && isHeartbeat(event)).length
  console.log(
    `fast loop: ${turnEnds()} turns ended, ${delivered} heartbeats delivered, ${dispatches} occurrences handled (${dispatches - delivered} coalesced or skipped)`,
  )
}, 45_000)

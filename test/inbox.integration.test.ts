/**
 * A heartbeat left in the inbox by what the simulation does not model, against the real agent
 * loop and the published mock LLM on loopback (real timers): a turn that ends in the model's
 * error, and a child agent's steps; and the instant of a hot reload the simulation found, pinned.
 * Stops, deletes, crashes and reloads around a waiting heartbeat are the simulation's (test/sim/).
 */
import type { Agent } from '@deepseek-ai/dsh-agent'
import type { PluginModule } from '../harness/compose-host.ts'
import * as loopPlugin from '../src/index.ts'
import type { SessionEvent } from '@deepseek-ai/dsh-session'
import { SessionId } from '@deepseek-ai/dsh-session'
import { expect, it } from 'vitest'
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

const model = useMockModel()

/** The loop's heartbeats that reached a step (logged user messages). */
const deliveredOf = (events: readonly SessionEvent[], id: string) =>
  events.filter((event) => event.type === 'user/message' && readHeartbeat(event.data)?.loopId === id)

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

/** Wait until a heartbeat of the loop reaches a step logged after position `from`. */
const untilDeliveredAfter = (what: string, agent: Agent, id: string, from: number) =>
  until(what, () => deliveredOf(agent.session.events.slice(from), id).length > 0, 10_000)

/** A user's long task, as the composer queues it. */
const task = (agent: Agent) => sendTask(agent, 'the long task')

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

it('a step DSH claims as the plugin reloads is checked by the new plugin: a delete before it enters keeps the heartbeat out', async () => {
  const host = await model.start({ sequence: ['success'], repeatLast: true, successText: 'ok' }, undefined, {
    loop: false,
  })
  let plugin = host.ctx.plugin(loopPlugin as PluginModule)
  await plugin
  const agent = await createRealAgent(host, 'ses-reload-at-claim')
  const id = await createLoopByCommand(host, agent, 1, 'RELOAD_AT_CLAIM')
  // The heartbeat's claim reloads the plugin; an inner pre-step hook holds the step until the new
  // plugin has deleted the loop. The old plugin's hook went with it, so only the new one's can check the step.
  let reloadedAndDeleted: Promise<unknown> | undefined
  host.ctx.on('agent/inbox/claimed', ({ message }) => {
    if (reloadedAndDeleted !== undefined || readHeartbeat(message)?.loopId !== id) return
    const previous = plugin
    plugin = host.ctx.plugin(loopPlugin as PluginModule)
    void previous.dispose()
    reloadedAndDeleted = (async () => {
      await plugin
      return runCommand(host, agent, `/loop delete ${id}`)
    })()
  })
  host.ctx.on('agent/pre-step', async (_step, next) => {
    await reloadedAndDeleted
    return next()
  })
  await until('the heartbeat to be claimed', () => reloadedAndDeleted !== undefined)
  expect(((await reloadedAndDeleted) as { text?: string }).text).toBe(`Deleted ${id}.`)
  await until('the turn to end', () => agent.session.events.some((event) => event.type === 'turn/end'))
  expect(deliveredOf(agent.session.events, id)).toEqual([])
}, 30_000)

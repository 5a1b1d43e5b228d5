/**
 * `loop` beside DSH's own features in a real `dsh web` (the standard preset, the mock model
 * behind a router): a background sub-agent gets no loop tools, a `subagent_fork` child shows
 * none of its parent's loops (live, and after a restart), a loop whose heartbeat turns outlast
 * its interval leaves `/goal` rounds and `/compact` their idle moments, and an archived session
 * starts no turn while another session's loop keeps its cadence.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect } from 'vitest'
import {
  call,
  createSession,
  heartbeatsIn,
  lastUserText,
  prompt,
  runCommand,
  waitFor,
  type HistoryEvent,
} from '../../harness/dsh-stack.ts'
import { startRoutedModel, type RoutedModel, type SideScript } from './model-router.ts'
import { createLoop, events, loopProjection, settle, test } from './rig.ts'

/** The prompt a delegating model gives its sub-agent: what the router tells the child's requests by. */
const CHILD_PROMPT = 'CHILD TASK: keep an eye on the build'

/** Routes of a parent and its sub-agent: a request whose newest user message is the child's prompt is the child's. */
type Delegation = 'parent' | 'child'
const delegationRoute = (body: unknown): Delegation => (lastUserText(body) === CHILD_PROMPT ? 'child' : 'parent')

/** Tool names of one request. */
const toolsOf = (body: unknown): string[] =>
  ((body as { tools?: { function: { name: string } }[] }).tools ?? []).map((tool) => tool.function.name)

/** The loop tools among a request's tools. */
const loopToolsOf = (body: unknown): string[] => toolsOf(body).filter((name) => name.startsWith('loop_'))

/** The sessions DSH lists as delegated by `parent` (`session.list` rows carry `parentSessionId` and `origin`). */
async function childrenOf(url: string, parent: string): Promise<string[]> {
  const { items } = await call<{ items: { sessionId: string; parentSessionId?: string; origin?: string }[] }>(
    url,
    'session.list',
    {},
  )
  return items
    .filter((item) => item.parentSessionId === parent && item.origin === 'subagent')
    .map((item) => item.sessionId)
}

/** User messages of a kind (`goal`, `user`, `plugin`) in a log, with their time. */
const userMessagesOf = (log: readonly HistoryEvent[], kind: string): HistoryEvent[] =>
  log.filter(
    (event) => event.type === 'user/message' && (event.data as { source?: { kind?: string } }).source?.kind === kind,
  )

/** Count of entries with `time` in [from, to). */
const within = (items: readonly { readonly time: number }[], from: number, to: number): number =>
  items.filter((item) => item.time >= from && item.time < to).length

describe("DSH's sub-agents", () => {
  test('a background sub-agent whose model asks for the loop tools gets none, and its requests list none', async ({
    rig,
  }) => {
    const model: RoutedModel<Delegation> = await startRoutedModel<Delegation>(
      {
        parent: {
          sequence: ['tool_call_success', 'success'],
          repeatLast: true,
          successText: 'delegated',
          toolName: 'subagent',
          toolArguments: JSON.stringify({
            description: 'build watcher',
            prompt: CHILD_PROMPT,
            run_in_background: true,
          }),
        },
        child: {
          sequence: ['tool_call_success', 'success'],
          repeatLast: true,
          successText: 'child done',
          toolName: 'loop_create',
          toolArguments: JSON.stringify({ prompt: 'check the build', time_in_seconds: 3 }),
        },
      },
      delegationRoute,
      'parent',
    )
    const r = await rig({}, { model })
    const parent = await createSession(r.url)
    await prompt(r.url, parent, 'delegate the build watch')
    await waitFor('the child to answer its tool result', () =>
      model.requests.filter((request) => request.behavior === 'child').length >= 2 ? true : undefined,
    )
    const [child, ...others] = await childrenOf(r.url, parent)
    expect(child).toBeDefined()
    expect(others).toEqual([])
    const childRequests = model.requests.filter((request) => request.behavior === 'child')
    expect(childRequests.map((request) => loopToolsOf(request.body))).toEqual(childRequests.map(() => []))
    // The user's own session keeps them.
    const parentRequest = model.requests.find((request) => request.behavior === 'parent')!
    expect(loopToolsOf(parentRequest.body).sort()).toEqual(['loop_create', 'loop_delete', 'loop_list'])
    // The child's call was refused by DSH (no such tool) and nothing was scheduled anywhere.
    const toolMessages = (childRequests[1]!.body as { messages: { role: string; content: unknown }[] }).messages.filter(
      (message) => message.role === 'tool',
    )
    expect(toolMessages).toHaveLength(1)
    expect(JSON.stringify(toolMessages[0]!.content)).toContain('unknown tool \\"loop_create\\"')
    await sleep(4_000)
    for (const id of [parent, child!])
      expect((await events(r.url, id)).filter((event) => event.type === 'loop/change')).toEqual([])
    expect(await loopProjection(r.url, child!)).toEqual({ loops: [] })
  })

  test("a subagent_fork child shows none of its parent's loops, live and after a restart", async ({ rig }) => {
    const slowChild: SideScript = {
      sequence: ['slow_success'],
      repeatLast: true,
      successText: 'the fork is looking into it',
      chunkSize: 3,
      chunkDelayMs: 400,
    }
    const model = await startRoutedModel<Delegation>(
      {
        parent: {
          sequence: ['success', 'tool_call_success', 'success'],
          repeatLast: true,
          successText: 'noted',
          toolName: 'subagent_fork',
          toolArguments: JSON.stringify({ description: 'fork', prompt: CHILD_PROMPT, run_in_background: true }),
        },
        child: slowChild,
      },
      delegationRoute,
      'parent',
    )
    const r = await rig({}, { model })
    const parent = await createSession(r.url)
    await createLoop(r.url, parent, 3600, 'the parent loop')
    await prompt(r.url, parent, 'first turn')
    await settle(r.url, parent)
    await prompt(r.url, parent, 'fork yourself')
    const child = await waitFor('the fork child', async () => (await childrenOf(r.url, parent))[0])
    await waitFor('the child running', () =>
      model.requests.some((request) => request.behavior === 'child') ? true : undefined,
    )
    const childLog = await events(r.url, child)
    // It inherited the parent's loop record, and shows no loop while it runs.
    expect(childLog.filter((event) => event.type === 'loop/change')).toHaveLength(1)
    expect(await loopProjection(r.url, child)).toEqual({ loops: [] })
    await settle(r.url, parent)
    await settle(r.url, child)

    await r.stop()
    await r.start()
    // DSH web folds a stored session's whole log for its history: still none in the child, the loop in the parent.
    expect(await loopProjection(r.url, child)).toEqual({ loops: [] })
    expect(await loopProjection(r.url, parent)).toMatchObject({ loops: [{ prompt: 'the parent loop' }] })
  })
})

describe('a loop whose heartbeat turns outlast its interval', () => {
  /** Goal rounds and compaction summaries stream for about 1 s (the goal's 256-round budget outlasts the test); every heartbeat turn for about 1.5 s. */
  const slowTurns = () =>
    startRoutedModel({
      task: {
        sequence: ['slow_success'],
        repeatLast: true,
        successText: 'goal round done, 1 s',
        chunkSize: 4,
        chunkDelayMs: 200,
      },
      heartbeat: {
        sequence: ['slow_success'],
        repeatLast: true,
        successText: 'heartbeat turn that takes about 1.5 s',
        chunkSize: 4,
        chunkDelayMs: 150,
      },
    })

  test('leaves /goal its rounds before, during and after it, and keeps firing', async ({ rig }) => {
    const r = await rig({}, { model: await slowTurns() })
    const sessionId = await createSession(r.url)
    expect(await runCommand(r.url, sessionId, '/goal keep the build green')).toMatchObject({ kind: 'success' })
    const phases = { start: Date.now(), loop: 0, deleted: 0, end: 0 }
    await sleep(8_000)
    phases.loop = Date.now()
    const id = await createLoop(r.url, sessionId, 1, 'check the build')
    await sleep(12_000)
    phases.deleted = Date.now()
    expect(await runCommand(r.url, sessionId, `/loop delete ${id}`)).toMatchObject({ kind: 'success' })
    await sleep(8_000)
    phases.end = Date.now()
    await runCommand(r.url, sessionId, '/goal clear')
    const log = await settle(r.url, sessionId)

    const rounds = userMessagesOf(log, 'goal')
    const beats = heartbeatsIn(log).map((beat) => ({ time: beat.time }))
    const counts = {
      before: within(rounds, phases.start, phases.loop),
      during: within(rounds, phases.loop, phases.deleted),
      after: within(rounds, phases.deleted, phases.end),
      heartbeats: within(beats, phases.loop, phases.deleted),
    }
    const perMinute = (count: number, from: number, to: number) => ((count * 60_000) / (to - from)).toFixed(1)
    console.log(
      `goal rounds a minute: before ${perMinute(counts.before, phases.start, phases.loop)}, ` +
        `during a 1 s loop with 1.5 s heartbeat turns ${perMinute(counts.during, phases.loop, phases.deleted)}, ` +
        `after ${perMinute(counts.after, phases.deleted, phases.end)}; ${counts.heartbeats} heartbeats during`,
    )
    expect(counts.before).toBeGreaterThanOrEqual(3)
    expect(counts.during).toBeGreaterThanOrEqual(3)
    expect(counts.heartbeats).toBeGreaterThanOrEqual(3)
    expect(counts.after).toBeGreaterThanOrEqual(3)
  })

  test('leaves /compact an idle moment while it fires', async ({ rig }) => {
    const r = await rig({}, { model: await slowTurns() })
    const sessionId = await createSession(r.url)
    await prompt(r.url, sessionId, 'something to compact')
    await settle(r.url, sessionId)
    const id = await createLoop(r.url, sessionId, 1, 'check the build')
    await waitFor('a heartbeat turn', async () =>
      heartbeatsIn(await events(r.url, sessionId)).length >= 2 ? true : undefined,
    )
    const refused: string[] = []
    const compact = await waitFor(
      '/compact to find the agent idle',
      async () => {
        const reply = await runCommand(r.url, sessionId, '/compact')
        if (reply.kind === 'success') return reply
        refused.push(reply.text ?? '')
        await sleep(100)
        return undefined
      },
      20_000,
    )
    console.log(
      `/compact while a 1 s loop with 1.5 s heartbeat turns fires: refused ${refused.length} times, then ${JSON.stringify(compact.text)}`,
    )
    expect(new Set(refused)).toEqual(
      new Set(
        refused.length === 0
          ? []
          : ['Compaction is unavailable because this process has an active compaction, or the agent is not idle.'],
      ),
    )
    expect(compact.text).toMatch(/^(Compacted \d+ history items|No compactable history yet)/)
    // The loop fires on after it.
    const beats = heartbeatsIn(await events(r.url, sessionId)).length
    await waitFor('another heartbeat', async () =>
      heartbeatsIn(await events(r.url, sessionId)).length > beats ? true : undefined,
    )
    await runCommand(r.url, sessionId, `/loop delete ${id}`)
  })
})

describe('an archived session', () => {
  test("starts no turn while another session's loop keeps its cadence", async ({ rig }) => {
    const r = await rig()
    const archived = await createSession(r.url)
    const kept = await createSession(r.url)
    await createLoop(r.url, archived, 2, 'archived loop')
    await createLoop(r.url, kept, 2, 'kept loop')
    await waitFor('a heartbeat in each', async () =>
      heartbeatsIn(await events(r.url, archived)).length >= 1 && heartbeatsIn(await events(r.url, kept)).length >= 1
        ? true
        : undefined,
    )
    // DSH web's Archive.
    await call(r.url, 'workspace.archiveSession', { sessionId: archived })
    await settle(r.url, archived)
    const archivedAt = Date.now()
    const before = (await events(r.url, archived)).length
    await sleep(10_000)
    const turnsAfter = (log: readonly HistoryEvent[]) =>
      log.filter((event) => event.type === 'turn/start' && event.time >= archivedAt).length
    const archivedLog = await events(r.url, archived)
    expect(turnsAfter(archivedLog)).toBe(0)
    expect(archivedLog).toHaveLength(before)
    expect(turnsAfter(await events(r.url, kept))).toBeGreaterThanOrEqual(4)
  })
})

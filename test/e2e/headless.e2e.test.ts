/**
 * One-shot hosts in real processes: a one-shot `dsh --profile headless "task"`
 * whose model creates a 2 s loop while its steps take about 3 s each must still
 * end with the task's answer; the loop is saved, dispatched nowhere in that run,
 * and fires once the same session is opened in a long-lived `dsh web`.
 */
import { describe, expect } from 'vitest'
import {
  lastUserText,
  readDurableLog,
  reopenSession,
  runCommand,
  storedSessionIds,
  waitFor,
  type DurableRecord,
} from '../../harness/dsh-stack.ts'
import { startRoutedModel } from './model-router.ts'
import { heartbeatLoopId, heartbeatText } from '../support/heartbeat-xml.ts'
import { dispatchesOf, heartbeatsOf, settle, test } from './rig.ts'

const TASK = 'Summarize the build status, then report it.'
const TASK_ANSWER = 'TASK_ANSWER: the build is green.'
const HEARTBEAT_ANSWER = 'HEARTBEAT_ANSWER: checked again.'
const LOOP_PROMPT = 'Check whether CI is green'
/** What a one-shot run tells the model about its loops (src/tools.ts, written out independently). */
const ONE_SHOT_NOTE =
  'This is a one-shot run (dsh --profile headless): loops are saved in this session but nothing fires in this run; they start when the session is opened in a long-lived DSH (dsh web).'
/** 100 ms per character: the task's answer (32 characters) streams for about 3 s, as does each heartbeat's. */
const STREAM = { chunkSize: 1, chunkDelayMs: 100 } as const
/**
 * The one-shot run must have exited by then. Measured on this machine (other jobs
 * running): the same run without the plugin takes 3.8–5.8 s (boot, tool step, 3 s
 * answer) and with it 4.3–6.0 s; before the turn bound it never ended (killed at
 * 40 s after 15 model calls).
 */
const ONE_SHOT_BOUND_MS = 25_000

/** The `loop/change` payloads of a durable log. */
function loopChanges(log: readonly DurableRecord[]): unknown[] {
  return log.filter((record) => record.type === 'loop/change').map((record) => record.data)
}

/** The chat messages of a request. */
function messagesOf(body: unknown): { role: string; content: unknown }[] {
  return (body as { messages: { role: string; content: unknown }[] }).messages
}

/** A message's text: a string, or its text parts joined. */
function textOf(content: unknown): string {
  return typeof content === 'string'
    ? content
    : (content as { text?: string }[]).map((part) => part.text ?? '').join('')
}

/** The text of every user message of a request. */
function userTexts(body: unknown): string[] {
  return messagesOf(body)
    .filter((message) => message.role === 'user')
    .map((message) => textOf(message.content))
}

/** The text the model got back for its tool call: the `tool` message of a chat request. */
function toolResultText(body: unknown): string {
  const tool = messagesOf(body).filter((message) => message.role === 'tool')
  expect(tool, 'exactly one tool result in the request').toHaveLength(1)
  return textOf(tool[0]!.content)
}

describe('a one-shot headless run', () => {
  test('7.1 a model that creates a 2 s loop with 3 s steps: the run ends with the task answer, the loop is saved undispatched, and fires once the session is opened in dsh web', async ({
    rig,
  }) => {
    const model = await startRoutedModel({
      // The task: first step calls loop_create, the second streams the final answer.
      task: {
        sequence: ['tool_call_success', 'slow_success'],
        toolName: 'loop_create',
        toolArguments: JSON.stringify({ prompt: LOOP_PROMPT, time_in_seconds: 2 }),
        successText: TASK_ANSWER,
        ...STREAM,
      },
      // Every heartbeat is answered as slowly, so a heartbeat admitted at each step boundary would keep the turn alive.
      heartbeat: { sequence: ['slow_success'], repeatLast: true, successText: HEARTBEAT_ANSWER, ...STREAM },
    })
    // The session is then opened in dsh web and timed from that.
    const r = await rig({}, { model, start: false })
    r.plugin('add', 'headless')

    const run = await r.oneShot(TASK, ONE_SHOT_BOUND_MS)
    console.log(
      `7.1: the one-shot run exited ${run.code ?? run.signal} after ${run.durationMs} ms with ${model.requests.length} model requests`,
    )
    expect(run.timedOut, `still running after ${ONE_SHOT_BOUND_MS} ms`).toBe(false)
    expect(run.code).toBe(0)
    expect(run.stdout).toBe(`${TASK_ANSWER}\n`)

    // The model got the task and its tool result, and no heartbeat.
    expect(model.requests.map((request) => request.behavior)).toEqual(['task', 'task'])
    expect(model.sides.heartbeat.requests).toHaveLength(0)
    expect(model.sides.task.requests.map((request) => request.behavior)).toEqual(['tool_call_success', 'slow_success'])
    for (const request of model.requests)
      expect(userTexts(request.body).filter((text) => heartbeatLoopId(text) !== undefined)).toEqual([])
    expect(model.requests.map((request) => lastUserText(request.body))).toEqual([TASK, TASK])

    // The session log holds the loop's create and nothing dispatched it.
    const [sessionId, ...others] = storedSessionIds(r.home)
    expect(others).toEqual([])
    const log = await readDurableLog(r.home, sessionId!)
    const changes = loopChanges(log)
    expect(changes).toEqual([
      {
        version: 1,
        operation: 'create',
        loop: {
          id: expect.stringMatching(/^loop_[0-9a-f]{8}$/),
          prompt: LOOP_PROMPT,
          time_in_seconds: 2,
          next_at: expect.any(Number),
        },
      },
    ])
    const created = (changes[0] as { loop: { id: string; next_at: number } }).loop
    const createdAt = log.find((record) => record.type === 'loop/change')!.time
    // Due one interval after its decision, which is at most a few ms before the append.
    expect(created.next_at).toBeLessThanOrEqual(createdAt + 2_000)
    expect(created.next_at).toBeGreaterThan(createdAt + 2_000 - 50)
    // The user messages of the run: the task (and the host's runtime-context snapshot), no heartbeat.
    const userMessages = log
      .filter((record) => record.type === 'user/message')
      .map((record) => record.data as { source?: { kind?: string; plugin?: string } })
    expect(userMessages.filter((data) => data.source?.kind === 'user').map((data) => JSON.stringify(data))).toEqual([
      expect.stringContaining(JSON.stringify(TASK)),
    ])
    expect(userMessages.filter((data) => data.source?.kind !== 'user').map((data) => data.source?.plugin)).toEqual([
      '@deepseek-ai/dsh-system-prompt',
    ])

    // The tool result the model read is the loop, then where it will run.
    const result = toolResultText(model.requests[1]!.body)
    const view = JSON.stringify({
      id: created.id,
      prompt: LOOP_PROMPT,
      time_in_seconds: 2,
      next_at: created.next_at,
      state: 'scheduled',
      delivery_mode: 'session-local',
    })
    // The adapter sends the tool's two text parts as one string, joined with nothing between them.
    expect(result).toBe(`${view}\n${ONE_SHOT_NOTE}`)
    // So does the tool's description in that run.
    const tools = (model.requests[0]!.body as { tools: { function: { name: string; description: string } }[] }).tools
    expect(
      tools.find((tool) => tool.function.name === 'loop_create')!.function.description.endsWith(` ${ONE_SHOT_NOTE}`),
    ).toBe(true)

    // The same session in a long-lived dsh web on the same home: the loop fires there.
    r.plugin('add', 'web')
    await r.start()
    const reopenedAt = Date.now()
    await reopenSession(r.url, sessionId!)
    const listed = await runCommand(r.url, sessionId!, '/loop list')
    expect(listed.text).toMatch(new RegExp(`^1 active loop:\\n${created.id}  every 2s  [^\\n]+  ${LOOP_PROMPT}$`))
    const expected = heartbeatText(created.id, LOOP_PROMPT)
    await waitFor(
      'the heartbeat answered in dsh web',
      () => (model.sides.heartbeat.requests.some((request) => request.outcome === 'completed') ? true : undefined),
      15_000,
    )
    expect(await runCommand(r.url, sessionId!, `/loop delete ${created.id}`)).toEqual({
      kind: 'success',
      text: `Deleted ${created.id}.`,
    })
    const webLog = await settle(r.url, sessionId!)
    const beats = heartbeatsOf(webLog, created.id)
    expect(beats.length).toBeGreaterThanOrEqual(1)
    expect(beats.every((beat) => beat.text === expected && beat.time >= reopenedAt)).toBe(true)
    const dispatches = dispatchesOf(webLog, created.id)
    expect(dispatches.length).toBeGreaterThanOrEqual(1)
    expect(dispatches[0]!.time).toBeGreaterThanOrEqual(reopenedAt)
    expect(lastUserText(model.sides.heartbeat.requests[0]!.body)).toBe(expected)
    expect(
      webLog.some(
        (event) => event.type === 'assistant/message' && JSON.stringify(event.data).includes(HEARTBEAT_ANSWER),
      ),
    ).toBe(true)
    // The web process continued the headless log: the same create, then its own dispatches.
    expect(webLog.filter((event) => event.type === 'loop/change')[0]!.data).toEqual(changes[0])
  })
})

/**
 * Steps 1–4 of the end-to-end plan in a real `dsh web`: smoke, delivery inside a
 * busy turn, isolation between loops and sessions, deletion.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect } from 'vitest'
import {
  createSession,
  heartbeatsIn,
  lastUserText,
  prompt,
  runCommand,
  spliceTarget,
  waitFor,
} from '../../harness/dsh-stack.ts'
import { heartbeatText } from '../support/heartbeat-xml.ts'
import {
  createLoop,
  dispatchesOf,
  events,
  heartbeatsOf,
  loopProjection,
  requestsEndingWith,
  settle,
  test,
  turnAround,
  waitForHeartbeats,
} from './rig.ts'

describe('loop in a real dsh web', () => {
  test('1. /loop 1 LOOP_SMOKE_OK: listed by /loop list, by the model through loop_list, and in the projection; the idle agent wakes with its heartbeat', async ({
    rig,
  }) => {
    // The first model request answers with a loop_list call, every later one with text.
    const r = await rig({ sequence: ['tool_call_success', 'success'], toolName: 'loop_list', toolArguments: '{}' })
    const sessionId = await createSession(r.url)
    const createdAt = Date.now()
    const id = await createLoop(r.url, sessionId, 1, 'LOOP_SMOKE_OK')
    await prompt(r.url, sessionId, 'Which loops are active in this session?')

    const listed = await runCommand(r.url, sessionId, '/loop list')
    expect(listed.kind).toBe('success')
    expect(listed.text).toMatch(
      new RegExp(`^1 active loop:\\n${id}  every 1s  (next in|overdue by) [^\\n]+  LOOP_SMOKE_OK$`),
    )

    // The model called loop_list in answer to the prompt, and got the loop back.
    const log = await waitFor('the loop_list result', async () => {
      const all = await events(r.url, sessionId)
      return all.some((event) => event.type === 'tool/result') ? all : undefined
    })
    expect(log.find((event) => event.type === 'tool/call')?.data).toMatchObject({ name: 'loop_list', arguments: '{}' })
    const result = log.find((event) => event.type === 'tool/result')!.data as {
      message: { content: { type: string; isError: boolean; content: { text: string }[] }[] }
    }
    expect(result.message.content[0]!.isError).toBe(false)
    expect(JSON.parse(result.message.content[0]!.content[0]!.text)).toEqual([
      {
        id,
        prompt: 'LOOP_SMOKE_OK',
        time_in_seconds: 1,
        next_at: expect.any(Number),
        state: expect.stringMatching(/^(scheduled|overdue)$/),
        delivery_mode: 'session-local',
      },
    ])
    expect(r.model.requests[0]!.behavior).toBe('tool_call_success')
    expect(lastUserText(r.model.requests[0]!.body)).toBe('Which loops are active in this session?')

    expect(await loopProjection(r.url, sessionId)).toEqual({
      loops: [{ id, prompt: 'LOOP_SMOKE_OK', time_in_seconds: 1, next_at: expect.any(Number) }],
    })

    // Within a few seconds the idle agent wakes: a request whose last user message is the heartbeat.
    const expected = heartbeatText(id, 'LOOP_SMOKE_OK')
    await waitFor(
      'a model request ending with the heartbeat',
      () => (requestsEndingWith(r.model, expected).length > 0 ? true : undefined),
      5_000,
    )
    expect(Date.now() - createdAt).toBeLessThan(5_000)
    const after = await waitForHeartbeats(r.url, sessionId, { [id]: 2 })
    const beats = heartbeatsOf(after, id)
    expect(beats.every((beat) => beat.text === expected)).toBe(true)
    expect(beats[0]!.time - createdAt).toBeGreaterThanOrEqual(900)
    // A heartbeat for an idle agent opens its own turn (next-turn), answered by the model.
    const woken = beats.find((beat) => spliceTarget(after, beat.id) === 'next-turn')
    expect(woken, 'a heartbeat that woke the idle agent').toBeDefined()
    const turn = turnAround(after, woken!.seq)
    expect(
      after.some((event) => event.type === 'assistant/message' && event.seq > woken!.seq && event.seq < turn.end!.seq),
    ).toBe(true)
    expect(heartbeatsIn(after).every((beat) => beat.loopId === id)).toBe(true)
  })

  test('2. a heartbeat due while the agent is busy in a long turn is consumed at the next step boundary of that turn', async ({
    rig,
  }) => {
    const longAnswer = 'Working through a long answer, one piece at a time.'
    // The first request streams slowly (about 5 s), every later one is immediate.
    const r = await rig({
      sequence: ['slow_success', 'success'],
      successText: longAnswer,
      chunkSize: 1,
      chunkDelayMs: 100,
    })
    const sessionId = await createSession(r.url)
    const id = await createLoop(r.url, sessionId, 2, 'MID_TURN_CHECK')
    await prompt(r.url, sessionId, 'Start the long task')

    const log = await waitForHeartbeats(r.url, sessionId, { [id]: 1 }, 30_000)
    const first = heartbeatsOf(log, id)[0]!
    expect(first.text).toBe(heartbeatText(id, 'MID_TURN_CHECK'))
    const turn = turnAround(log, first.seq)
    // The heartbeat lies inside the prompt's turn (turn 1), after its first step ended complete.
    expect(turn.start.data).toEqual({ turn: 1 })
    expect(turn.end!.data).toMatchObject({ turn: 1, reason: { kind: 'completed' } })
    expect(first.seq).toBeGreaterThan(turn.start.seq)
    expect(first.seq).toBeLessThan(turn.end!.seq)
    expect(spliceTarget(log, first.id)).toBe('next-step')
    const stepOneEnd = log.find(
      (event) => event.type === 'step/end' && JSON.stringify(event.data) === '{"turn":1,"step":1}',
    )!
    const stepTwoStart = log.find(
      (event) => event.type === 'step/start' && JSON.stringify(event.data) === '{"turn":1,"step":2}',
    )!
    expect(stepOneEnd.seq).toBeLessThan(first.seq)
    expect(stepTwoStart.seq).toBeLessThan(first.seq)
    const stepOneAnswer = log.find(
      (event) => event.type === 'assistant/message' && (event.data as { step: number; turn: number }).turn === 1,
    )!
    expect((stepOneAnswer.data as { message: { content: unknown } }).message.content).toEqual([
      { type: 'text', text: longAnswer },
    ])
    // It was sent while the turn ran (not held until after it), and the turn's second request ends with it.
    const dispatch = dispatchesOf(log, id)[0]!
    expect(dispatch.time).toBeLessThan(stepOneEnd.time)
    expect(r.model.requests[0]!.behavior).toBe('slow_success')
    expect(lastUserText(r.model.requests[0]!.body)).toBe('Start the long task')
    expect(lastUserText(r.model.requests[1]!.body)).toBe(first.text)
  })

  test('3. a second loop in the same session is delivered independently; a loop in another session never reaches the first', async ({
    rig,
  }) => {
    const r = await rig()
    const sessionA = await createSession(r.url)
    const sessionB = await createSession(r.url)
    const a1 = await createLoop(r.url, sessionA, 1, 'ALPHA_ONE')
    const a2 = await createLoop(r.url, sessionA, 2, `ALPHA <two> & "quoted" 'too'`)
    const b1 = await createLoop(r.url, sessionB, 1, 'BRAVO_OTHER')

    const logA = await waitForHeartbeats(r.url, sessionA, { [a1]: 3, [a2]: 2 })
    const logB = await waitForHeartbeats(r.url, sessionB, { [b1]: 2 })
    const expectedA1 = heartbeatText(a1, 'ALPHA_ONE')
    const expectedA2 = heartbeatText(a2, 'ALPHA &lt;two&gt; &amp; &quot;quoted&quot; &apos;too&apos;')
    const expectedB1 = heartbeatText(b1, 'BRAVO_OTHER')

    // Each heartbeat is its own user message, in its own session only, and each is answered.
    for (const beat of heartbeatsIn(logA)) expect([expectedA1, expectedA2]).toContain(beat.text)
    for (const beat of heartbeatsIn(logB)) expect(beat.text).toBe(expectedB1)
    for (const [log, beats] of [
      [logA, heartbeatsIn(logA)],
      [logB, heartbeatsIn(logB)],
    ] as const) {
      for (const beat of beats) {
        const turn = turnAround(log, beat.seq)
        expect(
          log.some((event) => event.type === 'assistant/message' && event.seq > beat.seq && event.seq < turn.end!.seq),
          `answer to ${beat.loopId} at seq ${beat.seq}`,
        ).toBe(true)
      }
    }
    expect(JSON.stringify(logA)).not.toContain(b1)
    expect(JSON.stringify(logA)).not.toContain('BRAVO_OTHER')
    expect(JSON.stringify(logB)).not.toContain(a1)
    expect(JSON.stringify(logB)).not.toContain(a2)
    // The model saw each loop's heartbeat as the last message of some request, and never mixed sessions.
    expect(requestsEndingWith(r.model, expectedA1).length).toBeGreaterThan(0)
    expect(requestsEndingWith(r.model, expectedA2).length).toBeGreaterThan(0)
    expect(requestsEndingWith(r.model, expectedB1).length).toBeGreaterThan(0)
    for (const request of r.model.requests) {
      const body = JSON.stringify(request.body)
      expect(
        body.includes(b1) && (body.includes(a1) || body.includes(a2)),
        `request #${request.attempt} mixes sessions`,
      ).toBe(false)
    }

    const listA = await runCommand(r.url, sessionA, '/loop list')
    expect(listA.text?.split('\n').map((line) => line.split('  ')[0])).toEqual(['2 active loops:', a1, a2])
    const listB = await runCommand(r.url, sessionB, '/loop list')
    expect(listB.text?.split('\n').map((line) => line.split('  ')[0])).toEqual(['1 active loop:', b1])
    // Session A cannot delete session B's loop.
    const foreign = await runCommand(r.url, sessionA, `/loop delete ${b1}`)
    expect(foreign.kind).toBe('error')
    expect(foreign.text).toContain(b1)
    expect((await runCommand(r.url, sessionB, '/loop list')).text).toContain(b1)
  })

  test('4. /loop delete for both loops: nothing arrives afterwards for at least three intervals', async ({ rig }) => {
    const r = await rig()
    const sessionId = await createSession(r.url)
    const one = await createLoop(r.url, sessionId, 1, 'DELETE_ME_ONE')
    const two = await createLoop(r.url, sessionId, 2, 'DELETE_ME_TWO')
    await waitForHeartbeats(r.url, sessionId, { [one]: 1, [two]: 1 })

    expect(await runCommand(r.url, sessionId, `/loop delete ${one}`)).toEqual({
      kind: 'success',
      text: `Deleted ${one}.`,
    })
    expect(await runCommand(r.url, sessionId, `/loop delete ${two}`)).toEqual({
      kind: 'success',
      text: `Deleted ${two}.`,
    })
    expect(await runCommand(r.url, sessionId, '/loop list')).toEqual({
      kind: 'success',
      text: 'No active loops in this session. Create one with /loop <seconds> <prompt>.',
    })
    expect(await loopProjection(r.url, sessionId)).toEqual({ loops: [] })

    // A heartbeat sent just before a delete may still be in a turn: let it finish, then watch.
    const settled = await settle(r.url, sessionId)
    const beatsBefore = heartbeatsIn(settled).length
    const requestsBefore = r.model.requests.length
    await sleep(3 * 2_000 + 500)
    const log = await events(r.url, sessionId)
    expect(heartbeatsIn(log).length).toBe(beatsBefore)
    expect(r.model.requests.length).toBe(requestsBefore)
    expect(log.slice(settled.length).map((event) => event.type)).toEqual([])
    for (const id of [one, two]) {
      const deletion = log.find(
        (event) =>
          event.type === 'loop/change' &&
          JSON.stringify(event.data) === JSON.stringify({ version: 1, operation: 'delete', id }),
      )!
      expect(deletion).toBeDefined()
      expect(dispatchesOf(log, id).every((dispatch) => dispatch.seq < deletion.seq)).toBe(true)
    }
  })
})

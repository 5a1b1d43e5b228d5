/**
 * Issue 14 in real processes: after a restart of `dsh web` (SIGTERM, then
 * SIGKILL) the sessions holding loops come back by themselves, with no session
 * opened: heartbeats arrive, carrying the same tools and model as before; a
 * session without loops is left byte-identical; a loop created ~300 ms before a
 * SIGKILL fires after it; a brought-back session answers a typed prompt and
 * stops after `/loop delete`. Two `dsh web` on one home deliver each occurrence
 * once and the second takes over when the first is killed; a one-shot run on
 * that home ends by itself and fires nothing.
 */
import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect } from 'vitest'
import {
  call,
  createSession,
  lastUserText,
  messageText,
  mockEndpoint,
  prompt,
  readDurableLog,
  runCommand,
  startWeb,
  waitFor,
  type DshWeb,
  type DurableRecord,
} from '../../scripts/dsh-stack.ts'
import { REPLY, createLoop, heartbeat, test, type ModelServer } from './rig.ts'

/** The `<heartbeat>` user messages of a durable log, with their loop ids. */
function beatsIn(log: readonly DurableRecord[], loopId: string): DurableRecord[] {
  return log.filter(
    (record) =>
      record.type === 'user/message' &&
      (record.data as { source?: { plugin?: string } }).source?.plugin === 'loop' &&
      messageText(record).includes(`<loop_id>${loopId}</loop_id>`),
  )
}

/** Dispatch records of one loop in a durable log. */
function dispatchesIn(log: readonly DurableRecord[], loopId: string): { time: number; next_at: number }[] {
  return log.flatMap((record) => {
    const data = record.data as { operation?: string; id?: string; next_at?: number }
    return record.type === 'loop/change' && data.operation === 'dispatch' && data.id === loopId
      ? [{ time: record.time, next_at: data.next_at! }]
      : []
  })
}

/** Wait, on the durable log only (no API call that could bring the session live), until a loop has more heartbeats than `after`. */
async function waitForDurableBeats(
  home: string,
  sessionId: string,
  loopId: string,
  after: number,
  timeoutMs = 25_000,
): Promise<DurableRecord[]> {
  return waitFor(
    `a heartbeat of ${loopId} beyond ${after} in ${sessionId}`,
    async () => {
      const log = await readDurableLog(home, sessionId)
      return beatsIn(log, loopId).length > after ? log : undefined
    },
    timeoutMs,
  )
}

/** The stored log file of a session (`sessions/--<cwd>--/<id>/session.jsonl.zstd`). */
function logFile(home: string, sessionId: string): string {
  const root = join(home, 'sessions')
  for (const cwdDir of readdirSync(root)) {
    if (readdirSync(join(root, cwdDir)).includes(sessionId)) return join(root, cwdDir, sessionId, 'session.jsonl.zstd')
  }
  throw new Error(`no stored log for ${sessionId}`)
}

/** What a chat request tells about the agent that sent it: its tool names and model. */
function agentShape(body: unknown): { tools: string[]; model: string } {
  const request = body as { tools?: { function?: { name?: string } }[]; model: string }
  return { tools: (request.tools ?? []).map((tool) => tool.function?.name ?? '').sort(), model: request.model }
}

/** The model requests (from index `from` on) whose last real user message is this loop's heartbeat. */
function heartbeatRequests(model: ModelServer, loopId: string, prompt: string, from = 0): unknown[] {
  return model.requests
    .slice(from)
    .filter((request) => lastUserText(request.body) === heartbeat(loopId, prompt))
    .map((request) => request.body)
}

describe('resume on start', () => {
  test('14. after SIGTERM and SIGKILL restarts, with no session opened, the sessions holding loops come back as DSH web opens them; a loop-less session is untouched', async ({
    rig,
  }) => {
    const r = await rig()
    const first = await createSession(r.url)
    const second = await createSession(r.url)
    const plain = await createSession(r.url)
    // The first session runs another model than the deployment default: a resume without the host's setup would not.
    const models = await call<{
      current: { provider: string; model: string }
      groups: { id: string; models: { id: string }[] }[]
    }>(r.url, 'session.models', {
      sessionId: first,
    })
    const other = models.groups
      .flatMap((group) => group.models.map((model) => ({ provider: group.id, model: model.id })))
      .find((choice) => choice.model !== models.current.model)
    expect(other, JSON.stringify(models)).toBeDefined()
    await call(r.url, 'session.selectModel', { sessionId: first, ...other })
    // Selecting also saves the default: put it back through the loop-less session.
    await call(r.url, 'session.selectModel', {
      sessionId: plain,
      provider: models.current.provider,
      model: models.current.model,
    })
    const loopA = await createLoop(r.url, first, 2, 'RESUME_A')
    const loopB = await createLoop(r.url, second, 2, 'RESUME_B')
    await prompt(r.url, plain, 'PLAIN_PROMPT')
    await waitForDurableBeats(r.home, first, loopA, 0)
    await waitForDurableBeats(r.home, second, loopB, 0)
    const before = heartbeatRequests(r.model, loopA, 'RESUME_A').at(-1)
    expect(before).toBeDefined()
    // A session brought live by a plain resume would have no tools at all: the preset's tools must be there.
    expect(agentShape(before).tools).toEqual(expect.arrayContaining(['loop_create', 'loop_delete', 'loop_list']))
    expect(agentShape(before).model).toBe(other!.model)

    for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
      await r.stop(signal)
      const plainBytes = readFileSync(logFile(r.home, plain))
      const counts = {
        a: beatsIn(await readDurableLog(r.home, first), loopA).length,
        b: beatsIn(await readDurableLog(r.home, second), loopB).length,
      }
      const requestsBefore = r.model.requests.length
      // Down longer than one interval: both loops are overdue at the start.
      await sleep(2_500)
      await r.start()
      await waitForDurableBeats(r.home, first, loopA, counts.a)
      await waitForDurableBeats(r.home, second, loopB, counts.b)
      expect(r.web.output()).toContain('brought back 2 sessions holding active loops')
      // The first heartbeat after the restart reaches the model from the same agent composition as before it.
      // The user message is logged before the model is called: wait for the request itself.
      const after = await waitFor(
        'the first heartbeat request after the restart',
        () => heartbeatRequests(r.model, loopA, 'RESUME_A', requestsBefore)[0],
      )
      expect(agentShape(after)).toEqual(agentShape(before))
      // The loop-less session was never resumed: not one byte of its log changed.
      expect(readFileSync(logFile(r.home, plain)).equals(plainBytes), `${signal}: ${plain} changed`).toBe(true)
    }

    // A loop confirmed ~300 ms before a SIGKILL, in a session that never had one (no checkpoint can know it).
    const late = await createSession(r.url)
    const lateLoop = await createLoop(r.url, late, 1, 'RESUME_LATE')
    await sleep(300)
    await r.stop('SIGKILL')
    const lateBefore = beatsIn(await readDurableLog(r.home, late), lateLoop).length
    await r.start()
    await waitForDurableBeats(r.home, late, lateLoop, lateBefore)

    // Opened afterwards, the brought-back session is the same live agent: it answers a typed prompt and deletes its loop.
    await prompt(r.url, late, 'TYPED_AFTER_RESUME')
    await waitFor('the typed prompt answered', async () => {
      const log = await readDurableLog(r.home, late)
      const typed = log.findIndex(
        (record) => record.type === 'user/message' && messageText(record) === 'TYPED_AFTER_RESUME',
      )
      return typed >= 0 &&
        log.slice(typed).some((record) => record.type === 'assistant/message' && messageText(record) === REPLY)
        ? true
        : undefined
    })
    const deleted = await runCommand(r.url, late, `/loop delete ${lateLoop}`)
    expect(deleted).toEqual({ kind: 'success', text: `Deleted ${lateLoop}.` })
    await sleep(500)
    const settled = beatsIn(await readDurableLog(r.home, late), lateLoop).length
    await sleep(2_500)
    expect(beatsIn(await readDurableLog(r.home, late), lateLoop).length).toBe(settled)
    expect(r.web.output()).not.toMatch(/cannot prepare session|resume failed/)
  })

  test('14. two dsh web on one home: one brings the sessions back and each occurrence is delivered once; the other takes over after a SIGKILL; a headless run fires nothing', async ({
    rig,
  }) => {
    const r = await rig()
    const session = await createSession(r.url)
    const loopId = await createLoop(r.url, session, 1, 'TWO_HOSTS')
    await waitForDurableBeats(r.home, session, loopId, 0)
    await r.stop('SIGTERM')

    await r.start()
    let other: DshWeb | undefined = await startWeb({ home: r.home, model: mockEndpoint(r.model) })
    try {
      const holderLine = 'holds the loop lease on this DSH_HOME'
      await waitFor('one host to bring the session back and the other to name the holder', () => {
        const outputs = [r.web.output(), other!.output()]
        return outputs.some((output) => output.includes('brought back 1 session holding active loops')) &&
          outputs.some((output) => output.includes(holderLine))
          ? true
          : undefined
      })
      const holderIsFirst = r.web.output().includes('brought back 1 session')
      expect([r.web.output(), other.output()].filter((output) => output.includes('brought back')).length).toBe(1)
      const observedFrom = Date.now()
      await sleep(4_000)
      const log = await readDurableLog(r.home, session)
      const observed = dispatchesIn(log, loopId).filter((dispatch) => dispatch.time >= observedFrom)
      expect(observed.length).toBeGreaterThanOrEqual(2)
      // Once each: every dispatch schedules a later occurrence than the one before, none is handled twice.
      for (let index = 1; index < observed.length; index += 1)
        expect(observed[index]!.next_at).toBeGreaterThan(observed[index - 1]!.next_at)
      const beats = beatsIn(log, loopId).filter((record) => record.time >= observedFrom)
      for (let index = 1; index < beats.length; index += 1)
        expect(beats[index]!.time - beats[index - 1]!.time).toBeGreaterThanOrEqual(400)

      // The holder is killed: the other host takes over and brings the session back.
      const countBefore = beatsIn(log, loopId).length
      if (holderIsFirst) await r.stop('SIGKILL')
      else {
        await other.stop('SIGKILL')
        other = undefined
      }
      const survivor = holderIsFirst ? other! : r.web
      await waitFor(
        'the survivor to take over',
        () => (survivor.output().includes('brought back 1 session holding active loops') ? true : undefined),
        25_000,
      )
      await waitForDurableBeats(r.home, session, loopId, countBefore)
    } finally {
      await other?.stop('SIGTERM')
      // Whichever of the two still runs (the rig's getter throws once its process was stopped).
      await r.stop('SIGTERM').catch(() => undefined)
    }

    // A one-shot run on the same home ends by itself and brings nothing back.
    const dispatchesBefore = dispatchesIn(await readDurableLog(r.home, session), loopId).length
    const run = await r.oneShot('Say hello.', 30_000)
    expect(run.timedOut).toBe(false)
    expect(run.code).toBe(0)
    expect(run.stdout).toContain(REPLY)
    expect(dispatchesIn(await readDurableLog(r.home, session), loopId).length).toBe(dispatchesBefore)
    expect(run.stdout + run.stderr).not.toContain('brought back')
  })
})

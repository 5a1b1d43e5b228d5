/**
 * Step 5 of the end-to-end plan: stop `dsh web` with loops active (gracefully,
 * then with SIGKILL) and start it again on the same home. The plugin has no
 * start-up path (SPEC.md §1 "Boundary": DSH owns execution and wakeup): a cold process
 * fires nothing, and no log changes until someone opens the session. Opening
 * one as the composer does (`session.models`) brings its loops back: each
 * overdue loop fires once at once, then keeps its cadence, from the same
 * agent composition (tools, model) as before the restart; a loop deleted
 * before the restart stays deleted; a session nobody opens stays untouched
 * to the byte; and the plugin never writes `$DSH_HOME/storages/loop`.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect } from 'vitest'
import {
  call,
  createSession,
  heartbeatsIn,
  history,
  lastUserText,
  openSession,
  runCommand,
  waitFor,
} from '../../harness/dsh-stack.ts'
import { heartbeatText } from '../support/heartbeat-xml.ts'
import {
  createLoop,
  dispatchesOf,
  heartbeatsOf,
  settle,
  sleepUntil,
  test,
  waitForHeartbeats,
  type ModelServer,
} from './rig.ts'

interface LoopRecord {
  readonly id: string
  readonly prompt: string
  readonly time_in_seconds: number
  readonly next_at: number
}

/** How long the restarted process runs with nobody opening a session: four intervals of the 2 s loops. */
const QUIET_MS = 8_000
/** How long the opened session is observed. */
const OBSERVE_MS = 4_500

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
    .filter((request) => lastUserText(request.body) === heartbeatText(loopId, prompt))
    .map((request) => request.body)
}

describe('restart with loops active', () => {
  test.for(['SIGTERM', 'SIGKILL'] as const)(
    '5. after %s: nothing fires and no log changes until a session is opened; opening it fires each overdue loop once, then on its cadence, with the same tools and model; a deleted loop stays deleted',
    async (signal, { rig }) => {
      const r = await rig()
      // The plugin keeps nothing of its own in the home (an earlier build kept hints and a lease here).
      const loopStorage = join(r.home, 'storages', 'loop')
      const opened = await createSession(r.url)
      const unopened = await createSession(r.url)
      // The opened session runs another model than the deployment default: a resume without the host's setup would not.
      const models = await openSession(r.url, opened)
      const other = models.groups
        .flatMap((group) => group.models.map((model) => ({ provider: group.id, model: model.id })))
        .find((choice) => choice.model !== models.current.model)
      expect(other, JSON.stringify(models)).toBeDefined()
      await call(r.url, 'session.selectModel', { sessionId: opened, ...other })
      // Selecting also saves the default: put it back through the other session.
      await call(r.url, 'session.selectModel', {
        sessionId: unopened,
        provider: models.current.provider,
        model: models.current.model,
      })
      const fast = await createLoop(r.url, opened, 2, 'RESTART_FAST')
      const untouched = await createLoop(r.url, unopened, 2, 'RESTART_UNOPENED')
      await waitForHeartbeats(r.url, opened, { [fast]: 1 })
      await waitForHeartbeats(r.url, unopened, { [untouched]: 1 })
      const before = heartbeatRequests(r.model, fast, 'RESTART_FAST').at(-1)
      expect(before).toBeDefined()
      // A session brought live by a plain resume would have no tools at all: the preset's tools must be there.
      expect(agentShape(before).tools).toEqual(expect.arrayContaining(['loop_create', 'loop_delete', 'loop_list']))
      expect(agentShape(before).model).toBe(other!.model)
      // Confirmed means flushed: a create and a delete right before a SIGKILL both survive it.
      const slow = await createLoop(r.url, opened, 3, 'RESTART_SLOW')
      const gone = await createLoop(r.url, opened, 1, 'RESTART_DELETED')
      expect(await runCommand(r.url, opened, `/loop delete ${gone}`)).toEqual({
        kind: 'success',
        text: `Deleted ${gone}.`,
      })
      expect(existsSync(loopStorage)).toBe(false)

      const stopped = await r.stop(signal)
      if (signal === 'SIGTERM') expect(stopped.code).toBe(0)
      else expect(stopped.signal).toBe('SIGKILL')
      const stored = {
        opened: readFileSync(logFile(r.home, opened)),
        unopened: readFileSync(logFile(r.home, unopened)),
      }

      await r.start()
      // Requests the killed process had on the wire have arrived by now (a boot takes seconds).
      const requestsAfterBoot = r.model.requests.length
      const startedAt = Date.now()
      // Nobody opens a session: both loops fall due again and again, and nothing fires.
      await sleepUntil(startedAt + QUIET_MS)
      expect(readFileSync(logFile(r.home, opened)).equals(stored.opened), `${signal}: ${opened} changed`).toBe(true)
      expect(readFileSync(logFile(r.home, unopened)).equals(stored.unopened), `${signal}: ${unopened} changed`).toBe(
        true,
      )
      expect(r.model.requests.length).toBe(requestsAfterBoot)
      expect(existsSync(loopStorage)).toBe(false)

      // The cold session's history loads (no format error) and projects both loops, the deleted one gone;
      // reading it does not bring the session live.
      const coldLoops = ((await history(r.url, opened)).projections.loop as { loops: LoopRecord[] }).loops
      expect(coldLoops.map(({ id, prompt, time_in_seconds }) => ({ id, prompt, time_in_seconds }))).toEqual([
        { id: fast, prompt: 'RESTART_FAST', time_in_seconds: 2 },
        { id: slow, prompt: 'RESTART_SLOW', time_in_seconds: 3 },
      ])
      expect(readFileSync(logFile(r.home, opened)).equals(stored.opened), `${signal}: ${opened} changed`).toBe(true)
      const [fastRecord, slowRecord] = coldLoops as [LoopRecord, LoopRecord]

      // Opened as the composer opens it: the session comes back with its own model, and its loops with it.
      const openedAt = Date.now()
      // At least three of the fast loop's intervals were missed while nobody had the session open.
      expect(openedAt - fastRecord.next_at).toBeGreaterThanOrEqual(6_000)
      expect((await openSession(r.url, opened)).current.model).toBe(other!.model)
      const listed = await runCommand(r.url, opened, '/loop list')
      expect(listed.kind).toBe('success')
      expect(listed.text?.split('\n').map((line) => [line.split('  ')[0], line.split('  ').at(-1)])).toEqual([
        ['2 active loops:', '2 active loops:'],
        [fast, 'RESTART_FAST'],
        [slow, 'RESTART_SLOW'],
      ])
      // The first heartbeat after the restart reaches the model from the same agent composition as before it.
      // The user message is logged before the model is called: wait for the request itself.
      const after = await waitFor('the first heartbeat request after the restart', () =>
        heartbeatRequests(r.model, fast, 'RESTART_FAST', requestsAfterBoot).at(0),
      )
      expect(agentShape(after)).toEqual(agentShape(before))

      await sleepUntil(openedAt + OBSERVE_MS)
      const log = await settle(r.url, opened)
      // Counted over the observed window only: settling can take longer while the loops keep firing.
      const observed = (dispatch: { time: number }) =>
        dispatch.time >= openedAt && dispatch.time <= openedAt + OBSERVE_MS
      // The overdue fast loop fires once at once, then keeps its 2 s grid: no burst of the missed intervals (SPEC.md
      // §5 "Runtime", missed intervals: the next grid point is at most one interval after the catch-up, so 4.5 s hold it and at
      // most three).
      const resumed = dispatchesOf(log, fast).filter(observed)
      expect(resumed.length, JSON.stringify(resumed)).toBeGreaterThanOrEqual(2)
      expect(resumed.length, JSON.stringify(resumed)).toBeLessThanOrEqual(4)
      const [first, second] = resumed
      expect(first!.time - openedAt).toBeLessThan(1_500)
      // The catch-up schedules the first grid point strictly after it, at most one interval later (SPEC.md
      // §5 "Runtime", missed intervals).
      expect(first!.next_at).toBeGreaterThan(first!.time - 20)
      expect(first!.next_at).toBeLessThanOrEqual(first!.time + 2_000)
      expect(second!.time).toBeGreaterThanOrEqual(first!.next_at - 5)
      for (const dispatch of resumed) {
        // A dispatch record's time is its append, a few ms after the decision the next_at was computed from.
        expect(dispatch.next_at).toBeGreaterThan(dispatch.time - 20)
        expect((dispatch.next_at - fastRecord.next_at) % 2_000).toBe(0)
      }
      // The slow loop: one catch-up, then its original 3 s grid, its first grid point at most one interval after
      // the catch-up (SPEC.md §5 "Runtime", missed intervals), so 4.5 s hold the catch-up and at most two grid points.
      const slowResumed = dispatchesOf(log, slow).filter(observed)
      expect(slowResumed.length).toBeGreaterThanOrEqual(1)
      expect(slowResumed.length).toBeLessThanOrEqual(3)
      expect(slowResumed[0]!.time - openedAt).toBeLessThan(1_500)
      expect(slowResumed[0]!.next_at).toBeGreaterThan(slowResumed[0]!.time - 20)
      expect(slowResumed[0]!.next_at).toBeLessThanOrEqual(slowResumed[0]!.time + 3_000)
      for (const [index, dispatch] of slowResumed.entries()) {
        expect((dispatch.next_at - slowRecord.next_at) % 3_000).toBe(0)
        if (index > 0) expect(dispatch.time).toBeGreaterThanOrEqual(slowResumed[index - 1]!.next_at - 5)
      }
      // The deleted loop stays deleted: no dispatch and no heartbeat after the restart.
      expect(dispatchesOf(log, gone).filter((dispatch) => dispatch.time >= startedAt)).toEqual([])
      expect(heartbeatsOf(log, gone).filter((beat) => beat.time >= startedAt)).toEqual([])

      // Both fire as heartbeats in the reopened session, each answered.
      const afterOpen = heartbeatsIn(log).filter((beat) => beat.time >= openedAt)
      expect(afterOpen.filter((beat) => beat.loopId === fast).length).toBeGreaterThanOrEqual(2)
      expect(afterOpen.filter((beat) => beat.loopId === slow).length).toBeGreaterThanOrEqual(1)
      expect(heartbeatsOf(log, fast).every((beat) => beat.text === heartbeatText(fast, 'RESTART_FAST'))).toBe(true)
      expect(heartbeatsOf(log, slow).every((beat) => beat.text === heartbeatText(slow, 'RESTART_SLOW'))).toBe(true)
      const lastBeat = afterOpen.at(-1)!
      expect(log.some((event) => event.type === 'assistant/message' && event.seq > lastBeat.seq)).toBe(true)

      // The session nobody opened is still untouched, to the byte, and the home holds nothing of the plugin's.
      expect(readFileSync(logFile(r.home, unopened)).equals(stored.unopened), `${signal}: ${unopened} changed`).toBe(
        true,
      )
      expect(heartbeatRequests(r.model, untouched, 'RESTART_UNOPENED', requestsAfterBoot)).toEqual([])
      expect(existsSync(loopStorage)).toBe(false)
      expect(r.web.output()).not.toMatch(/cannot prepare session|resume failed/)
    },
  )
})

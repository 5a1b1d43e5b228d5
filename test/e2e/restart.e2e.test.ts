/**
 * Step 5 of the end-to-end plan: stop `dsh web` with loops active (gracefully,
 * then with SIGKILL), start it again on the same home, reopen the session.
 */
import { describe, expect } from 'vitest'
import { createSession, heartbeatsIn, history, reopenSession, runCommand } from '../../scripts/dsh-stack.ts'
import {
  createLoop,
  dispatchesOf,
  events,
  heartbeat,
  heartbeatsOf,
  settle,
  sleepUntil,
  test,
  waitForHeartbeats,
} from './rig.ts'

interface LoopRecord {
  readonly id: string
  readonly prompt: string
  readonly time_in_seconds: number
  readonly next_at: number
}

/** The `loop` settings section that turns resume on start off. */
const RESUME_OFF = 'loop:\n  resumeOnStart: false\n'

/** How long DSH stays down: a 1 s loop misses at least five intervals. */
const DOWNTIME_MS = 5_000
/** How long the resumed session is observed. */
const OBSERVE_MS = 3_500

describe('restart with loops active', () => {
  test.for(['SIGTERM', 'SIGKILL'] as const)(
    '5. after %s: the loops come back with their ids and prompts, fire again, the history loads, and the downtime is not replayed',
    async (signal, { rig }) => {
      // The reopen path, timed from the reopen: with resume on start the session would come back at boot (resume.e2e.test.ts).
      const r = await rig({}, { settings: RESUME_OFF })
      const sessionId = await createSession(r.url)
      const fast = await createLoop(r.url, sessionId, 1, 'RESTART_FAST')
      await waitForHeartbeats(r.url, sessionId, { [fast]: 2 })
      // Confirmed means flushed: a loop created right before a SIGKILL survives it.
      const slow = await createLoop(r.url, sessionId, 3, 'RESTART_SLOW')
      const stopped = await r.stop(signal)
      if (signal === 'SIGTERM') expect(stopped.code).toBe(0)
      else expect(stopped.signal).toBe('SIGKILL')

      await sleepUntil(stopped.at + DOWNTIME_MS)
      await r.start()

      // The cold session's history loads (no format error) and projects both loops unchanged.
      const cold = await history(r.url, sessionId)
      const coldLoops = (cold.projections.loop as { loops: LoopRecord[] }).loops
      expect(coldLoops.map(({ id, prompt, time_in_seconds }) => ({ id, prompt, time_in_seconds }))).toEqual([
        { id: fast, prompt: 'RESTART_FAST', time_in_seconds: 1 },
        { id: slow, prompt: 'RESTART_SLOW', time_in_seconds: 3 },
      ])
      const fastRecord = coldLoops[0]!

      const reopenedAt = Date.now()
      // At least four of the fast loop's intervals were missed while DSH was down.
      expect(reopenedAt - fastRecord.next_at).toBeGreaterThanOrEqual(4_000)
      await reopenSession(r.url, sessionId)
      const listed = await runCommand(r.url, sessionId, '/loop list')
      expect(listed.kind).toBe('success')
      expect(listed.text?.split('\n').map((line) => [line.split('  ')[0], line.split('  ').at(-1)])).toEqual([
        ['2 active loops:', '2 active loops:'],
        [fast, 'RESTART_FAST'],
        [slow, 'RESTART_SLOW'],
      ])

      await sleepUntil(reopenedAt + OBSERVE_MS)
      const log = await settle(r.url, sessionId)

      // Counted over the observed window only: settling can take longer while the 1 s loop keeps firing.
      const observed = (dispatch: { time: number }) =>
        dispatch.time >= reopenedAt && dispatch.time <= reopenedAt + OBSERVE_MS
      // The overdue fast loop fires once on resume, then keeps its cadence: no burst of missed intervals.
      const resumed = dispatchesOf(log, fast).filter(observed)
      expect(resumed.length, JSON.stringify(resumed)).toBeGreaterThanOrEqual(3)
      expect(resumed.length, JSON.stringify(resumed)).toBeLessThanOrEqual(5)
      const [first, second] = resumed
      expect(first!.time - reopenedAt).toBeLessThan(1_500)
      expect(first!.next_at).toBeGreaterThan(first!.time)
      expect(first!.next_at).toBeLessThanOrEqual(first!.time + 1_500)
      expect(second!.time).toBeGreaterThanOrEqual(first!.next_at - 5)
      for (const dispatch of resumed) {
        // A dispatch record's time is its append, a few ms after the decision the next_at was computed from.
        expect(dispatch.next_at).toBeGreaterThan(dispatch.time - 20)
        expect((dispatch.next_at - fastRecord.next_at) % 1_000).toBe(0)
      }
      // The slow loop: one catch-up, then its original 3 s grid. The first grid point can follow the catch-up by
      // any fraction of the interval (SPEC.md, anti-burst), so 3.5 s hold at most the catch-up and two grid points.
      const slowRecord = coldLoops[1]!
      const slowResumed = dispatchesOf(log, slow).filter(observed)
      expect(slowResumed.length).toBeGreaterThanOrEqual(1)
      expect(slowResumed.length).toBeLessThanOrEqual(3)
      expect(slowResumed[0]!.next_at).toBeGreaterThan(slowResumed[0]!.time - 20)
      expect(slowResumed[0]!.next_at).toBeLessThanOrEqual(slowResumed[0]!.time + 4_500)
      for (const [index, dispatch] of slowResumed.entries()) {
        expect((dispatch.next_at - slowRecord.next_at) % 3_000).toBe(0)
        if (index > 0) expect(dispatch.time).toBeGreaterThanOrEqual(slowResumed[index - 1]!.next_at - 5)
      }

      // Both fire again as heartbeats in the resumed session, each answered.
      const afterResume = heartbeatsIn(log).filter((beat) => beat.time >= reopenedAt)
      expect(afterResume.filter((beat) => beat.loopId === fast).length).toBeGreaterThanOrEqual(3)
      expect(afterResume.filter((beat) => beat.loopId === slow).length).toBeGreaterThanOrEqual(1)
      expect(heartbeatsOf(log, fast).every((beat) => beat.text === heartbeat(fast, 'RESTART_FAST'))).toBe(true)
      expect(heartbeatsOf(log, slow).every((beat) => beat.text === heartbeat(slow, 'RESTART_SLOW'))).toBe(true)
      const lastBeat = afterResume.at(-1)!
      expect(log.some((event) => event.type === 'assistant/message' && event.seq > lastBeat.seq)).toBe(true)
      // The whole log still reads after the resume.
      expect((await events(r.url, sessionId)).length).toBeGreaterThanOrEqual(log.length)
    },
  )
})

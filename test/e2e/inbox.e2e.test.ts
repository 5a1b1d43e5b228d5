/**
 * Waiting heartbeats in a real `dsh web`: Stop (the HTTP API's `session.cancel`, which keeps
 * the inbox) and `/loop delete` while a heartbeat waits for the next step, or while a
 * heartbeat turn runs that a later occurrence coalesced into (nothing waits then), with a
 * model whose every step streams for about 3 s and a 2 s loop.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect } from 'vitest'
import {
  call,
  createSession,
  heartbeatsIn,
  prompt,
  runCommand,
  waitFor,
  type HistoryEvent,
} from '../../harness/dsh-stack.ts'
import { heartbeatLoopId, heartbeatText } from '../support/heartbeat-xml.ts'
import { createLoop, dispatchesOf, events, heartbeatsOf, requestsEndingWith, settle, test } from './rig.ts'

/** Every step streams 30 characters, 3 at a time, 300 ms apart: about 3 s. */
const SLOW_STEPS = {
  sequence: ['slow_success' as const],
  repeatLast: true,
  successText: 'Still working on it, one piece',
  chunkSize: 3,
  chunkDelayMs: 300,
}

/** Window watched after Stop. */
const AFTER_STOP_MS = 10_000

interface Pending {
  readonly id: string
  readonly target: string
  readonly loopId: string | undefined
}

/** The loop id a message carries, when it is a heartbeat. */
function loopIdOf(message: {
  source?: { kind?: string; plugin?: string }
  content?: { text?: string }[]
}): string | undefined {
  if (message.source?.kind !== 'plugin' || message.source.plugin !== 'loop') return undefined
  return heartbeatLoopId(message.content?.[0]?.text ?? '')
}

/**
 * Replay the inbox from its durable splices, as DSH does at resume.
 * @returns what is pending at the end of the log, and the most heartbeats of one loop ever pending at once.
 */
function replayInbox(log: readonly HistoryEvent[], loopId: string): { pending: Pending[]; most: number } {
  const lists: Record<string, Pending[]> = { 'next-step': [], 'next-turn': [] }
  let most = 0
  for (const event of log) {
    if (event.type !== 'agent/inbox/spliced') continue
    const data = event.data as {
      target: string
      start: number
      removedCount?: number
      inserted: ({ id: string } & Parameters<typeof loopIdOf>[0])[]
    }
    const inserted = data.inserted.map((message) => ({
      id: message.id,
      target: data.target,
      loopId: loopIdOf(message),
    }))
    lists[data.target]!.splice(data.start, data.removedCount ?? 0, ...inserted)
    most = Math.max(
      most,
      [...lists['next-step']!, ...lists['next-turn']!].filter((message) => message.loopId === loopId).length,
    )
  }
  return { pending: [...lists['next-step']!, ...lists['next-turn']!], most }
}

/** Wait until one heartbeat of the loop waits in the inbox with this target. */
async function waitingHeartbeat(
  url: string,
  sessionId: string,
  loopId: string,
  target: 'next-step' | 'next-turn',
): Promise<HistoryEvent[]> {
  return waitFor(
    `a ${target} heartbeat of ${loopId} waiting in ${sessionId}`,
    async () => {
      const log = await events(url, sessionId)
      return replayInbox(log, loopId).pending.some((message) => message.loopId === loopId && message.target === target)
        ? log
        : undefined
    },
    30_000,
  )
}

/** DSH web's Stop button. */
async function stop(url: string, sessionId: string): Promise<void> {
  expect(await call(url, 'session.cancel', { sessionId })).toEqual({ accepted: true })
}

const count = (log: readonly HistoryEvent[], type: string) => log.filter((event) => event.type === type).length

/** The situations a Stop or a delete meets: a heartbeat waiting for the next step, or a heartbeat turn with nothing waiting. */
type Situation = 'next-step heartbeat waits' | 'heartbeat turn runs'

/**
 * Wait for the situation. A next-step heartbeat waits behind a long user task. A heartbeat turn runs: the loop's first
 * heartbeat opened it, a later occurrence coalesced into it (a second dispatch), and nothing of the loop waits.
 */
async function reach(url: string, sessionId: string, loopId: string, situation: Situation): Promise<HistoryEvent[]> {
  if (situation === 'next-step heartbeat waits') {
    await prompt(url, sessionId, 'Start the long task')
    return waitingHeartbeat(url, sessionId, loopId, 'next-step')
  }
  return waitFor(
    `a heartbeat turn of ${loopId} an occurrence coalesced into`,
    async () => {
      const log = await events(url, sessionId)
      const open = count(log, 'turn/start') > count(log, 'turn/end')
      const waiting = replayInbox(log, loopId).pending.some((message) => message.loopId === loopId)
      return open && !waiting && heartbeatsOf(log, loopId).length === 1 && dispatchesOf(log, loopId).length >= 2
        ? log
        : undefined
    },
    30_000,
  )
}

describe('a heartbeat waiting in the inbox', () => {
  for (const situation of ['next-step heartbeat waits', 'heartbeat turn runs'] as const) {
    test(`Stop while a ${situation}: the loop keeps firing (heartbeats delivered and turns in the 10 s after Stop)`, async ({
      rig,
    }) => {
      const r = await rig(SLOW_STEPS)
      const sessionId = await createSession(r.url)
      const id = await createLoop(r.url, sessionId, 2, 'AFTER_STOP')
      await reach(r.url, sessionId, id, situation)
      await stop(r.url, sessionId)
      const stoppedAt = Date.now()
      await sleep(AFTER_STOP_MS)
      const log = await events(r.url, sessionId)
      const after = log.filter((event) => event.time >= stoppedAt)
      const delivered = heartbeatsOf(after, id)
      const figures = {
        dispatches: dispatchesOf(after, id).length,
        delivered: delivered.length,
        turns: count(after, 'turn/start'),
      }
      console.log(`Stop while a ${situation}, ${AFTER_STOP_MS / 1000} s after Stop: ${JSON.stringify(figures)}`)
      // Before the fix: 4–5 dispatches, 0 heartbeats, 0 turns.
      expect(figures.delivered).toBeGreaterThanOrEqual(2)
      expect(figures.turns).toBeGreaterThanOrEqual(2)
      expect(delivered.every((beat) => beat.text === heartbeatText(id, 'AFTER_STOP'))).toBe(true)
      expect(requestsEndingWith(r.model, heartbeatText(id, 'AFTER_STOP')).length).toBeGreaterThanOrEqual(2)
      // Never more than one heartbeat of the loop waiting, the stale one included.
      expect(replayInbox(log, id).most).toBe(1)
      // Every turn after Stop took at most one heartbeat of the loop.
      let inTurn = 0
      for (const event of after) {
        if (event.type === 'turn/start') inTurn = 0
        if (heartbeatsIn([event]).length > 0) inTurn += 1
        expect(inTurn).toBeLessThanOrEqual(1)
      }
      expect(await runCommand(r.url, sessionId, `/loop delete ${id}`)).toEqual({
        kind: 'success',
        text: `Deleted ${id}.`,
      })
    })

    test(`/loop delete while a ${situation}: no heartbeat of it reaches the model after`, async ({ rig }) => {
      const r = await rig(SLOW_STEPS)
      const sessionId = await createSession(r.url)
      const id = await createLoop(r.url, sessionId, 2, 'DELETED_WHILE_WAITING')
      const before = await reach(r.url, sessionId, id, situation)
      const deliveredBefore = heartbeatsOf(before, id).length
      const requestsBefore = requestsEndingWith(r.model, heartbeatText(id, 'DELETED_WHILE_WAITING')).length
      expect(await runCommand(r.url, sessionId, `/loop delete ${id}`)).toEqual({
        kind: 'success',
        text: `Deleted ${id}.`,
      })
      await settle(r.url, sessionId)
      await sleep(3 * 2_000)
      const log = await events(r.url, sessionId)
      const deletion = log.find(
        (event) =>
          event.type === 'loop/change' &&
          JSON.stringify(event.data) === JSON.stringify({ version: 1, operation: 'delete', id }),
      )!
      const afterDelete = log.filter((event) => event.seq > deletion.seq)
      const figures = {
        stepsAfterDelete: count(afterDelete, 'step/start'),
        turnsAfterDelete: count(afterDelete, 'turn/start'),
        heartbeatsAfterDelete: heartbeatsOf(afterDelete, id).length,
      }
      console.log(`/loop delete while a ${situation}: ${JSON.stringify(figures)}`)
      // Before the fix: one more step with the waiting heartbeat.
      expect(figures).toEqual({ stepsAfterDelete: 0, turnsAfterDelete: 0, heartbeatsAfterDelete: 0 })
      expect(heartbeatsOf(log, id).length).toBe(deliveredBefore)
      expect(requestsEndingWith(r.model, heartbeatText(id, 'DELETED_WHILE_WAITING')).length).toBe(requestsBefore)
      expect(replayInbox(log, id).pending).toEqual([])
      // A waiting heartbeat's removal is durable and comes right before the delete record.
      const removal = log.filter((event) => event.seq < deletion.seq).at(-1)!
      if (situation === 'next-step heartbeat waits') {
        expect(removal.type).toBe('agent/inbox/spliced')
        expect(removal.data).toEqual({
          target: 'next-step',
          start: 0,
          removedCount: 1,
          inserted: [],
          outcome: 'canceled',
        })
      } else expect(removal.type).not.toBe('agent/inbox/spliced')
    })
  }
})

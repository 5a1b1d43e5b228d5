/**
 * A fork of a session that holds a loop, in a real `dsh web`: the fork never
 * shows or runs its parent's loop, neither live nor after a restart. DSH web
 * serves the history of a session that is not open by folding its whole stored
 * log, seed included, with the projection's `apply`, which cannot see the seed
 * boundary; so a fork's runtime, when it first reads its log, names the loops
 * such a reading would still show in one `fork` change, which that reading
 * drops. A fork an older build made has no such change: read cold it shows the
 * parent's loop until it is opened (SPEC.md §7 "Projection"), and opening it writes the
 * change and publishes the corrected value at a higher seq, the only kind of
 * value the web client takes.
 */
import { describe, expect } from 'vitest'
import { call, createSession, openSession, prompt, runCommand, waitFor } from '../../harness/dsh-stack.ts'
import { createLoop, dropStoredEvents, events, settle, test } from './rig.ts'

const PARENT_PROMPT = 'check the parent build'

/** The loop projection as `session.history` serves it, with the seq it is as of. */
async function loopValue(url: string, sessionId: string): Promise<{ asOfSeq: number; loop: unknown }> {
  const value = await call<{ projections?: { asOfSeq: number; values: Record<string, unknown> } }>(
    url,
    'session.history',
    { sessionId },
  )
  if (value.projections === undefined) throw new Error(`no projections in the history of ${sessionId}`)
  return { asOfSeq: value.projections.asOfSeq, loop: value.projections.values.loop }
}

/** Fork a session as DSH web's "Fork" does; returns the fork's id. */
async function fork(url: string, sessionId: string): Promise<string> {
  return (await call<{ sessionId: string }>(url, 'session.fork', { sessionId })).sessionId
}

/** The `loop/change` payloads a fork wrote itself: the ones after its seed (`session/end-seed`). */
async function ownLoopChanges(url: string, sessionId: string): Promise<unknown[]> {
  const log = await events(url, sessionId)
  const seedEnd = log.findIndex((event) => event.type === 'session/end-seed')
  if (seedEnd < 0) throw new Error(`${sessionId} has no seed`)
  return log
    .slice(seedEnd + 1)
    .filter((event) => event.type === 'loop/change')
    .map((event) => event.data)
}

describe('forking a session that holds a loop', () => {
  test("a fork never shows its parent's loop: not live, not read cold after a restart, not once opened; an older build's fork until it is opened", async ({
    rig,
  }) => {
    const r = await rig()
    const parent = await createSession(r.url)
    const loopId = await createLoop(r.url, parent, 3_600, PARENT_PROMPT)
    await prompt(r.url, parent, 'Parent session prompt')
    await settle(r.url, parent)
    const parentLog = await events(r.url, parent)
    const parentLoop = await loopValue(r.url, parent)
    expect(parentLoop.loop).toEqual({
      loops: [{ id: loopId, prompt: PARENT_PROMPT, time_in_seconds: 3_600, next_at: expect.any(Number) }],
    })

    // Two forks: the first stays as this build leaves it, the second loses its fork change below (an older build's).
    const forked = await fork(r.url, parent)
    const legacy = await fork(r.url, parent)
    for (const id of [forked, legacy]) {
      // The seed is the parent's log, then the boundary; the fork's own first event is the fork change.
      const log = await waitFor(`the fork change of ${id}`, async () => {
        const log = await events(r.url, id)
        return log.at(-1)?.type === 'loop/change' ? log : undefined
      })
      expect(log.slice(0, parentLog.length).map(({ type, data }) => ({ type, data }))).toEqual(
        parentLog.map(({ type, data }) => ({ type, data })),
      )
      expect(log.slice(parentLog.length).map(({ type }) => type)).toEqual(['session/end-seed', 'loop/change'])
      expect(await ownLoopChanges(r.url, id)).toEqual([{ version: 1, operation: 'fork', ids: [loopId] }])
      expect((await loopValue(r.url, id)).loop).toEqual({ loops: [] })
    }
    expect((await r.stop('SIGTERM')).code).toBe(0)

    // The second fork as an older build left it: its log ends at the seed boundary.
    const legacyLog = await dropStoredEvents(
      r.home,
      legacy,
      (event) => event.type === 'loop/change' && (event.data as { operation?: string }).operation === 'fork',
    )
    expect(legacyLog.at(-1)?.type).toBe('session/end-seed')

    await r.start()
    // Cold (no session is live after a start): the fork shows no loop, its parent still shows its own.
    const coldFork = await loopValue(r.url, forked)
    expect(coldFork.loop).toEqual({ loops: [] })
    expect(await loopValue(r.url, parent)).toEqual(parentLoop)
    // An older build's fork read cold shows the parent's loop: nothing in its log says otherwise yet.
    const coldLegacy = await loopValue(r.url, legacy)
    expect(coldLegacy).toEqual({ asOfSeq: legacyLog.at(-1)!.seq, loop: parentLoop.loop })

    // Opened as the web app does: still no loop, and no second fork change.
    await openSession(r.url, forked)
    expect((await loopValue(r.url, forked)).loop).toEqual({ loops: [] })
    expect(await runCommand(r.url, forked, '/loop list')).toEqual({
      kind: 'success',
      text: 'No active loops in this session. Create one with /loop <seconds> <prompt>.',
    })
    expect(await ownLoopChanges(r.url, forked)).toEqual([{ version: 1, operation: 'fork', ids: [loopId] }])

    // Opening the older build's fork writes its fork change once, and the value without the loop
    // comes at a higher seq than the cold one, so a web client that showed the cold value takes it.
    await openSession(r.url, legacy)
    const openedLegacy = await waitFor('the fork change of the older fork', async () => {
      const value = await loopValue(r.url, legacy)
      return value.asOfSeq > coldLegacy.asOfSeq ? value : undefined
    })
    expect(openedLegacy.loop).toEqual({ loops: [] })
    expect(await ownLoopChanges(r.url, legacy)).toEqual([{ version: 1, operation: 'fork', ids: [loopId] }])
    expect(await runCommand(r.url, legacy, '/loop list')).toEqual({
      kind: 'success',
      text: 'No active loops in this session. Create one with /loop <seconds> <prompt>.',
    })
    // The parent, opened too, still runs its loop.
    await openSession(r.url, parent)
    expect((await runCommand(r.url, parent, '/loop list')).text).toMatch(
      new RegExp(`^1 active loop:\\n${loopId} .*${PARENT_PROMPT}$`),
    )
  })
})

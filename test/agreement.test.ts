/**
 * The runtime and the dock read one log alike: for generated logs (valid,
 * corrupt, forked, with ids deleted and created again), written by another host and
 * opened here, `loop_list` (the runtime's fold) and the `loop` projection (what the dock
 * shows) hold the same loops, or the runtime refuses a corrupt log and the dock shows none;
 * and they still agree after the runtime's own create and delete.
 */
import { SessionId, type Session } from '@deepseek-ai/dsh-session'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { LOOP_PROJECTION_KEY } from '../src/shared/projection-key.ts'
import type { LoopRecord } from '../src/types.ts'
import { bootHost, createFakeAgent, failureOf, outcomeOf, resumeFakeAgent, runTool, type Host } from './support/host.ts'
import { tempDir } from '../harness/temp-dir.ts'

const RUNS = 60
const HOUR_MS = 3_600_000

/** A few ids, so deletes, dispatches and creates meet the same loops. */
const id = fc.constantFrom('loop_aaaaaaaa', 'loop_bbbbbbbb', 'loop_c')
const record = fc.record({
  id,
  prompt: fc.constantFrom('check CI', 'line one\r\nline two', 'ünïcødé ✓'),
  time_in_seconds: fc.constant(3600),
  next_at: fc.constant(0),
})
/** A `loop/change` payload: mostly well-formed, some of them corrupt. */
const change = fc.oneof(
  { weight: 6, arbitrary: record.map((loop) => ({ version: 1, operation: 'create', loop })) },
  { weight: 2, arbitrary: id.map((target) => ({ version: 1, operation: 'delete', id: target })) },
  { weight: 2, arbitrary: id.map((target) => ({ version: 1, operation: 'dispatch', id: target, next_at: 1 })) },
  { weight: 1, arbitrary: record.map((loop) => ({ version: 1, operation: 'update', loop: { ...loop, title: 'T' } })) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      { version: 2, operation: 'delete', id: 'loop_c' },
      {
        version: 1,
        operation: 'create',
        loop: { id: 'loop_c', prompt: 'bell \u0007', time_in_seconds: 1, next_at: 1 },
      },
      { version: 1, operation: 'delete', id: 'loop_c', extra: true },
    ),
  },
)
/** A log: the parent's changes, and, for a fork, where it is cut and the fork's own changes. */
const log = fc.record({
  // At least one change: a session with an empty log is never saved, so there would be nothing to open.
  parent: fc.array(change, { minLength: 1, maxLength: 8 }),
  fork: fc.option(fc.record({ cut: fc.nat(), own: fc.array(change, { maxLength: 5 }) }), { nil: undefined, freq: 2 }),
})

/**
 * Give every record and every dispatch of a change a `next_at` an hour from now, so no loop falls
 * due or looks skewed (a due loop would fire while the two reads are taken, and one of them would
 * see the dispatch first).
 */
function stamped(data: Record<string, unknown>): Record<string, unknown> {
  if (data.operation === 'dispatch') return { ...data, next_at: Date.now() + HOUR_MS }
  if (data.loop === undefined) return data
  return { ...data, loop: { ...(data.loop as object), next_at: Date.now() + HOUR_MS } }
}

let writer: Host
let reader: Host
let run = 0
const outcomes = { agreedOnLoops: 0, refusedCorrupt: 0, forks: 0 }

beforeAll(async () => {
  // Every corrupt log is reported once on stderr, by design; here that is dozens of expected lines.
  vi.spyOn(console, 'error').mockImplementation(() => undefined)
  const root = tempDir()
  // The reader loads the plugin first, which adds `loop/change` to the process's event catalog.
  reader = await bootHost({ root })
  writer = await bootHost({ root, loop: false })
})

afterAll(async () => {
  vi.restoreAllMocks()
  await writer.dispose()
  await reader.dispose()
})

/** Append changes to a live session of the writer and save them. */
async function write(session: Session, changes: readonly Record<string, unknown>[]): Promise<void> {
  for (const data of changes) (session.append as (type: string, data: object) => unknown)('loop/change', stamped(data))
  expect(await writer.ctx.sessions.flush(session)).toBe(true)
}

/** What the runtime lists and what the dock shows for a session the reader has open. */
async function bothReads(agent: Awaited<ReturnType<typeof resumeFakeAgent>>['agent']) {
  const listed = await runTool(reader, agent, 'loop_list', {})
  const projected = reader.ctx.sessionProjections.snapshot(agent.session).values[LOOP_PROJECTION_KEY]
  return { listed, projected: projected as { loops: LoopRecord[] } }
}

/** Assert the two reads agree; returns whether the log was sound. */
function expectAgreement({ listed, projected }: Awaited<ReturnType<typeof bothReads>>): boolean {
  if (listed.isError) {
    expect(listed.error.info).toEqual({ name: 'LoopError', code: 'corrupt_loop_log' })
    expect(projected).toEqual({ loops: [] })
    return false
  }
  const records = (listed.value as unknown as (LoopRecord & { state: string; delivery_mode: string })[]).map(
    ({ id: loopId, prompt, time_in_seconds, next_at }) => ({ id: loopId, prompt, time_in_seconds, next_at }),
  )
  expect(projected).toEqual({ loops: records })
  return true
}

describe('the runtime and the dock', () => {
  it(`agree on generated logs, and after the runtime's own changes (${RUNS} runs)`, async () => {
    await fc.assert(
      fc.asyncProperty(log, async ({ parent, fork }) => {
        run += 1
        const parentId = `ses-agree-${run}`
        const written = await createFakeAgent(writer, parentId)
        await write(written.agent.session, parent)
        let opened = parentId
        if (fork !== undefined) {
          outcomes.forks += 1
          const source = written.agent.session
          const child = writer.ctx.sessions.fork(source, fork.cut % source.events.length, SessionId(`${parentId}-fork`))
          await write(child, fork.own)
          opened = `${parentId}-fork`
        }
        await written.handle.dispose()
        const resumed = await resumeFakeAgent(reader, opened)
        try {
          if (!expectAgreement(await bothReads(resumed.agent))) {
            outcomes.refusedCorrupt += 1
            return
          }
          outcomes.agreedOnLoops += 1
          const created = await runTool(reader, resumed.agent, 'loop_create', { prompt: 'mine', time_in_seconds: 60 })
          expect(failureOf(created)).toBe('succeeded')
          const first = (await bothReads(resumed.agent)).projected.loops[0]!
          const deleted = await runTool(reader, resumed.agent, 'loop_delete', { id: first.id })
          expect(outcomeOf(deleted)).toEqual({ deleted: true, id: first.id })
          expect(expectAgreement(await bothReads(resumed.agent))).toBe(true)
        } finally {
          await resumed.handle.dispose()
        }
      }),
      { numRuns: RUNS },
    )
    // The generators reach every kind of log the property is about.
    expect(outcomes.agreedOnLoops).toBeGreaterThan(0)
    expect(outcomes.refusedCorrupt).toBeGreaterThan(0)
    expect(outcomes.forks).toBeGreaterThan(0)
  })
})

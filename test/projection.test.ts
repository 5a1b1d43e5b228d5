import { SessionId, type Session, type SessionEvent } from '@deepseek-ai/dsh-session'
import { beforeEach, describe, expect, it } from 'vitest'
import { activeLoops, createChange, deleteChange, dispatchChange } from '../src/domain.ts'
import {
  LOOP_PROJECTION_KEY,
  applyLoopProjection,
  initLoopProjection,
  loopProjectionSchema,
  takeProjectedFold,
  viewLoopProjection,
} from '../src/projection.ts'
import * as loopPlugin from '../src/index.ts'
import type { LoopRecord } from '../src/types.ts'
import {
  AGENT_OPTIONS,
  advance,
  createFakeAgent,
  loopChanges,
  runTool,
  settle,
  type Host,
  TEST_NOW,
  useFakeHost,
  useHosts,
} from './support/host.ts'

const NOW = TEST_NOW
const hosts = useHosts()

/** The loop projection a host's real registry holds for a session. */
const projectedIn = (host: Host, session: Session) =>
  host.ctx.sessionProjections.snapshot(session).values[LOOP_PROJECTION_KEY]

const loopA: LoopRecord = { id: 'loop_a', prompt: 'A', time_in_seconds: 5, next_at: NOW + 5000 }
let seq = 0
const event = (data: unknown, type = 'loop/change') =>
  ({ type, seq: seq++, time: NOW, data }) as unknown as SessionEvent

describe('reducer', () => {
  beforeEach(() => {
    seq = 0
  })

  it('starts empty and returns the same object for events it ignores', () => {
    const state = initLoopProjection()
    expect(state).toEqual({ loops: [], corrupt: false, seq: -1 })
    expect(applyLoopProjection(state, event({ content: [] }, 'user/message'))).toBe(state)
  })

  it('reflects create, dispatch and delete, holding only active records, each change a new state reference', () => {
    const initial = initLoopProjection()
    let state = applyLoopProjection(initial, event(createChange(loopA)))
    expect(state).not.toBe(initial)
    expect(viewLoopProjection(state)).toEqual({ loops: [loopA] })
    state = applyLoopProjection(state, event(dispatchChange('loop_a', NOW + 10_000)))
    expect(viewLoopProjection(state)).toEqual({ loops: [{ ...loopA, next_at: NOW + 10_000 }] })
    state = applyLoopProjection(state, event(deleteChange('loop_a')))
    expect(viewLoopProjection(state)).toEqual({ loops: [] })
  })

  it('normalizes the previous build update records', () => {
    let state = applyLoopProjection(
      initLoopProjection(),
      event({ version: 1, operation: 'create', loop: { ...loopA, title: 'T', allow_steer: true } }),
    )
    state = applyLoopProjection(
      state,
      event({ version: 1, operation: 'update', loop: { ...loopA, prompt: 'A2', title: 'T2', allow_steer: false } }),
    )
    expect(viewLoopProjection(state)).toEqual({ loops: [{ ...loopA, prompt: 'A2' }] })
  })

  it('fails closed to no loops on a malformed record and stays there', () => {
    const created = applyLoopProjection(initLoopProjection(), event(createChange(loopA)))
    const corrupt = applyLoopProjection(created, event({ version: 1, operation: 'delete', id: 'loop_zz' }))
    expect(corrupt).toEqual({ loops: [], corrupt: true, seq: 1 })
    expect(applyLoopProjection(corrupt, event(createChange({ ...loopA, id: 'loop_b' })))).toBe(corrupt)
  })

  it('validates its wire value strictly', () => {
    expect(loopProjectionSchema.parse({ loops: [loopA] })).toEqual({ loops: [loopA] })
    expect(() => loopProjectionSchema.parse({ loops: [{ ...loopA, title: 'x' }] })).toThrow()
    expect(() => loopProjectionSchema.parse({ loops: [loopA], countdown: '5s' })).toThrow()
    expect(() => loopProjectionSchema.parse({ loops: [{ ...loopA, time_in_seconds: 0 }] })).toThrow()
  })
})

describe('reading each event once', () => {
  beforeEach(() => {
    seq = 0
  })

  it('moves seq on for every event and applies nothing twice: a replay over a state that is ahead changes nothing', () => {
    const created = event(createChange(loopA))
    const other = event({ content: [] }, 'user/message')
    const deleted = event(deleteChange('loop_a'))
    let state = [created, other].reduce(applyLoopProjection, initLoopProjection())
    expect(state).toEqual({ loops: [loopA], corrupt: false, seq: 1 })
    // The registry's cold restore can fold from a cache row whose state the last fold moved past its watermark.
    expect(applyLoopProjection(state, created)).toBe(state)
    state = applyLoopProjection(state, deleted)
    expect(state).toEqual({ loops: [], corrupt: false, seq: 2 })
  })

  it('folds on from a copy of a cache row, never the row itself, and past a gap', () => {
    const row = structuredClone([event(createChange(loopA))].reduce(applyLoopProjection, initLoopProjection()))
    seq = 5
    const state = applyLoopProjection(row, event(dispatchChange('loop_a', NOW + 9000)))
    expect(state).toEqual({ loops: [{ ...loopA, next_at: NOW + 9000 }], corrupt: false, seq: 5 })
    expect(row).toEqual({ loops: [loopA], corrupt: false, seq: 0 })
  })

  it('shows a deleted id created again as the log says, whatever its cell was built from, and hands the runtime no fold', () => {
    const events = [event(createChange(loopA)), event(deleteChange('loop_a')), event(createChange(loopA))]
    const fromStart = events.reduce(applyLoopProjection, initLoopProjection())
    expect(fromStart).toEqual({ loops: [loopA], corrupt: false, seq: 2 })
    // The runtime reads the log itself and stops at the reused id (test/domain.test.ts, the fold).
    expect(takeProjectedFold(events, 0)).toBeUndefined()
    const row = structuredClone(events.slice(0, 1).reduce(applyLoopProjection, initLoopProjection()))
    expect(events.slice(1).reduce(applyLoopProjection, row)).toEqual(fromStart)
  })
})

describe('the fold the runtime takes', () => {
  beforeEach(() => {
    seq = 0
  })

  /** A log whose every event is a new object, with seq from 0, folded by the projection as the registry does. */
  const foldedLog = (...items: SessionEvent[]) => {
    const state = items.reduce(applyLoopProjection, initLoopProjection())
    return { events: items, state }
  }
  const loopB: LoopRecord = { ...loopA, id: 'loop_b', prompt: 'B' }

  it('is a copy of the projection fold of the whole log, and says where to go on', () => {
    const { events, state } = foldedLog(
      event({ content: [] }, 'user/message'),
      event(createChange(loopA)),
      event(createChange(loopB)),
      event(deleteChange('loop_a')),
      event({ turn: 1 }, 'turn/start'),
    )
    const taken = takeProjectedFold(events, 0)!
    expect(taken.next).toBe(5)
    expect(activeLoops(taken.fold)).toEqual([loopB])
    expect([taken.fold.usedIds.size, taken.fold.usedIds.has('loop_a'), taken.fold.usedIds.has('loop_b')]).toEqual([
      2,
      true,
      true,
    ])
    taken.fold.active.remove('loop_b')
    taken.fold.usedIds.add('loop_c')
    expect(viewLoopProjection(state)).toEqual({ loops: [loopB] })
    expect(takeProjectedFold(events, 0)!.fold.usedIds.has('loop_c')).toBe(false)
  })

  it('is there for a log folded from a cache row of a fold that had read nothing', () => {
    const events = [event(createChange(loopA)), event(createChange(loopB))]
    events.reduce(applyLoopProjection, structuredClone(initLoopProjection()))
    expect(activeLoops(takeProjectedFold(events, 0)!.fold)).toEqual([loopA, loopB])
  })

  it('says where to go on when the log grew past what the projection read', () => {
    const { events } = foldedLog(event(createChange(loopA)))
    const grown = [...events, event(deleteChange('loop_a'))]
    expect(takeProjectedFold(grown, 0)!.next).toBe(1)
  })

  it.each([
    ['no fold began at the first event of this log', () => [event(createChange(loopA))]],
    [
      'the fold missed an event',
      () => {
        const first = event(createChange(loopA))
        const missed = event(deleteChange('loop_a'))
        const third = event(createChange(loopB))
        foldedLog(first, third)
        return [first, missed, third, event({ turn: 1 }, 'turn/start')]
      },
    ],
    [
      'the fold met a corrupt record',
      () => foldedLog(event(createChange(loopA)), event(deleteChange('loop_zz')), event(createChange(loopB))).events,
    ],
    [
      'the fold read further than the log it is asked for',
      () => foldedLog(event(createChange(loopA)), event(createChange(loopB))).events.slice(0, 1),
    ],
  ])('is not there when %s: the runtime reads the log itself', (_name, log) => {
    expect(takeProjectedFold(log(), 0)).toBeUndefined()
  })

  it('is not there for a fork whose fold has not read up to the seed boundary', () => {
    const events = [event({ content: [] }, 'user/message'), event(createChange(loopA)), event({}, 'session/end-seed')]
    foldedLog(events[0]!)
    expect(takeProjectedFold(events, 3)).toBeUndefined()
  })

  it('is not there for a fork whose fold holds a change from before the seed boundary', () => {
    const { events } = foldedLog(event(createChange(loopA)), event({}, 'session/end-seed'), event(createChange(loopB)))
    expect(takeProjectedFold(events, 2)).toBeUndefined()
    expect(takeProjectedFold(events, 1)).toBeUndefined()
    expect(takeProjectedFold(events, 0)?.next).toBe(3)
  })
})

describe('in the real projection registry', () => {
  const rig = useFakeHost('ses-proj')
  const projected = (session = rig.fake.agent.session) => projectedIn(rig.host, session)

  it('follows create, dispatch and delete of the session', async () => {
    expect(projected()).toEqual({ loops: [] })
    const id = await rig.create('watch', 1)
    expect(projected()).toEqual({ loops: [{ id, prompt: 'watch', time_in_seconds: 1, next_at: NOW + 1000 }] })
    await advance(1000)
    expect(projected()).toEqual({ loops: [{ id, prompt: 'watch', time_in_seconds: 1, next_at: NOW + 2000 }] })
    await rig.tool('loop_delete', { id })
    expect(projected()).toEqual({ loops: [] })
  })

  it('restores from a cache row as often as the host asks, never changing the row (a failed cache write keeps it)', async () => {
    const registry = rig.host.ctx.sessionProjections
    const session = rig.fake.agent.session
    const gone = await rig.create('gone', 60)
    const rows = registry.checkpoint(session)
    const stored = structuredClone(rows)
    const kept = await rig.create('kept', 60)
    await rig.tool('loop_delete', { id: gone })
    const later = await rig.create('later', 60)
    const floor = registry.restoreFloor(rows)!
    const restore = () =>
      registry.restore(rows, session.events.slice(floor), floor).snapshot.values[LOOP_PROJECTION_KEY]
    const first = restore()
    expect(first).toMatchObject({ loops: [{ id: kept }, { id: later }] })
    expect(restore()).toEqual(first)
    expect(rows).toEqual(stored)
    // What a restore returns is a checkpoint row too, holding the projection's own state; restoring from one cut
    // before the last changes again and again gives the same value.
    const keptAt = session.events.findIndex(
      (logged) => logged.type === 'loop/change' && (logged.data as { loop?: { id: string } }).loop?.id === kept,
    )
    const returned = registry.restore(rows, session.events.slice(floor, keptAt + 1), floor).checkpoint
    expect(returned[LOOP_PROJECTION_KEY]!.seq).toBe(keptAt)
    for (let again = 0; again < 3; again += 1) {
      const restored = registry.restore(returned, session.events.slice(floor), floor)
      expect(restored.snapshot.values[LOOP_PROJECTION_KEY]).toEqual(first)
    }
  })

  it('keeps sessions apart', async () => {
    const other = await createFakeAgent(rig.host, 'ses-proj-other')
    await runTool(rig.host, other.agent, 'loop_create', { prompt: 'theirs', time_in_seconds: 60 })
    expect(projected()).toEqual({ loops: [] })
    expect(projected(other.agent.session)).toMatchObject({ loops: [{ prompt: 'theirs' }] })
  })

  it('does not show a parent loops in a fork, while the fork keeps its own', async () => {
    await rig.command('/loop 1 parent only')
    await settle()
    const child = rig.host.ctx.sessions.fork(rig.fake.agent.session, undefined, SessionId('ses-proj-fork'))
    expect(child.header.seedLength).toBeGreaterThan(0)
    // The fold the runtime takes is found by the log's first event: a fork's seed is a copy, not the parent's events.
    expect(child.events[0]).not.toBe(rig.fake.agent.session.events[0])
    expect(child.events[0]).toEqual(rig.fake.agent.session.events[0])
    expect(projected(child)).toEqual({ loops: [] })
    expect(projected()).toMatchObject({ loops: [{ prompt: 'parent only' }] })
  })

  it('gives an agent on a forked session none of the parent loops', async () => {
    await rig.tool('loop_create', { prompt: 'parent only', time_in_seconds: 1 })
    await settle()
    const seed = rig.fake.agent.session.events
    const forked = await rig.host.ctx.agents.create({
      sessionId: SessionId('ses-proj-fork-agent'),
      meta: { cwd: rig.host.root, parentSession: rig.fake.agent.id, seedLength: seed.length },
      seed,
      agentOptions: AGENT_OPTIONS,
    })
    const listed = await runTool(rig.host, forked.agent, 'loop_list', {})
    expect(listed.isError ? listed.error : listed.value).toEqual([])
    expect(projected(forked.agent.session)).toEqual({ loops: [] })
    const own = await runTool(rig.host, forked.agent, 'loop_create', { prompt: 'fork own', time_in_seconds: 60 })
    expect(own.isError).toBe(false)
    expect(projected(forked.agent.session)).toMatchObject({ loops: [{ prompt: 'fork own' }] })
    expect(loopChanges(forked.agent)).toHaveLength(2)
    await forked.dispose()
  })
})

describe('forks made before the plugin loaded', () => {
  it('still hide the parent loops once the plugin loads (hot reload, late install)', async () => {
    const host = await hosts.boot({ loop: false })
    const parent = await createFakeAgent(host, 'ses-early-parent')
    parent.agent.session.append('loop/change', createChange(loopA))
    const child = host.ctx.sessions.fork(parent.agent.session, undefined, SessionId('ses-early-fork'))
    await host.ctx.plugin(loopPlugin)
    expect(projectedIn(host, child)).toEqual({ loops: [] })
    expect(projectedIn(host, parent.agent.session)).toEqual({ loops: [loopA] })
  })
})

describe('a fork another plugin writes to first', () => {
  it('hides the parent loops even when an earlier session/created listener appends to the fork', async () => {
    const host = await hosts.boot({ loop: false })
    // Another plugin, loaded first, writes to every new session as it is created.
    host.ctx.on(
      'session/created',
      (session) => void (session.append as (type: string, data: object) => unknown)('test/marker', {}),
    )
    await host.ctx.plugin(loopPlugin)
    const parent = await createFakeAgent(host, 'ses-listener-parent')
    await runTool(host, parent.agent, 'loop_create', { prompt: 'parent only', time_in_seconds: 60 })
    await settle()
    const child = host.ctx.sessions.fork(parent.agent.session, undefined, SessionId('ses-listener-fork'))
    expect(child.events.at(-1)?.type).toBe('test/marker')
    expect(projectedIn(host, child)).toEqual({ loops: [] })
    expect(projectedIn(host, parent.agent.session)).toMatchObject({ loops: [{ prompt: 'parent only' }] })
  })
})

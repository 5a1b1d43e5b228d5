import { Session, SessionId, type SessionEvent } from '@deepseek-ai/dsh-session'
import { beforeEach, describe, expect, it } from 'vitest'
import { EMPTY_LOOP_FOLD, createChange, deleteChange, dispatchChange, foldLoopEvents } from '../src/fold.ts'
import {
  applyLoopProjection,
  loopProjectionSchema,
  viewLoopProjection,
  type ProjectedLoops,
} from '../src/projection.ts'
import * as loopPlugin from '../src/index.ts'
import { LOOP_PROJECTION_KEY } from '../src/shared/projection-key.ts'
import type { LoopRecord } from '../src/types.ts'
import {
  advance,
  AGENT_OPTIONS,
  createFakeAgent,
  loopChanges,
  outcomeOf,
  runTool,
  settle,
  useFakeHost,
  useHosts,
  type Host,
} from './support/host.ts'
import { NOW } from './support/epoch.ts'

const hosts = useHosts()

/** The loop projection a host's real registry holds for a session. */
const projectedIn = (host: Host, session: Session) =>
  host.ctx.sessionProjections.snapshot(session).values[LOOP_PROJECTION_KEY]

const loopA: LoopRecord = { id: 'loop_a', prompt: 'A', time_in_seconds: 5, next_at: NOW + 5000 }
let seq = 0
const event = (data: unknown, type = 'loop/change') =>
  ({ type, seq: seq++, time: NOW, data }) as unknown as SessionEvent

/** Deep-freeze a value, so a reducer that changed it in place would throw. */
function frozen<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const field of Object.values(value)) frozen(field)
    Object.freeze(value)
  }
  return value
}

describe('reducer', () => {
  beforeEach(() => {
    seq = 0
  })

  it('starts empty and returns the same state for events it ignores', () => {
    expect(EMPTY_LOOP_FOLD).toEqual({ loops: [], lastIdNumber: 0 })
    expect(applyLoopProjection(EMPTY_LOOP_FOLD, event({ content: [] }, 'user/message'))).toBe(EMPTY_LOOP_FOLD)
  })

  it('reflects create, dispatch and delete, holding only active records, never changing a state it returned', () => {
    const states: ProjectedLoops[] = [EMPTY_LOOP_FOLD]
    for (const change of [createChange(loopA), dispatchChange('loop_a', NOW + 10_000), deleteChange('loop_a')])
      states.push(applyLoopProjection(frozen(states.at(-1)!), event(change)))
    expect(states.map(viewLoopProjection)).toEqual([
      { loops: [] },
      { loops: [loopA] },
      { loops: [{ ...loopA, next_at: NOW + 10_000 }] },
      { loops: [] },
    ])
    expect(new Set(states).size).toBe(4)
  })

  it('is the fold the runtime uses, without its id counter: the same records and diagnostic as folding the log', () => {
    const loopB = { ...loopA, id: 'loop_b' }
    const sound = [event(createChange(loopA)), event({ content: [] }, 'user/message'), event(createChange(loopB))]
    const corrupt = [...sound, event(deleteChange('loop_zz')), event(deleteChange('loop_a'))]
    for (const log of [sound, corrupt]) {
      const { loops, corrupt: diagnostic } = foldLoopEvents(log)
      expect(log.reduce(applyLoopProjection, EMPTY_LOOP_FOLD)).toEqual(
        diagnostic === undefined ? { loops } : { loops, corrupt: diagnostic },
      )
    }
  })

  it("shows no loops from a sub-agent's descriptor on: a delegated session never has its own", () => {
    const inherited = applyLoopProjection(EMPTY_LOOP_FOLD, event(createChange(loopA)))
    expect(applyLoopProjection(inherited, event({ persona: 'general' }, 'subagent/descriptor'))).toEqual({ loops: [] })
  })

  it('normalizes the previous build update records', () => {
    let state = applyLoopProjection(
      EMPTY_LOOP_FOLD,
      event({ version: 1, operation: 'create', loop: { ...loopA, title: 'T', allow_steer: true } }),
    )
    state = applyLoopProjection(
      state,
      event({ version: 1, operation: 'update', loop: { ...loopA, prompt: 'A2', title: 'T2', allow_steer: false } }),
    )
    expect(viewLoopProjection(state)).toEqual({ loops: [{ ...loopA, prompt: 'A2' }] })
  })

  it('fails closed to no loops on a malformed record and stays there', () => {
    const created = applyLoopProjection(EMPTY_LOOP_FOLD, event(createChange(loopA)))
    const corrupt = applyLoopProjection(created, event({ version: 1, operation: 'delete', id: 'loop_zz' }))
    expect(corrupt).toEqual({
      loops: [],
      corrupt: 'corrupt loop/change record: delete targets inactive loop loop_zz',
    })
    expect(applyLoopProjection(corrupt, event(createChange({ ...loopA, id: 'loop_b' })))).toBe(corrupt)
    expect(viewLoopProjection(corrupt)).toEqual({ loops: [] })
  })

  it('folds on from a cache row (a structured clone) as from its own state', () => {
    const row = structuredClone([event(createChange(loopA))].reduce(applyLoopProjection, EMPTY_LOOP_FOLD))
    const state = applyLoopProjection(frozen(row), event(dispatchChange('loop_a', NOW + 9000)))
    expect(viewLoopProjection(state)).toEqual({ loops: [{ ...loopA, next_at: NOW + 9000 }] })
  })

  it('validates its wire value strictly', () => {
    expect(loopProjectionSchema.parse({ loops: [loopA] })).toEqual({ loops: [loopA] })
    expect(() => loopProjectionSchema.parse({ loops: [{ ...loopA, title: 'x' }] })).toThrow()
    expect(() => loopProjectionSchema.parse({ loops: [loopA], countdown: '5s' })).toThrow()
    expect(() => loopProjectionSchema.parse({ loops: [{ ...loopA, time_in_seconds: 0 }] })).toThrow()
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
    // Inherited events are recognised by identity: a fork's seed is a copy, not the parent's events.
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
    expect(outcomeOf(listed)).toEqual([])
    expect(projected(forked.agent.session)).toEqual({ loops: [] })
    const own = await runTool(rig.host, forked.agent, 'loop_create', { prompt: 'fork own', time_in_seconds: 60 })
    expect(own.isError).toBe(false)
    expect(projected(forked.agent.session)).toMatchObject({ loops: [{ prompt: 'fork own' }] })
    // The parent's create, the fork's change naming it as not the fork's own, the fork's create.
    expect(loopChanges(forked.agent).map((change) => change.operation)).toEqual(['create', 'fork', 'create'])
    await forked.dispose()
  })

  it('shows none of the parent loops, live and folded cold from its stored log (DSH web after a restart)', async () => {
    await rig.command('/loop 3600 parent only')
    await settle()
    // As DSH's sub-agent manager seeds a fork child: the parent's prefix, then its descriptor.
    const prefix = rig.fake.agent.session.events
    const staged = Session.create(SessionId('ses-fork-child'), prefix)
    staged.append('subagent/descriptor' as Parameters<Session['append']>[0], { persona: 'general' } as never)
    const child = await rig.host.ctx.agents.create({
      sessionId: SessionId('ses-fork-child'),
      meta: {
        cwd: rig.host.root,
        parentSession: rig.fake.agent.id,
        seedLength: prefix.length,
        origin: 'subagent',
        delegationDepth: 1,
      },
      seed: [...staged.events],
      agentOptions: AGENT_OPTIONS,
    })
    expect(loopChanges(child.agent)).toMatchObject([{ operation: 'create', loop: { prompt: 'parent only' } }])
    expect(projected(child.agent.session)).toEqual({ loops: [] })
    // Read back from disk, the events are new objects: none is known as inherited.
    const cold = rig.host.ctx.sessionProjections.restore({}, structuredClone(child.agent.session.events), 0)
    expect(cold.snapshot.values[LOOP_PROJECTION_KEY]).toEqual({ loops: [] })
    // Its parent's log folded the same way still shows the parent's loop.
    const parentCold = rig.host.ctx.sessionProjections.restore({}, structuredClone(rig.fake.agent.session.events), 0)
    expect(parentCold.snapshot.values[LOOP_PROJECTION_KEY]).toMatchObject({ loops: [{ prompt: 'parent only' }] })
    await child.dispose()
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

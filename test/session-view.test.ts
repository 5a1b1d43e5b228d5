import { afterEach, describe, expect, it } from 'vitest'
import { createUserMessage, MessageId } from '@deepseek-ai/dsh-llm'
import type { SessionEvent } from '@deepseek-ai/dsh-session'
import { createChange, deleteChange, dispatchChange } from '../src/domain.ts'
import { renderHeartbeat } from '../src/shared/heartbeat.ts'
import { SessionView, waitingHeartbeats } from '../src/loop.ts'
import { bootHost, createFakeAgent, type Host } from './support/host.ts'

const LOOP = { id: 'loop_00000001', prompt: 'check CI', time_in_seconds: 60, next_at: 1_000 }

/** A heartbeat message of one loop, exactly as the runtime sends it. */
const heartbeatOf = (loopId: string, id = `msg-${loopId}`) => ({
  ...createUserMessage({
    content: [{ type: 'text', text: renderHeartbeat({ ...LOOP, id: loopId }) }],
    source: { kind: 'plugin', plugin: 'loop' },
  }),
  id: MessageId(id),
})

/** A log built from plain values: each entry's position is its seq. */
function log(...entries: readonly (readonly [string, unknown])[]): SessionEvent[] {
  return entries.map(([type, data], seq) => ({ type, seq, time: 0, data }) as SessionEvent)
}

describe('the session view over plain events', () => {
  const events = log(
    ['loop/change', createChange(LOOP)],
    ['turn/start', { turn: 3 }],
    ['user/message', heartbeatOf('loop_00000001')],
    ['loop/change', dispatchChange('loop_00000001', 61_000)],
  )

  it('reads the log once, then folds only what is appended to it', () => {
    const view = new SessionView(0)
    expect(view.caughtUp).toBe(false)
    view.catchUp(events)
    expect(view.caughtUp).toBe(true)
    expect(view.fold.loops).toEqual({ loop_00000001: { ...LOOP, next_at: 61_000 } })
    expect(view.fold.usedIds).toEqual(new Set(['loop_00000001']))
    view.foldAppended(log(['loop/change', dispatchChange('loop_00000001', 121_000)])[0]!)
    expect(view.fold.loops).toEqual({ loop_00000001: { ...LOOP, next_at: 121_000 } })
    view.foldAppended(log(['loop/change', deleteChange('loop_00000001')])[0]!)
    expect(view.fold.loops).toEqual({})
    expect(() => view.foldAppended(log(['loop/change', deleteChange('loop_00000001')])[0]!)).toThrow(
      'delete targets inactive loop loop_00000001',
    )
  })

  it("takes the open turn's heartbeats from after the last turn boundary, and a turn/end closes it", () => {
    const open = new SessionView(0)
    open.catchUp(events)
    expect([...open.openTurnHeartbeats]).toEqual(['loop_00000001'])
    const closed = new SessionView(0)
    closed.catchUp([...events, ...log(['turn/end', { turn: 3 }]).map((event) => ({ ...event, seq: 4 }))])
    expect([...closed.openTurnHeartbeats]).toEqual([])
  })

  it('keeps a turn by the number its claims name: the same turn adds, a newer one starts over', () => {
    const view = new SessionView(0)
    // A claim noted before the log is read, in the turn the log shows open: kept through the read.
    view.noteClaimed(heartbeatOf('loop_early'), 3)
    view.catchUp(events)
    expect([...view.openTurnHeartbeats]).toEqual(['loop_early', 'loop_00000001'])
    view.noteClaimed(heartbeatOf('loop_b'), 3)
    expect([...view.openTurnHeartbeats]).toEqual(['loop_early', 'loop_00000001', 'loop_b'])
    view.noteClaimed({ role: 'user', content: [{ type: 'text', text: 'a user message opens turn 4' }] }, 4)
    expect([...view.openTurnHeartbeats]).toEqual([])
    view.noteClaimed(heartbeatOf('loop_c'), 4)
    expect([...view.openTurnHeartbeats]).toEqual(['loop_c'])
    // A turn/start without a number (not DSH's): its heartbeats count until the first claim names a turn.
    const unnumbered = new SessionView(0)
    unnumbered.catchUp(log(['turn/start', {}], ['user/message', heartbeatOf('loop_a')]))
    expect([...unnumbered.openTurnHeartbeats]).toEqual(['loop_a'])
    unnumbered.noteClaimed(heartbeatOf('loop_b'), 1)
    expect([...unnumbered.openTurnHeartbeats]).toEqual(['loop_b'])
    // A claim from before the last closed turn is not kept through a read that finds the turn ended.
    const ended = new SessionView(0)
    ended.noteClaimed(heartbeatOf('loop_early'), 3)
    ended.catchUp([...events, ...log(['turn/end', { turn: 3 }]).map((event) => ({ ...event, seq: 4 }))])
    expect([...ended.openTurnHeartbeats]).toEqual([])
  })

  it('starts after a fork seed: the inherited loop changes are not folded', () => {
    const view = new SessionView(1)
    view.catchUp(
      log(
        ['loop/change', createChange(LOOP)],
        ['loop/change', createChange({ ...LOOP, id: 'loop_00000002' })],
        ['loop/change', deleteChange('loop_00000002')],
      ),
    )
    expect(view.fold.loops).toEqual({})
    // Deleting the inherited loop would be corrupt here: it is not this session's.
    const seeded = new SessionView(1)
    expect(() =>
      seeded.catchUp(
        log(['loop/change', createChange(LOOP)], ['turn/start', {}], ['loop/change', deleteChange(LOOP.id)]),
      ),
    ).toThrow(`delete targets inactive loop ${LOOP.id}`)
  })

  it('throws on a corrupt record, is not caught up, and a second read resumes at that record', () => {
    const view = new SessionView(0)
    const corrupt = log(['loop/change', createChange(LOOP)], ['loop/change', { version: 9 }])
    expect(() => view.catchUp(corrupt)).toThrow('corrupt loop/change record: unsupported version 9')
    expect(view.caughtUp).toBe(false)
    expect(view.fold.loops).toEqual({ [LOOP.id]: LOOP })
    // Not from the start again: the create before it is not folded twice (that would be a reuse).
    expect(() => view.catchUp(corrupt)).toThrow('corrupt loop/change record: unsupported version 9')
  })

  it('scans waiting heartbeats by loop, in inbox order, skipping every other message', () => {
    const other = {
      ...createUserMessage({ content: [{ type: 'text', text: 'hello' }], source: { kind: 'user' } }),
      id: MessageId('msg-user'),
    }
    const first = heartbeatOf('loop_a', 'msg-1')
    const second = heartbeatOf('loop_a', 'msg-2')
    const third = heartbeatOf('loop_b', 'msg-3')
    expect(waitingHeartbeats([first, other, third, second])).toEqual(
      new Map([
        ['loop_a', [MessageId('msg-1'), MessageId('msg-2')]],
        ['loop_b', [MessageId('msg-3')]],
      ]),
    )
  })

  it('collects the loops whose heartbeat the open turn claimed, and starts over at a new turn', () => {
    const view = new SessionView(0)
    view.noteClaimed(heartbeatOf('loop_a', 'msg-1'), 1)
    view.noteClaimed({ role: 'user', content: [{ type: 'text', text: 'not a heartbeat' }] }, 1)
    view.noteClaimed(heartbeatOf('loop_b', 'msg-3'), 1)
    expect([...view.openTurnHeartbeats]).toEqual(['loop_a', 'loop_b'])
    view.noteClaimed(heartbeatOf('loop_b', 'msg-4'), 2)
    expect([...view.openTurnHeartbeats]).toEqual(['loop_b'])
  })
})

describe('the session view over a real session', () => {
  let host: Host | undefined
  afterEach(() => host?.ctx.fiber.dispose())

  it('folds a real log by catch-up as the appends fold it', async () => {
    host = await bootHost({ loop: false })
    const fake = await createFakeAgent(host, 'ses-view')
    const session = fake.agent.session
    const appended = new SessionView(0)
    appended.catchUp(session.events)
    appended.foldAppended(session.append('loop/change', createChange(LOOP)))
    appended.foldAppended(session.append('loop/change', dispatchChange(LOOP.id, 61_000)))
    const caught = new SessionView(0)
    caught.catchUp(session.events)
    expect(caught.fold).toEqual(appended.fold)
    expect(caught.fold.loops).toEqual({ [LOOP.id]: { ...LOOP, next_at: 61_000 } })
  })
})

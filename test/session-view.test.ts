import { afterEach, describe, expect, it } from 'vitest'
import { createUserMessage, MessageId } from '@deepseek-ai/dsh-llm'
import type { SessionEvent } from '@deepseek-ai/dsh-session'
import { createChange, deleteChange, dispatchChange } from '../src/domain.ts'
import { renderHeartbeat } from '../src/heartbeat.ts'
import { SessionView, waitingHeartbeats } from '../src/session-view.ts'
import { bootHost, createFakeAgent, type Host } from './support/host.ts'

const LOOP = { id: 'loop_00000001', prompt: 'check CI', time_in_seconds: 60, next_at: 1_000 }

/** A heartbeat message of one loop, exactly as the runtime sends it. */
const heartbeatOf = (loopId: string, id = `msg-${loopId}`) => ({
  ...createUserMessage({ content: [{ type: 'text', text: renderHeartbeat({ ...LOOP, id: loopId }) }], source: { kind: 'plugin', plugin: 'loop' } }),
  id: MessageId(id),
})

/** A log built from plain values: each entry's position is its seq. */
function log(...entries: readonly (readonly [string, unknown])[]): SessionEvent[] {
  return entries.map(([type, data], seq) => ({ type, seq, time: 0, data }) as SessionEvent)
}

describe('the session view over plain events', () => {
  const events = log(
    ['loop/change', createChange(LOOP)],
    ['turn/start', {}],
    ['user/message', heartbeatOf('loop_00000001')],
    ['loop/change', dispatchChange('loop_00000001', 61_000)],
  )

  it('folds the feed in order and ignores an event that is not the next one', () => {
    const view = new SessionView(0)
    expect(view.observe(events[1]!)).toBe(false)
    expect(view.position).toBe(0)
    for (const event of events) expect(view.observe(event)).toBe(true)
    expect(view.position).toBe(4)
    expect(view.fold.loops).toEqual({ loop_00000001: { ...LOOP, next_at: 61_000 } })
    expect([...view.openTurnHeartbeats]).toEqual(['loop_00000001'])
  })

  it('catches up to the same state the feed reaches, and a turn boundary clears the open turn', () => {
    const fed = new SessionView(0)
    for (const event of events) fed.observe(event)
    const caught = new SessionView(0)
    caught.catchUp(events)
    expect(caught.position).toBe(fed.position)
    expect(caught.fold).toEqual(fed.fold)
    expect([...caught.openTurnHeartbeats]).toEqual([...fed.openTurnHeartbeats])
    const ended = [...events, ...log(['turn/end', {}]).map((event) => ({ ...event, seq: 4 }))]
    caught.catchUp(ended)
    expect(caught.position).toBe(5)
    expect([...caught.openTurnHeartbeats]).toEqual([])
  })

  it('starts after a fork seed: the inherited loop changes are not folded', () => {
    const view = new SessionView(1)
    view.catchUp(
      log(['loop/change', createChange(LOOP)], ['loop/change', createChange({ ...LOOP, id: 'loop_00000002' })], ['loop/change', deleteChange('loop_00000002')]),
    )
    expect(view.position).toBe(3)
    expect(view.fold.loops).toEqual({})
    // Deleting the inherited loop would be corrupt here: it is not this session's.
    expect(() => view.catchUp(log(['turn/start', {}], ['turn/start', {}], ['turn/start', {}], ['loop/change', deleteChange(LOOP.id)]))).toThrow(
      `delete targets inactive loop ${LOOP.id}`,
    )
  })

  it('throws on a corrupt record and stays at its position', () => {
    const view = new SessionView(0)
    expect(() => view.catchUp(log(['loop/change', createChange(LOOP)], ['loop/change', { version: 9 }]))).toThrow(
      'corrupt loop/change record: unsupported version 9',
    )
    expect(view.position).toBe(1)
    expect(() => view.observe(log(['loop/change', createChange(LOOP)], ['loop/change', { version: 9 }])[1]!)).toThrow('unsupported version 9')
    expect(view.position).toBe(1)
  })

  it('scans waiting heartbeats by loop, in inbox order, skipping every other message', () => {
    const other = { ...createUserMessage({ content: [{ type: 'text', text: 'hello' }], source: { kind: 'user' } }), id: MessageId('msg-user') }
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

  it('keeps a watched scan current through claims until the batch ends', () => {
    const view = new SessionView(0)
    const first = heartbeatOf('loop_a', 'msg-1')
    const second = heartbeatOf('loop_a', 'msg-2')
    const third = heartbeatOf('loop_b', 'msg-3')
    const waiting = view.watchWaiting([first, second, third])
    view.noteClaimed(first)
    expect(waiting.get('loop_a')).toEqual([MessageId('msg-2')])
    view.noteClaimed(third)
    expect(waiting.has('loop_b')).toBe(false)
    view.noteClaimed({ role: 'user', content: [{ type: 'text', text: 'not a heartbeat' }] })
    expect([...view.openTurnHeartbeats]).toEqual(['loop_a', 'loop_b'])
    view.unwatchWaiting()
    view.noteClaimed(second)
    expect(waiting.get('loop_a')).toEqual([MessageId('msg-2')])
  })
})

describe('the session view over a real session', () => {
  let host: Host | undefined
  afterEach(() => host?.ctx.fiber.dispose())

  it('folds a real log by feed and by catch-up alike', async () => {
    host = await bootHost({ loop: false })
    const fake = await createFakeAgent(host, 'ses-view')
    const session = fake.agent.session
    const fed = new SessionView(0)
    const stop = host.ctx.on('session/event', (from, event) => {
      if (from === session) fed.observe(event)
    })
    session.append('loop/change', createChange(LOOP))
    session.append('loop/change', dispatchChange(LOOP.id, 61_000))
    stop()
    const caught = new SessionView(0)
    caught.catchUp(session.events)
    expect(fed.position).toBe(session.seq)
    expect(caught.position).toBe(session.seq)
    expect(caught.fold).toEqual(fed.fold)
    expect(caught.fold.loops).toEqual({ [LOOP.id]: { ...LOOP, next_at: 61_000 } })
  })
})

/**
 * The heartbeat inbox (src/heartbeat-inbox.ts) over a stub agent and plain events: which loops the
 * open turn already took, read from the log and from the claims noted since.
 */
import type { Agent } from '@deepseek-ai/dsh-agent'
import type { SessionEvent } from '@deepseek-ai/dsh-session'
import { describe, expect, it, vi } from 'vitest'
import { createChange, dispatchChange } from '../src/fold.ts'
import { realClock } from '../src/clock.ts'
import { HeartbeatInbox } from '../src/heartbeat-inbox.ts'
import { NOW } from './support/epoch.ts'
import { heartbeatMessage } from './support/loop-fixtures.ts'

const LOOP = { id: 'loop_00000001', prompt: 'check CI', time_in_seconds: 60, next_at: NOW + 1000 }

/** A log built from plain values: each entry's position is its seq. */
function plainLog(...entries: readonly (readonly [string, unknown])[]): SessionEvent[] {
  return entries.map(([type, data], seq) => ({ type, seq, time: 0, data }) as SessionEvent)
}

describe('the open turn, read from plain events', () => {
  const events = plainLog(
    ['loop/change', createChange(LOOP)],
    ['turn/start', { turn: 3 }],
    ['user/message', heartbeatMessage('loop_00000001')],
    ['loop/change', dispatchChange('loop_00000001', NOW + 61_000)],
  )
  const closedEvents = [...events, ...plainLog(['turn/end', { turn: 3 }]).map((event) => ({ ...event, seq: 4 }))]

  /**
   * A heartbeat inbox over a stub running agent with an empty inbox, and which of some loops the open turn took:
   * those whose occurrence it would coalesce, sending nothing (every other goes `next-step`).
   */
  function stubInbox() {
    const send = vi.fn()
    const agent = { id: 'ses-plain', status: 'running', inbox: { nextStep: [], nextTurn: [] }, send }
    const inbox = new HeartbeatInbox(agent as unknown as Agent, { info: vi.fn() }, realClock)
    const taken = (...ids: string[]) =>
      ids.filter((id) => {
        send.mockClear()
        expect(inbox.deliver({ ...LOOP, id })).toBeUndefined()
        if (send.mock.calls.length === 0) return true
        expect(send.mock.calls[0]![1]).toBe('next-step')
        return false
      })
    return { inbox, taken }
  }

  it("takes the open turn's heartbeats from after the last turn boundary, and a turn/end closes it", () => {
    const open = stubInbox()
    open.inbox.readOpenTurn(events, 0)
    expect(open.taken('loop_00000001', 'loop_b')).toEqual(['loop_00000001'])
    const closed = stubInbox()
    closed.inbox.readOpenTurn(closedEvents, 0)
    expect(closed.taken('loop_00000001')).toEqual([])
    // A fork's inherited turn is not this session's: read from the seed boundary, nothing of it counts.
    const forked = stubInbox()
    forked.inbox.readOpenTurn(events, 4)
    expect(forked.taken('loop_00000001')).toEqual([])
  })

  it('keeps a turn by the number its claims name: the same turn adds, a newer one starts over', () => {
    const { inbox, taken } = stubInbox()
    // A claim noted before the log is read, in the turn the log shows open: kept through the read.
    inbox.noteClaimed(heartbeatMessage('loop_early'), 3)
    inbox.readOpenTurn(events, 0)
    expect(taken('loop_early', 'loop_00000001', 'loop_b')).toEqual(['loop_early', 'loop_00000001'])
    inbox.noteClaimed(heartbeatMessage('loop_b'), 3)
    expect(taken('loop_early', 'loop_00000001', 'loop_b')).toEqual(['loop_early', 'loop_00000001', 'loop_b'])
    inbox.noteClaimed({ role: 'user', content: [{ type: 'text', text: 'a user message opens turn 4' }] }, 4)
    expect(taken('loop_early', 'loop_00000001', 'loop_b')).toEqual([])
    inbox.noteClaimed(heartbeatMessage('loop_c'), 4)
    expect(taken('loop_b', 'loop_c')).toEqual(['loop_c'])
    // A turn/start without a number (not DSH's): its heartbeats count until the first claim names a turn.
    const unnumbered = stubInbox()
    unnumbered.inbox.readOpenTurn(plainLog(['turn/start', {}], ['user/message', heartbeatMessage('loop_a')]), 0)
    expect(unnumbered.taken('loop_a', 'loop_b')).toEqual(['loop_a'])
    unnumbered.inbox.noteClaimed(heartbeatMessage('loop_b'), 1)
    expect(unnumbered.taken('loop_a', 'loop_b')).toEqual(['loop_b'])
    // A claim from before the last closed turn is not kept through a read that finds the turn ended.
    const ended = stubInbox()
    ended.inbox.noteClaimed(heartbeatMessage('loop_early'), 3)
    ended.inbox.readOpenTurn(closedEvents, 0)
    expect(ended.taken('loop_early')).toEqual([])
  })
})

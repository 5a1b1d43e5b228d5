/**
 * The delivery rules (src/delivery.ts) over plain values: how a due occurrence is delivered, a
 * loop's waiting heartbeats, the loops a step enters with, and the claimed heartbeats a step keeps.
 */
import { describe, expect, it } from 'vitest'
import type { PreStepDecision } from '@deepseek-ai/dsh-agent'
import { freezeMessage, MessageId, type UserMessage } from '@deepseek-ai/dsh-llm'
import {
  admitByLog,
  admitClaimedHeartbeats,
  chooseDelivery,
  heartbeatLoopIds,
  waitingHeartbeats,
  type DeliveryFacts,
} from '../src/delivery.ts'
import { createChange, deleteChange } from '../src/fold.ts'
import { renderHeartbeat } from '../src/shared/heartbeat.ts'
import type { LoopRecord } from '../src/types.ts'
import { NOW } from './support/epoch.ts'
import { heartbeatMessage } from './support/loop-fixtures.ts'

/** An active loop with this id. */
const record = (id: string): LoopRecord => ({ id, prompt: `check ${id}`, time_in_seconds: 60, next_at: NOW })

/** A message that is not a heartbeat. */
const text = (id: string, body: string, plugin?: string): UserMessage =>
  freezeMessage({
    id: MessageId(id),
    role: 'user',
    content: [{ type: 'text', text: body }],
    source: plugin === undefined ? { kind: 'user' } : { kind: 'plugin', plugin },
  })

const user = text('msg-user', 'hello')

describe('waiting heartbeats', () => {
  it('groups heartbeats by loop, in inbox order, skipping every other message', () => {
    const first = heartbeatMessage('loop_a', { id: 'msg-1' })
    const second = heartbeatMessage('loop_a', { id: 'msg-2' })
    const third = heartbeatMessage('loop_b', { id: 'msg-3' })
    // The text of a heartbeat, sent by the user or another plugin, is not one.
    const copied = text('msg-copy', renderHeartbeat(record('loop_c')))
    const foreign = text('msg-goal', renderHeartbeat(record('loop_c')), 'goal')
    const waiting = waitingHeartbeats([first, user, third, copied, second, foreign])
    expect([...waiting]).toEqual([
      ['loop_a', [MessageId('msg-1'), MessageId('msg-2')]],
      ['loop_b', [MessageId('msg-3')]],
    ])
  })

  it('is empty for an empty inbox or one without heartbeats', () => {
    expect(waitingHeartbeats([])).toEqual(new Map())
    expect(waitingHeartbeats([user, text('msg-2', 'hi')]).size).toBe(0)
  })

  it('reads any iterable once, in order', () => {
    function* inbox() {
      yield heartbeatMessage('loop_b', { id: 'msg-b' })
      yield heartbeatMessage('loop_a', { id: 'msg-a' })
    }
    expect([...waitingHeartbeats(inbox())]).toEqual([
      ['loop_b', [MessageId('msg-b')]],
      ['loop_a', [MessageId('msg-a')]],
    ])
  })
})

describe("a step's heartbeats", () => {
  it('names the loops whose heartbeats a step enters with, once each, and nothing for other input', () => {
    const copied = text('msg-copy', renderHeartbeat(record('loop_c')))
    const input = [heartbeatMessage('loop_b', { id: 'msg-b' }), user, heartbeatMessage('loop_a', { id: 'msg-a' })]
    expect([...heartbeatLoopIds([...input, heartbeatMessage('loop_b', { id: 'msg-b2' }), copied])]).toEqual([
      'loop_b',
      'loop_a',
    ])
    expect(heartbeatLoopIds([user, copied, 'not a message', undefined]).size).toBe(0)
  })
})

describe('admitting a step', () => {
  const live = heartbeatMessage('loop_live')
  const gone = heartbeatMessage('loop_gone')
  const active = [record('loop_live')]
  const enter = (...messages: UserMessage[]): PreStepDecision => Object.freeze({ kind: 'enter', messages })

  it('keeps the decision itself when nothing is dropped', () => {
    const kept = enter(user, live)
    expect(admitClaimedHeartbeats([user, live], kept, active)).toBe(kept)
    const plain = enter(user)
    expect(admitClaimedHeartbeats([user], plain, [])).toBe(plain)
    const empty = enter()
    expect(admitClaimedHeartbeats([], empty, active)).toBe(empty)
  })

  it('passes a rejection as it is', () => {
    const rejected: PreStepDecision = { kind: 'reject' }
    expect(admitClaimedHeartbeats([gone], rejected, active)).toBe(rejected)
  })

  it('drops only heartbeats of loops that are not active, the rest in order', () => {
    const decision = enter(gone, user, live)
    expect(admitClaimedHeartbeats([gone, user, live], decision, active)).toStrictEqual({
      kind: 'enter',
      messages: [user, live],
    })
    // A copy: the decision it was given is as it was.
    expect(decision).toStrictEqual({ kind: 'enter', messages: [gone, user, live] })
  })

  it('drops every heartbeat when no loop is active', () => {
    expect(admitClaimedHeartbeats([live, user], enter(live, user), [])).toStrictEqual({
      kind: 'enter',
      messages: [user],
    })
  })

  it('gives the step no input at all when every claimed message was such a heartbeat, what hooks added included', () => {
    const snapshot = text('msg-context', 'Current runtime context.', 'runtime-context')
    expect(admitClaimedHeartbeats([gone], enter(gone, snapshot), active)).toStrictEqual({
      kind: 'enter',
      messages: [],
    })
    const other = heartbeatMessage('loop_other')
    expect(admitClaimedHeartbeats([gone, other], enter(gone, other, snapshot), active)).toStrictEqual({
      kind: 'enter',
      messages: [],
    })
  })

  it('decides on the claimed batch, not the messages a hook edited', () => {
    // A hook merged two claimed heartbeats of deleted loops into one: still nothing to run.
    const merged = heartbeatMessage('loop_gone', { id: 'msg-merged' })
    expect(
      admitClaimedHeartbeats(
        [gone, heartbeatMessage('loop_old')],
        enter(merged, text('msg-note', 'note', 'memory')),
        active,
      ),
    ).toStrictEqual({ kind: 'enter', messages: [] })
    // A hook replaced the claimed user message with an edited copy: the step runs with it.
    const edited = text('msg-user', 'hello, edited')
    expect(admitClaimedHeartbeats([gone, user], enter(gone, edited), active)).toStrictEqual({
      kind: 'enter',
      messages: [edited],
    })
    // A hook replaced the claimed heartbeat with a user message: nothing to drop, the decision stands.
    const replaced = enter(edited)
    expect(admitClaimedHeartbeats([gone], replaced, active)).toBe(replaced)
  })

  it('runs a step that claimed nothing (after tool calls) without a heartbeat a hook added for a deleted loop', () => {
    expect(admitClaimedHeartbeats([], enter(gone, user), active)).toStrictEqual({ kind: 'enter', messages: [user] })
    // Even when that heartbeat was all the step had.
    expect(admitClaimedHeartbeats([], enter(gone), active)).toStrictEqual({ kind: 'enter', messages: [] })
  })

  it('keeps every other claimed value as it is, messages or not', () => {
    expect(admitClaimedHeartbeats([null, 'x', gone], enter(gone, user), active)).toStrictEqual({
      kind: 'enter',
      messages: [user],
    })
  })

  it('admits by the log when the plugin reloaded while the hooks ran: its own loops after the seed, a corrupt log as it is', () => {
    const change = (data: unknown) => ({ type: 'loop/change', data })
    const log = [change(createChange(record('loop_gone'))), change(createChange(record('loop_live')))]
    const deleted = [...log, change(deleteChange('loop_gone'))]
    expect(admitByLog([gone, live], enter(gone, live), deleted, 0)).toStrictEqual({ kind: 'enter', messages: [live] })
    const kept = enter(gone, live)
    expect(admitByLog([gone, live], kept, log, 0)).toBe(kept)
    // A fork's seed is its parent's: a loop created there is not this session's.
    expect(admitByLog([gone, live], enter(gone, live), log, 1)).toStrictEqual({ kind: 'enter', messages: [live] })
    const corrupt = [change(deleteChange('loop_ghost'))]
    expect(admitByLog([gone], kept, corrupt, 0)).toBe(kept)
    // A step without a heartbeat, or one rejected, passes as it is: the log is not even read.
    const unreadable = new Proxy([], { get: () => expect.fail('the log was read') }) as never
    const plain = enter(user)
    expect(admitByLog([user], plain, unreadable, 0)).toBe(plain)
    const rejected = { kind: 'reject' as const }
    expect(admitByLog([gone], rejected, unreadable, 0)).toBe(rejected)
  })
})

describe('delivery rule', () => {
  it.each<[string, DeliveryFacts, ReturnType<typeof chooseDelivery>]>([
    ['idle', { running: false, waiting: false, inOpenTurn: false }, { kind: 'send', target: 'next-turn' }],
    [
      'idle, one already in the last turn',
      { running: false, waiting: false, inOpenTurn: true },
      { kind: 'send', target: 'next-turn' },
    ],
    [
      'running, not yet in this turn',
      { running: true, waiting: false, inOpenTurn: false },
      { kind: 'send', target: 'next-step' },
    ],
    // Nothing queued for the next turn either: after this turn the agent goes idle, for DSH's own idle-time work.
    ['running, already in this turn', { running: true, waiting: false, inOpenTurn: true }, { kind: 'coalesce' }],
    [
      'a heartbeat left waiting in an idle inbox',
      { running: false, waiting: true, inOpenTurn: false },
      { kind: 'replace', target: 'next-turn' },
    ],
    [
      'a heartbeat left waiting in an idle inbox, one in the last turn',
      { running: false, waiting: true, inOpenTurn: true },
      { kind: 'replace', target: 'next-turn' },
    ],
    [
      'a heartbeat still waiting (running, not in this turn)',
      { running: true, waiting: true, inOpenTurn: false },
      { kind: 'coalesce' },
    ],
    ['a heartbeat still waiting (running)', { running: true, waiting: true, inOpenTurn: true }, { kind: 'coalesce' }],
  ])('%s', (_name, facts, expected) => {
    expect(chooseDelivery(facts)).toStrictEqual(expected)
  })
})

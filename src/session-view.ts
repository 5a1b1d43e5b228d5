/**
 * The incremental view of one session: its loops folded from the log, the
 * position folded so far, the loops whose heartbeat the open turn already took,
 * and the heartbeats waiting in the inbox. Host-free: it folds the events and
 * messages it is given with the same pure functions the tests call.
 * @module dsh-plugin-loop/session-view
 */
import type { MessageId } from '@deepseek-ai/dsh-llm'
import type { SessionEvent } from '@deepseek-ai/dsh-session'
import { LOOP_CHANGE_EVENT, applyLoopChange, decodeLoopChange, emptyLoopFold, type TrackedLoopFold } from './domain.ts'
import { readHeartbeat } from './heartbeat.ts'

/** Events that open or close a turn: the open turn's heartbeats are those after the last of them. */
const TURN_BOUNDARIES: ReadonlySet<string> = new Set(['turn/start', 'turn/end'])

/** An inbox message as the view reads it: a heartbeat or anything else, with its id. */
export interface InboxMessage {
  /** The message id the inbox removes it by. */
  readonly id: MessageId
}

/**
 * Each loop's heartbeats among `messages`, by message id, in inbox order.
 * @param messages - the inbox's waiting messages.
 * @returns loop id → the ids of its waiting heartbeats; loops without one are absent.
 */
export function waitingHeartbeats(messages: Iterable<InboxMessage>): Map<string, MessageId[]> {
  const waiting = new Map<string, MessageId[]>()
  for (const message of messages) {
    const heartbeat = readHeartbeat(message)
    if (heartbeat === undefined) continue
    const ids = waiting.get(heartbeat.loopId)
    if (ids === undefined) waiting.set(heartbeat.loopId, [message.id])
    else ids.push(message.id)
  }
  return waiting
}

/**
 * One session's loops, open turn and (during a batch) waiting heartbeats, kept
 * current event by event. A corrupt record throws out of the call that folds it
 * and leaves the position at that record.
 */
export class SessionView {
  /** The loops folded so far. */
  readonly fold: TrackedLoopFold = emptyLoopFold()
  private next: number
  /** Loops whose heartbeat is a user message of the open turn (cleared at every turn boundary). */
  private readonly openTurn = new Set<string>()
  /** While a batch runs: each loop's heartbeats still waiting in the inbox. */
  private watched: Map<string, MessageId[]> | undefined

  /**
   * @param from - the first position to fold: events before it (a fork's inherited seed) are not this session's.
   */
  constructor(from: number) {
    this.next = from
  }

  /** Log position folded so far: every event before it has been folded. */
  get position(): number {
    return this.next
  }

  /** The loops whose heartbeat the open turn already took. */
  get openTurnHeartbeats(): ReadonlySet<string> {
    return this.openTurn
  }

  /**
   * Fold one event if it is the next one; an out-of-order event is left to {@link catchUp}.
   * @param event - the event exactly as recorded.
   * @returns whether it was folded.
   */
  observe(event: SessionEvent): boolean {
    if (event.seq !== this.next) return false
    switch (event.type) {
      case LOOP_CHANGE_EVENT:
        applyLoopChange(this.fold, decodeLoopChange(event.data))
        break
      case 'turn/start':
      case 'turn/end':
        this.openTurn.clear()
        break
      default:
        this.noteHeartbeat(event)
    }
    this.next = event.seq + 1
    return true
  }

  /**
   * Fold the rest of the log in two passes, as cheap as a resumed log of a
   * million events allows: every loop change forward, then only the events
   * after the last turn boundary for the open turn's heartbeats. Indexing, not
   * slicing, so the log is never copied.
   * @param events - the whole log (its index is its position).
   */
  catchUp(events: readonly SessionEvent[]): void {
    const from = this.next
    for (let index = from; index < events.length; index += 1) {
      const event = events[index]!
      if (event.type === LOOP_CHANGE_EVENT) applyLoopChange(this.fold, decodeLoopChange(event.data))
      this.next = index + 1
    }
    let openTurnFrom = from
    for (let index = events.length - 1; index >= from; index -= 1) {
      if (!TURN_BOUNDARIES.has(events[index]!.type)) continue
      this.openTurn.clear()
      openTurnFrom = index + 1
      break
    }
    for (let index = openTurnFrom; index < events.length; index += 1) this.noteHeartbeat(events[index]!)
  }

  /**
   * Count a heartbeat the agent took out of its inbox for the open turn, before
   * DSH logs it as the step's user message; it no longer waits.
   * @param message - the claimed message, untrusted.
   */
  noteClaimed(message: unknown): void {
    const heartbeat = readHeartbeat(message)
    if (heartbeat === undefined) return
    this.openTurn.add(heartbeat.loopId)
    // A batch's own wake-up can claim a heartbeat it still counts as waiting.
    const ids = this.watched?.get(heartbeat.loopId)
    if (ids === undefined) return
    const rest = ids.filter((id) => id !== (message as InboxMessage).id)
    if (rest.length === 0) this.watched!.delete(heartbeat.loopId)
    else this.watched!.set(heartbeat.loopId, rest)
  }

  /**
   * Scan the inbox once for a batch and keep the result current through claims until {@link unwatchWaiting}.
   * @param messages - the inbox's waiting messages.
   * @returns loop id → its waiting heartbeats' ids.
   */
  watchWaiting(messages: Iterable<InboxMessage>): ReadonlyMap<string, readonly MessageId[]> {
    this.watched = waitingHeartbeats(messages)
    return this.watched
  }

  /** End the batch {@link watchWaiting} began. */
  unwatchWaiting(): void {
    this.watched = undefined
  }

  /** Remember a heartbeat the open turn took. */
  private noteHeartbeat(event: SessionEvent): void {
    if (event.type === 'user/message') this.noteClaimed(event.data)
  }
}

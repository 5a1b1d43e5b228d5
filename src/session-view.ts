/**
 * The incremental view of one session: its loops folded from the log and from
 * the changes the runtime appends, the loops whose heartbeat the open turn
 * already took, and the heartbeats waiting in the inbox. Host-free: it folds the
 * events and messages it is given with the same pure functions the tests call.
 * @module dsh-plugin-loop/session-view
 */
import type { MessageId } from '@deepseek-ai/dsh-llm'
import type { SessionEvent } from '@deepseek-ai/dsh-session'
import { LOOP_CHANGE_EVENT, applyLoopChange, decodeLoopChange, emptyLoopFold, type TrackedLoopFold } from './domain.ts'
import { readHeartbeat } from './heartbeat.ts'

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
 * One session's loops, open turn and (during a batch) waiting heartbeats. The
 * log is read once, when the runtime first needs it ({@link catchUp}); after
 * that the view is kept current without following the log: the runtime is the
 * only writer of `loop/change` in its session and folds each change it appends
 * ({@link foldAppended}), and the open turn comes from the agent's claims, which
 * name their turn. A corrupt record throws out of the call that folds it and
 * leaves the view at that record.
 */
export class SessionView {
  /** The loops folded so far. */
  readonly fold: TrackedLoopFold = emptyLoopFold()
  private next: number
  private read = false
  /** The turn {@link openTurn} belongs to; undefined when no turn is known to be open. */
  private turn: number | undefined
  /** Loops whose heartbeat is a user message of {@link turn}. */
  private readonly openTurn = new Set<string>()
  /** While a batch runs: each loop's heartbeats still waiting in the inbox. */
  private watched: Map<string, MessageId[]> | undefined

  /**
   * @param from - the first position to fold: events before it (a fork's inherited seed) are not this session's.
   */
  constructor(from: number) {
    this.next = from
  }

  /** Whether the log has been read: from then on, only appended changes are folded. */
  get caughtUp(): boolean {
    return this.read
  }

  /** The loops whose heartbeat the open turn already took. */
  get openTurnHeartbeats(): ReadonlySet<string> {
    return this.openTurn
  }

  /**
   * Read the log once, in two passes, as cheap as a resumed log of a million
   * events allows: every loop change forward, then only the events after the
   * last turn boundary for the open turn's heartbeats. Indexing, not slicing,
   * so the log is never copied. A corrupt record throws and the next call
   * resumes at it.
   * @param events - the whole log (its index is its position).
   */
  catchUp(events: readonly SessionEvent[]): void {
    const from = this.next
    for (let index = from; index < events.length; index += 1) {
      const event = events[index]!
      if (event.type === LOOP_CHANGE_EVENT) applyLoopChange(this.fold, decodeLoopChange(event.data))
      this.next = index + 1
    }
    this.read = true
    let openTurnFrom = from
    for (let index = events.length - 1; index >= from; index -= 1) {
      const event = events[index]!
      if (event.type === 'turn/end') this.enterTurn(undefined)
      else if (event.type === 'turn/start') this.enterTurn(turnOf(event))
      else continue
      openTurnFrom = index + 1
      break
    }
    for (let index = openTurnFrom; index < events.length; index += 1) {
      const event = events[index]!
      if (event.type === 'user/message') this.noteHeartbeat(event.data)
    }
  }

  /**
   * Fold a `loop/change` this runtime just appended (the log's only writer of them).
   * @param event - the event exactly as recorded.
   */
  foldAppended(event: SessionEvent): void {
    applyLoopChange(this.fold, decodeLoopChange(event.data))
  }

  /**
   * Count a heartbeat the agent took out of its inbox for a turn, before DSH
   * logs it as the step's user message; it no longer waits. A claim for a newer
   * turn than the one the view knows begins that turn's set.
   * @param message - the claimed message, untrusted.
   * @param turn - the turn that claimed it.
   */
  noteClaimed(message: unknown, turn: number): void {
    if (turn !== this.turn) this.enterTurn(turn)
    const heartbeat = this.noteHeartbeat(message)
    if (heartbeat === undefined) return
    // A batch's own wake-up can claim a heartbeat it still counts as waiting.
    const ids = this.watched?.get(heartbeat)
    if (ids === undefined) return
    const rest = ids.filter((id) => id !== (message as InboxMessage).id)
    if (rest.length === 0) this.watched!.delete(heartbeat)
    else this.watched!.set(heartbeat, rest)
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

  /** Begin a turn's set (undefined: no turn open); the same turn keeps what it has. */
  private enterTurn(turn: number | undefined): void {
    if (turn !== undefined && turn === this.turn) return
    this.turn = turn
    this.openTurn.clear()
  }

  /** Remember a heartbeat the open turn took; returns its loop id, if it is one. */
  private noteHeartbeat(message: unknown): string | undefined {
    const heartbeat = readHeartbeat(message)
    if (heartbeat !== undefined) this.openTurn.add(heartbeat.loopId)
    return heartbeat?.loopId
  }
}

/** The turn number a `turn/start` names (DSH's claims name the same numbers); undefined if it names none. */
function turnOf(event: SessionEvent): number | undefined {
  const data = event.data as { readonly turn?: unknown }
  return typeof data.turn === 'number' ? data.turn : undefined
}

/**
 * The per-agent runtime of §7: the incremental fold the drive reads, one
 * bounded one-shot timer on an injected clock, serialized coalesced drives of
 * one due loop each, the transaction queue the tools share, and heartbeat
 * delivery with its retry. The pure event decoding and fold are `domain.ts`.
 * @module dsh-plugin-loop/loop
 */
import type { Context } from '@deepseek-ai/cordis'
import type { Agent, PreStepDecision } from '@deepseek-ai/dsh-agent'
import { createUserMessage, type MessageId } from '@deepseek-ai/dsh-llm'
import type { SessionEvent } from '@deepseek-ai/dsh-session'
import {
  LOOP_CHANGE_EVENT,
  activeLoops,
  applyStoredChange,
  dispatchChange,
  emptyLoopFold,
  type LoopTable,
  type TrackedLoopFold,
} from './domain.ts'
import { LoopError } from './errors.ts'
import { HEARTBEAT_SOURCE, readHeartbeat, renderHeartbeat } from './shared/heartbeat.ts'
import { describeError } from './shared/format.ts'
import { flushSession } from './persistence.ts'
import { takeProjectedFold } from './projection.ts'
import { createReport, type LoopReport } from './report.ts'
import {
  earliestDueLoop,
  earliestNextAt,
  firstClockSkewedLoop,
  nextOccurrence,
  rescheduledNextAt,
} from './shared/timing.ts'
import type { LoopChange, LoopRecord } from './types.ts'

/** An armed timer (§6: the handle Node's `setTimeout` returns); only {@link LoopClock.clearTimer} reads it. */
export type TimerHandle = ReturnType<typeof setTimeout>

/**
 * Wall-clock time and one-shot timers: the one place the runtime, the tools and
 * the command read the time and arm timers, so a test can drive them with a
 * manual clock instead of patching globals.
 */
export interface LoopClock {
  /** Epoch milliseconds now. */
  now(): number
  /** Run `fn` once after `ms` milliseconds; returns the handle to cancel it. */
  setTimer(fn: () => void, ms: number): TimerHandle
  /** Cancel a timer armed by {@link setTimer}; a fired or cancelled one is ignored. */
  clearTimer(handle: TimerHandle): void
}

/**
 * The process clock. Globals are read at every call, not captured, so tests that
 * fake `Date` and `setTimeout` (vitest fake timers) still steer it; a real
 * `setTimeout` keeps the caller's async context (who started a drive).
 */
export const realClock: LoopClock = {
  now: () => Date.now(),
  setTimer: (fn, ms) => setTimeout(fn, ms),
  clearTimer: (handle) => clearTimeout(handle),
}

/**
 * Longest single timer wait. Node's timers do not count time the machine is
 * suspended, and the wall clock can move under them, so every wait re-reads
 * the clock at least this often: an overdue loop fires within a minute of waking.
 * Far below Node's 2,147,483,647 ms limit (§7.1), so no arm overflows.
 */
export const MAX_TIMER_WAIT_MS = 60_000

/** First retry delay after a failed drive (flush, send); doubles up to {@link MAX_RETRY_DELAY_MS}. */
export const FIRST_RETRY_DELAY_MS = 1_000

/** Cap of the retry backoff. */
export const MAX_RETRY_DELAY_MS = 60_000

/** What one tool operation decides over the current fold. */
export interface LoopTransaction<T> {
  /** What the tool returns once the change (if any) is durable. */
  readonly result: T
  /** At most one durable change to append. */
  readonly change?: LoopChange
}

/** How a runtime behaves in its host. */
export interface LoopRuntimeOptions {
  /**
   * A one-shot host (`dsh --profile headless "task"`) exits when the task's turn
   * ends: loops are saved there but never dispatched, so they cannot keep the
   * run alive or answer in place of the task.
   */
  readonly oneShot: boolean
  /** Time and timers; the process clock unless a test drives its own. */
  readonly clock?: LoopClock | undefined
}

/** What the session itself says about one loop's heartbeats at the instant it is due. */
export interface DeliveryFacts {
  /** Whether the agent is running (a turn or a step is in progress). */
  readonly running: boolean
  /** Whether a heartbeat of this loop is still waiting, unconsumed, in the agent's inbox. */
  readonly waiting: boolean
  /** Whether a heartbeat of this loop is already a user message of the open turn. */
  readonly inOpenTurn: boolean
}

/** How one due occurrence is handled. */
export type Delivery =
  | { readonly kind: 'send'; readonly target: 'next-step' | 'next-turn' }
  | { readonly kind: 'replace'; readonly target: 'next-turn' }
  | { readonly kind: 'coalesce' }

/**
 * The delivery rule. At most one undelivered heartbeat per loop: while one waits
 * for a running agent, the occurrence only advances the schedule. A heartbeat left
 * waiting in an idle agent's inbox (a Stop that kept the inbox, a turn that ended
 * in an error, a crash) has nothing to deliver it, so it is replaced by a fresh
 * one that wakes the agent. At most one heartbeat per loop per turn: a loop the
 * open turn already took waits for the next turn, so every turn ends. Otherwise
 * adaptive: the next step while running, a new turn while idle.
 * @param facts - inbox and turn facts derived from the session for the due loop.
 * @returns send (with its inbox target), replace the stale waiting heartbeat, or coalesce.
 */
export function chooseDelivery(facts: DeliveryFacts): Delivery {
  if (facts.waiting) return facts.running ? { kind: 'coalesce' } : { kind: 'replace', target: 'next-turn' }
  if (!facts.running || facts.inOpenTurn) return { kind: 'send', target: 'next-turn' }
  return { kind: 'send', target: 'next-step' }
}

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
 * One session's loops and the loops whose heartbeat its open turn took. The
 * log is read once, when the runtime first needs it ({@link catchUp}); after
 * that the view is kept current without following the log: the runtime is the
 * only writer of `loop/change` in its session and folds each change it appends
 * ({@link foldAppended}), and the open turn comes from the agent's claims, which
 * name their turn. A corrupt record throws out of the call that folds it and
 * leaves the view at that record.
 */
export class SessionView {
  private state: TrackedLoopFold = emptyLoopFold()
  private next: number
  private read = false
  /** The turn {@link openTurn} belongs to; undefined when no turn is known to be open. */
  private turn: number | undefined
  /** Loops whose heartbeat is a user message of {@link turn}. */
  private readonly openTurn = new Set<string>()

  /**
   * @param from - the first position to fold: events before it (a fork's inherited seed) are not this session's.
   */
  constructor(from: number) {
    this.next = from
  }

  /** The loops folded so far. */
  get fold(): TrackedLoopFold {
    return this.state
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
   * events allows: every loop change forward (from `start` when the projection
   * has already folded a prefix), then only the events after the last turn
   * boundary for the open turn's heartbeats. Indexing, not slicing, so the log
   * is never copied. A corrupt record throws and the next call resumes at it.
   * @param events - the whole log (its index is its position).
   * @param start - a fold of the log's own events before `start.next`, taken before anything was folded here.
   */
  catchUp(events: readonly SessionEvent[], start?: { readonly fold: TrackedLoopFold; readonly next: number }): void {
    const from = this.next
    if (start !== undefined) {
      this.state = start.fold
      this.next = start.next
    }
    for (let index = this.next; index < events.length; index += 1) {
      const event = events[index]!
      if (event.type === LOOP_CHANGE_EVENT) applyStoredChange(this.state, event.data)
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
    applyStoredChange(this.state, event.data)
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
    this.noteHeartbeat(message)
  }

  /** Begin a turn's set (undefined: no turn open); the same turn keeps what it has. */
  private enterTurn(turn: number | undefined): void {
    if (turn !== undefined && turn === this.turn) return
    this.turn = turn
    this.openTurn.clear()
  }

  /** Remember a heartbeat the open turn took. */
  private noteHeartbeat(message: unknown): void {
    const heartbeat = readHeartbeat(message)
    if (heartbeat !== undefined) this.openTurn.add(heartbeat.loopId)
  }
}

/** The turn number a `turn/start` names (DSH's claims name the same numbers); undefined if it names none. */
function turnOf(event: SessionEvent): number | undefined {
  const data = event.data as { readonly turn?: unknown }
  return typeof data.turn === 'number' ? data.turn : undefined
}

/** The loop a change touches, for error messages. */
function changedLoopId(change: LoopChange): string {
  return change.operation === 'create' ? change.loop.id : change.id
}

/**
 * Disposable live projection of one exact root agent's loops. The session log
 * is the truth; this object only decides when to read it again.
 */
export class LoopRuntime {
  private readonly report: LoopReport
  /** Time and timers for this runtime and the tools on its queue. */
  readonly clock: LoopClock
  private timer: TimerHandle | undefined
  private tail: Promise<void> = Promise.resolve()
  private draining: Promise<void> | undefined
  private requested = false
  private stopping = false
  private fault: LoopError | undefined
  private disposal: Promise<void> | undefined
  private retryDelay = FIRST_RETRY_DELAY_MS
  private readonly view: SessionView

  /**
   * @param ctx - plugin context carrying `sessions` and `agents`.
   * @param agent - the exact root agent this runtime serves.
   * @param options - host facts.
   */
  constructor(
    private readonly ctx: Context,
    readonly agent: Agent,
    private readonly options: LoopRuntimeOptions,
  ) {
    this.report = createReport(ctx.logger('loop'))
    this.clock = options.clock ?? realClock
    // Events inherited through a fork seed are the parent's, never this session's.
    this.view = new SessionView(agent.session.header.seedLength ?? 0)
  }

  /** Begin with a first drive, which folds the log and arms the timer. */
  start(): void {
    this.requestDrive()
  }

  /**
   * Count a heartbeat the agent just took out of its inbox for a turn, before
   * DSH logs it as the step's user message.
   * @param message - the claimed message.
   * @param turn - the turn that claimed it.
   */
  noteClaimed(message: unknown, turn: number): void {
    this.view.noteClaimed(message, turn)
  }

  /**
   * Keep heartbeats of loops that are no longer active out of a step DSH is about
   * to enter. DSH claims a step's input before its pre-step hooks run; a delete
   * decided in between cannot take the message out of the inbox any more, so it
   * is dropped here instead. Any other message, and every heartbeat of an active
   * loop, passes unchanged; so does everything while the fold is faulted. When
   * every claimed message is such a heartbeat, the step has no input at all (what
   * hooks added for it, such as DSH's runtime-context snapshot, goes too), so DSH
   * ends the turn as if nothing had been claimed instead of calling the model.
   * @param claimed - the messages DSH took out of the inbox for this step.
   * @param decision - what the inner pre-step hooks decided.
   * @returns the same decision, or a copy without the deleted loops' heartbeats.
   */
  admitStep(claimed: readonly unknown[], decision: PreStepDecision): PreStepDecision {
    if (decision.kind === 'reject') return decision
    let active: LoopTable
    try {
      active = this.sync().active
    } catch {
      return decision
    }
    const dropped = (message: unknown): boolean => {
      const heartbeat = readHeartbeat(message)
      return heartbeat !== undefined && active.get(heartbeat.loopId) === undefined
    }
    const messages = decision.messages.filter((message) => !dropped(message))
    if (messages.length === decision.messages.length) return decision
    // Decided on the claimed batch itself: a hook may have replaced a claimed message with an edited copy.
    return { ...decision, messages: claimed.some(dropped) && claimed.every(dropped) ? [] : messages }
  }

  /** Ask for a drive; requests landing while one runs coalesce into one more. */
  requestDrive(): void {
    if (this.options.oneShot || this.stopping || this.fault !== undefined || !this.isLive()) return
    this.requested = true
    if (this.draining !== undefined) return
    // The pump belongs to no caller: a tool call or timer that merely starts it must not own its turns.
    this.draining = this.ctx.agents.withoutInitiator(() => this.drain())
  }

  /**
   * Run one tool operation on the drive queue, after a flush and over the current fold.
   * Cancellation is honoured until the append; once appended, the change stands and is reported.
   * @param label - the tool name, for messages.
   * @param signal - the call's cancellation signal.
   * @param operation - receives the fold; may return one durable change to append.
   * @returns the operation's result once its change, if any, is flushed.
   */
  transact<T>(
    label: string,
    signal: AbortSignal,
    operation: (state: TrackedLoopFold) => LoopTransaction<T>,
  ): Promise<T> {
    return this.enqueue(async () => {
      this.assertRunnable(label, signal)
      await flushSession(this.ctx, this.agent.session)
      this.assertRunnable(label, signal)
      const { result, change } = operation(this.sync())
      if (change === undefined) return result
      this.assertRunnable(label, signal)
      // A deleted loop's waiting heartbeat leaves the inbox first, durably, in the same flush as the delete.
      if (change.operation === 'delete') this.withdrawHeartbeats(waitingHeartbeats(this.inboxMessages()).get(change.id))
      this.foldAppended(this.agent.session.append(LOOP_CHANGE_EVENT, change))
      try {
        await flushSession(this.ctx, this.agent.session)
      } catch (error) {
        const id = changedLoopId(change)
        const now = change.operation === 'create' ? `${id} is active now` : `${id} is deleted now`
        throw new LoopError(
          'persistence_failed',
          `${label} changed ${id} in this session (${now}), but saving the change failed, so it may not survive a restart; run loop_list to check it before retrying. ${describeError(error)}`,
          { cause: error },
        )
      } finally {
        this.requestDrive()
      }
      return result
    })
  }

  /** Stop new work, cancel the timer and wait for the queue; a late timer cannot revive it. */
  dispose(): Promise<void> {
    this.disposal ??= (async () => {
      this.stopping = true
      this.requested = false
      this.clearTimer()
      await Promise.allSettled([this.tail, this.draining])
    })()
    return this.disposal
  }

  /** Whether the exact agent is still the live root for its session. */
  private isLive(): boolean {
    return this.ctx.agents.get(this.agent.id) === this.agent && this.ctx.agents.roots().includes(this.agent)
  }

  /** Throw the caller-facing error when this call may no longer touch the session. */
  private assertRunnable(label: string, signal: AbortSignal): void {
    if (signal.aborted) throw new LoopError('cancelled', `${label} was cancelled; nothing was saved.`)
    if (this.stopping || !this.isLive()) {
      throw new LoopError(
        'agent_unavailable',
        'The loops of this session have moved on: this agent or the loop plugin was replaced or is shutting down. Call the tool again; the live one answers.',
      )
    }
    if (this.fault !== undefined) throw this.fault
  }

  /** Queue an operation behind every earlier one, keeping the queue alive after failures. */
  private enqueue<T>(operation: () => Promise<T>): Promise<T> {
    const run = this.tail.then(operation)
    this.tail = run.then(
      () => undefined,
      () => undefined,
    )
    return run
  }

  /** Run queued drives until no request is pending; an unexpected failure faults this runtime. */
  private async drain(): Promise<void> {
    try {
      while (this.requested && !this.stopping && this.fault === undefined) {
        this.requested = false
        await this.enqueue(() => this.driveOnce())
      }
      /* v8 ignore start -- defensive: no known host failure reaches here; it keeps a bug from becoming an unhandled rejection in the host. */
    } catch (error) {
      this.stop(
        new LoopError(
          'runtime_failed',
          `Loops in this session stopped after an unexpected failure: ${describeError(error)}`,
          { cause: error },
        ),
      )
      /* v8 ignore stop */
    } finally {
      this.draining = undefined
    }
  }

  /**
   * The current fold. The first call reads the log (events appended before this
   * runtime existed); every later one returns the fold as it is, because every
   * later change is one this runtime appended and folded ({@link foldAppended}).
   * @returns the current fold.
   * @throws LoopError `corrupt_loop_log`, after stopping the runtime.
   */
  private sync(): TrackedLoopFold {
    if (this.fault !== undefined) throw this.fault
    if (!this.view.caughtUp) {
      try {
        const session = this.agent.session
        this.buildProjections()
        const events = session.events
        this.view.catchUp(events, takeProjectedFold(events, session.header.seedLength ?? 0))
      } catch (error) {
        throw this.stop(this.corruption(error))
      }
    }
    return this.view.fold
  }

  /**
   * Have the host build this session's projection cells now, as it does anyway at
   * the first read (DSH web reads them when a session opens) or append, so the
   * catch-up can take the `loop` projection's fold instead of reading the log twice.
   */
  private buildProjections(): void {
    try {
      this.ctx.get('sessionProjections')?.snapshot(this.agent.session)
    } catch {
      // Another unit's failure is the host's to report; the runtime then folds the log itself.
    }
  }

  /**
   * Fold a change this runtime just appended. It was decided over the fold, so it
   * always applies; if it ever did not, the fold no longer matches the log, and the
   * runtime stops as it does for a corrupt log.
   */
  private foldAppended(event: SessionEvent): void {
    try {
      this.view.foldAppended(event)
      /* v8 ignore start -- unreachable: every appended change was decided over this fold (see the doc comment). */
    } catch (error) {
      throw this.stop(this.corruption(error))
    }
    /* v8 ignore stop */
  }

  /** The diagnostic for a corrupt record. */
  private corruption(error: unknown): LoopError {
    return new LoopError(
      'corrupt_loop_log',
      `Loops in this session are stopped: its loop log is corrupt (${describeError(error)}).`,
      { cause: error },
    )
  }

  /** Fail closed: keep the reason for every later caller, log it once, and never arm again. */
  private stop(fault: LoopError): LoopError {
    this.fault = fault
    this.clearTimer()
    this.report.warn(`session "${this.agent.id}": ${fault.message}`)
    return fault
  }

  /** Whether the session has an active loop; a faulted fold has none that can fire. */
  private hasLoops(): boolean {
    try {
      return activeLoops(this.sync()).length > 0
    } catch {
      return false
    }
  }

  /** Cancel the armed timer, if any. */
  private clearTimer(): void {
    if (this.timer === undefined) return
    this.clock.clearTimer(this.timer)
    this.timer = undefined
  }

  /** Arm the one timer for `target`, waking at most {@link MAX_TIMER_WAIT_MS} later to re-read the clock. */
  private arm(target: number, now: number): void {
    this.clearTimer()
    const delay = Math.min(Math.max(target - now, 0), MAX_TIMER_WAIT_MS)
    this.timer = this.clock.setTimer(() => {
      this.timer = undefined
      this.requestDrive()
    }, delay)
  }

  /** After a failed drive, try again later with a doubling delay instead of spinning. */
  private retryLater(reason: string): void {
    // A drive that fails while its runtime is being disposed must not leave a timer behind.
    if (this.stopping) return
    this.report.warn(`loop drive for session "${this.agent.id}" failed, retrying in ${this.retryDelay} ms: ${reason}`)
    const now = this.clock.now()
    this.arm(now + this.retryDelay, now)
    this.retryDelay = Math.min(this.retryDelay * 2, MAX_RETRY_DELAY_MS)
  }

  /** The agent's inbox, unconsumed (replayed by DSH from the log), next-step first. */
  private inboxMessages(): InboxMessage[] {
    return [...this.agent.inbox.nextStep, ...this.agent.inbox.nextTurn]
  }

  /** Remove waiting heartbeats from the inbox; DSH logs each removal as a durable cancellation splice. */
  private withdrawHeartbeats(ids: readonly MessageId[] | undefined): void {
    for (const id of ids ?? []) this.agent.inbox.remove(id)
  }

  /**
   * One drive, the steps of §7.2: stop unless the exact agent is live; flush, so
   * the fold is the durable one; take the active loop with the earliest
   * `next_at <= now` (ties in fold order), or, with none due, arm the timer for
   * the earliest future one and finish; send its heartbeat by the delivery rule;
   * append its dispatch; flush; drive again. A loop that a wrong clock scheduled
   * too far ahead is, with none due, put back one interval from now the same way.
   * A failed step leaves the durable state as it was and retries later.
   */
  private async driveOnce(): Promise<void> {
    this.clearTimer()
    if (this.stopping || !this.isLive()) return
    try {
      await flushSession(this.ctx, this.agent.session)
    } catch (error) {
      // A session without loops has nothing to retry for (a host without persistence): its next create drives again.
      if (this.hasLoops()) this.retryLater(describeError(error))
      return
    }
    if (this.stopping || !this.isLive()) return
    let loops: LoopRecord[]
    try {
      loops = activeLoops(this.sync())
    } catch {
      return
    }
    const now = this.clock.now()
    const due = earliestDueLoop(loops, now)
    const loop = due ?? firstClockSkewedLoop(loops, now)
    if (loop === undefined) {
      this.retryDelay = FIRST_RETRY_DELAY_MS
      const target = earliestNextAt(loops)
      if (target !== undefined) this.arm(target, now)
      return
    }
    const failure = loop === due ? this.deliver(loop, now) : this.reschedule(loop, now)
    if (failure !== undefined) {
      this.retryLater(failure)
      return
    }
    try {
      await flushSession(this.ctx, this.agent.session)
    } catch (error) {
      // The advance is only in memory: not done until a later flush succeeds.
      this.retryLater(`the dispatch of ${loop.id} is not durable yet: ${describeError(error)}`)
      return
    }
    this.retryDelay = FIRST_RETRY_DELAY_MS
    this.requestDrive()
  }

  /**
   * Deliver one due loop by the delivery rule and append its dispatch.
   * @returns why it failed, if it did: the inbox refused the heartbeat or the log the dispatch.
   */
  private deliver(loop: LoopRecord, now: number): string | undefined {
    const waiting = waitingHeartbeats(this.inboxMessages()).get(loop.id)
    const delivery = chooseDelivery({
      running: this.agent.status === 'running',
      waiting: waiting !== undefined,
      inOpenTurn: this.view.openTurnHeartbeats.has(loop.id),
    })
    if (delivery.kind !== 'coalesce') {
      try {
        if (delivery.kind === 'replace') {
          // Nothing would deliver it (an idle agent does not wake by itself): the fresh heartbeat takes its place and wakes it.
          this.report.info(
            `session "${this.agent.id}": the heartbeat of ${loop.id} waited in the inbox of an idle agent; replacing it with one that wakes the agent`,
          )
          this.withdrawHeartbeats(waiting)
        }
        const message = createUserMessage({
          content: [{ type: 'text', text: renderHeartbeat(loop) }],
          source: { ...HEARTBEAT_SOURCE },
        })
        this.agent.send(message, delivery.target, true)
      } catch (error) {
        return `heartbeat for ${loop.id} was not admitted: ${describeError(error)}`
      }
    }
    // Not recorded on failure: the retry decides again; a heartbeat already sent waits in the inbox, so it coalesces.
    return this.recordDispatch(loop, nextOccurrence(loop, now))
  }

  /** Put a loop a wrong clock scheduled too far ahead back one interval from now; returns why it failed, if it did. */
  private reschedule(loop: LoopRecord, now: number): string | undefined {
    this.report.info(
      `session "${this.agent.id}": ${loop.id} was scheduled more than one and a half intervals ahead (the clock moved back); rescheduling it`,
    )
    return this.recordDispatch(loop, rescheduledNextAt(loop, now))
  }

  /** Append one dispatch; returns why it could not be recorded, if it could not. */
  private recordDispatch(loop: LoopRecord, nextAt: number): string | undefined {
    let event: SessionEvent
    try {
      event = this.agent.session.append(LOOP_CHANGE_EVENT, dispatchChange(loop.id, nextAt))
    } catch (error) {
      return `dispatch of ${loop.id} could not be recorded: ${describeError(error)}`
    }
    this.foldAppended(event)
    return undefined
  }
}

/**
 * The per-agent runtime: one bounded one-shot timer on an injected clock;
 * serialized coalesced drives; the transaction queue tools share; heartbeat
 * delivery and the retry. What the session holds is its {@link SessionView}.
 * @module dsh-plugin-loop/loop
 */
import type { Context } from '@deepseek-ai/cordis'
import type { Agent, PreStepDecision } from '@deepseek-ai/dsh-agent'
import { createUserMessage, type MessageId } from '@deepseek-ai/dsh-llm'
import type { SessionEvent } from '@deepseek-ai/dsh-session'
import { realClock, type LoopClock, type TimerHandle } from './clock.ts'
import { LOOP_CHANGE_EVENT, activeLoops, chooseDelivery, dispatchChange, type TrackedLoopFold } from './domain.ts'
import { LoopError } from './errors.ts'
import { HEARTBEAT_SOURCE, readHeartbeat, renderHeartbeat } from './heartbeat.ts'
import { describeError } from './format.ts'
import { flushSession } from './persistence.ts'
import { createReport, type LoopReport } from './report.ts'
import { SessionView, waitingHeartbeats, type InboxMessage } from './session-view.ts'
import { clockSkewedLoops, dueLoops, earliestNextAt, nextOccurrence, rescheduledNextAt } from './timing.ts'
import type { LoopChange, LoopRecord } from './types.ts'

/**
 * Longest single timer wait. Node's timers do not count time the machine is
 * suspended, and the wall clock can move under them, so every wait re-reads
 * the clock at least this often: an overdue loop fires within a minute of waking.
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
    let loops: TrackedLoopFold['loops']
    try {
      loops = this.sync().loops
    } catch {
      return decision
    }
    const dropped = (message: unknown): boolean => {
      const heartbeat = readHeartbeat(message)
      return heartbeat !== undefined && !Object.hasOwn(loops, heartbeat.loopId)
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
        this.view.catchUp(this.agent.session.events)
      } catch (error) {
        throw this.stop(this.corruption(error))
      }
    }
    return this.view.fold
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
   * What is to be done now: every schedule to correct and every due occurrence.
   * With nothing to do it arms the timer for the earliest occurrence (nothing
   * without loops) and returns undefined; so does a faulted fold.
   */
  private plan(now: number): DrivePlan | undefined {
    let loops: LoopRecord[]
    try {
      loops = activeLoops(this.sync())
    } catch {
      return undefined
    }
    const plan = { skewed: clockSkewedLoops(loops, now), due: dueLoops(loops, now) }
    if (plan.skewed.length > 0 || plan.due.length > 0) return plan
    this.retryDelay = FIRST_RETRY_DELAY_MS
    const target = earliestNextAt(loops)
    if (target !== undefined) this.arm(target, now)
    return undefined
  }

  /**
   * One drive, a group commit: decide over the folded state; only when something
   * is to be done flush once, decide again over the durable state, handle every
   * loop due now and append its dispatch, make the whole batch durable with one
   * flush, and drive again.
   */
  private async driveOnce(): Promise<void> {
    this.clearTimer()
    if (this.stopping || !this.isLive() || this.plan(this.clock.now()) === undefined) return
    try {
      await flushSession(this.ctx, this.agent.session)
    } catch (error) {
      this.retryLater(describeError(error))
      return
    }
    if (this.stopping || !this.isLive()) return
    const now = this.clock.now()
    const plan = this.plan(now)
    if (plan === undefined) return
    const { handled, failure } = this.handleBatch(plan, now)
    if (handled.length > 0) {
      try {
        await flushSession(this.ctx, this.agent.session)
      } catch (error) {
        // The advances are only in memory: not done until a later flush succeeds.
        this.retryLater(`${describeBatch(handled)} not durable yet: ${describeError(error)}`)
        return
      }
    }
    if (failure !== undefined) {
      this.retryLater(failure)
      return
    }
    this.retryDelay = FIRST_RETRY_DELAY_MS
    this.requestDrive()
  }

  /**
   * Handle a drive's batch synchronously, in order: correct every skewed schedule,
   * then deliver every due loop by the delivery rule, each with its dispatch
   * appended right after its send. Stops at the first send the inbox refuses or
   * append the log refuses (the rest is left to the retry), and once this runtime
   * is being disposed or its agent is no longer the live root (checked before every send).
   * @returns the loops whose dispatch was appended, and why the batch stopped early.
   */
  private handleBatch(
    plan: DrivePlan,
    now: number,
  ): { readonly handled: readonly string[]; readonly failure?: string } {
    const handled: string[] = []
    for (const loop of plan.skewed) {
      this.report.info(
        `session "${this.agent.id}": ${loop.id} was scheduled more than one and a half intervals ahead (the clock moved back); rescheduling it`,
      )
      const failure = this.recordDispatch(loop, rescheduledNextAt(loop, now))
      if (failure !== undefined) return { handled, failure }
      handled.push(loop.id)
    }
    // One inbox scan per batch; claims our own wake-ups cause keep it current (noteClaimed).
    const waiting = this.view.watchWaiting(this.inboxMessages())
    try {
      for (const loop of plan.due) {
        if (this.stopping || !this.isLive()) break
        const stale = waiting.get(loop.id)
        const delivery = chooseDelivery({
          running: this.agent.status === 'running',
          waiting: stale !== undefined,
          inOpenTurn: this.view.openTurnHeartbeats.has(loop.id),
        })
        if (delivery.kind !== 'coalesce') {
          try {
            if (delivery.kind === 'replace') {
              // Nothing would deliver it (an idle agent does not wake by itself): the fresh heartbeat takes its place and wakes it.
              this.report.info(
                `session "${this.agent.id}": the heartbeat of ${loop.id} waited in the inbox of an idle agent; replacing it with one that wakes the agent`,
              )
              this.withdrawHeartbeats(stale)
            }
            const message = createUserMessage({
              content: [{ type: 'text', text: renderHeartbeat(loop) }],
              source: { ...HEARTBEAT_SOURCE },
            })
            this.agent.send(message, delivery.target, true)
          } catch (error) {
            return { handled, failure: `heartbeat for ${loop.id} was not admitted: ${describeError(error)}` }
          }
        }
        // Not recorded on failure: the retry decides again; a heartbeat already sent waits in the inbox, so it coalesces.
        const failure = this.recordDispatch(loop, nextOccurrence(loop, now))
        if (failure !== undefined) return { handled, failure }
        handled.push(loop.id)
      }
    } finally {
      this.view.unwatchWaiting()
    }
    return { handled }
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

/** A drive's work: the schedules a wrong clock left too far ahead (creation order), and the due loops (`next_at` order). */
interface DrivePlan {
  readonly skewed: readonly LoopRecord[]
  readonly due: readonly LoopRecord[]
}

/** `the dispatch of loop_a is` or `the dispatches of 3 loops (loop_a, …) are`, for a retry's log line. */
function describeBatch(ids: readonly string[]): string {
  return ids.length === 1 ? `the dispatch of ${ids[0]} is` : `the dispatches of ${ids.length} loops (${ids[0]}, …) are`
}

/**
 * The per-agent runtime (SPEC.md §5 "Runtime"): it reads the session's loops from the log once, at first
 * need, and then folds the changes it appends; it keeps one bounded wake timer (`WakeTimer`) on an injected
 * clock, runs serialized, coalesced drives of one due loop each, orders the tools' reads and changes on the
 * same queue, and delivers heartbeats. What a drive does is decided by `drive.ts`; the fold is `fold.ts`.
 * @module dsh-plugin-loop/loop
 */
import type { Context } from '@deepseek-ai/cordis'
import type { Agent, PreStepDecision } from '@deepseek-ai/dsh-agent'
import { decideDrive } from './drive.ts'
import { LoopError } from './errors.ts'
import {
  LOOP_CHANGE_EVENT,
  dispatchChange,
  foldLoopChange,
  foldLoopEvents,
  forkChange,
  inheritedLoopIds,
  type LoopFold,
} from './fold.ts'
import { admitClaimedHeartbeats } from './delivery.ts'
import { HeartbeatInbox } from './heartbeat-inbox.ts'
import { flushSession } from './persistence.ts'
import { createReport, type LoopReport } from './report.ts'
import { WakeTimer, realClock, type LoopClock } from './clock.ts'
import { describeError } from './shared/format.ts'
import type { LoopChange, LoopForkChange, LoopRecord, LoopTransaction } from './types.ts'

/** First retry delay after a failed drive (flush, send); doubles up to {@link MAX_RETRY_DELAY_MS}. */
const FIRST_RETRY_DELAY_MS = 1_000

/** Cap of the retry backoff. */
const MAX_RETRY_DELAY_MS = 60_000

/** How often a runtime that began mid-turn looks again whether that turn has moved on ({@link LoopRuntime.turnUnseen}). */
const UNSEEN_TURN_RECHECK_MS = 1_000

/** DSH's workspace registry (`@deepseek-ai/dsh-workspace`), which keeps the archive set; mounted by `dsh web`. */
const WORKSPACE_REGISTRY_SERVICE = 'workspaceRegistry'

/** What the runtime reads of that registry: rc.8's getter returns the current archive set as an array. */
interface WorkspaceArchive {
  readonly archivedSessionIds: readonly string[]
}

/** How a runtime behaves in its host. */
export interface LoopRuntimeOptions {
  /**
   * A one-shot host (`dsh --profile headless "task"`) exits once its agent goes idle
   * after the task: loops are saved there but never dispatched, so they cannot keep it running.
   */
  readonly oneShotHost: boolean
  /** Time and timers; the process clock unless a test drives its own. */
  readonly clock?: LoopClock | undefined
  /**
   * The agent was live before this runtime (a hot reload, a late install): a turn it runs may have
   * claimed a heartbeat before this runtime listened ({@link LoopRuntime.turnUnseen}).
   */
  readonly joinedLive?: boolean
}

/**
 * Disposable live state of one exact root agent's loops. The session log is
 * the truth; this object only decides when to act on it.
 */
export class LoopRuntime {
  /** Time and timers for this runtime and the tools on its queue. */
  readonly clock: LoopClock
  private readonly report: LoopReport
  /** The session's fold, read from the log at first need; undefined until then. */
  private fold: LoopFold | undefined
  /** A fork's `fork` change, found at the first read and appended before the runtime's first change or drive. */
  private pendingFork: LoopForkChange | undefined
  /** The agent's inbox, for deliveries, the delete's withdrawal and the claims DSH reports. */
  private readonly inbox: HeartbeatInbox
  private readonly timer: WakeTimer
  /** The end of the queue: every tool call and drive runs after the one before it ({@link enqueue}). */
  private queueEnd: Promise<void> = Promise.resolve()
  /** The pump that runs requested drives one after another, while it runs ({@link drain}). */
  private draining: Promise<void> | undefined
  /** A drive was asked for since the pump last started one. */
  private driveRequested = false
  /** Set once {@link dispose} begins: nothing new starts, and a late timer or retry arms nothing. */
  private disposing = false
  /** Why this runtime failed closed ({@link failClosed}); every later call is told it. */
  private fault: LoopError | undefined
  /** {@link dispose}'s one run, which every later call of it awaits. */
  private disposal: Promise<void> | undefined
  private retryDelay = FIRST_RETRY_DELAY_MS
  /**
   * The runtime joined a live agent during a turn (a hot reload, a late install): DSH may have
   * claimed a heartbeat for a step before this runtime listened, which is then in neither the
   * inbox nor the log until the step is entered. No heartbeat is sent until this runtime sees
   * one of that turn's steps ({@link admitStep}) or the turn ends.
   */
  private turnUnseen = false

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
    this.inbox = new HeartbeatInbox(agent, this.report, this.clock)
    this.timer = new WakeTimer(this.clock, () => this.requestDrive())
  }

  /** Begin with a first drive, which reads the log and arms the timer. */
  start(): void {
    this.turnUnseen = this.options.joinedLive === true && this.agent.status === 'running'
    this.requestDrive()
  }

  /**
   * DSH took a message out of the inbox for a turn: a heartbeat among them is that turn's.
   * @param message - the message it took.
   * @param turn - the turn it took it for.
   */
  noteClaimed(message: unknown, turn: number): void {
    this.inbox.noteClaimed(message, turn)
  }

  /**
   * The step DSH is about to enter, without heartbeats of loops deleted since DSH
   * claimed them ({@link admitClaimedHeartbeats}); unchanged while the log is corrupt.
   * @param claimed - the messages DSH took out of the inbox for this step.
   * @param decision - what the inner pre-step hooks decided.
   * @param turn - the turn that will own the step.
   * @returns the decision to enter with.
   */
  admitStep(claimed: readonly unknown[], decision: PreStepDecision, turn: number): PreStepDecision {
    if (this.turnUnseen) {
      // Every earlier step of the turn is logged by now, though the first read may have come before
      // one was (its claim unheard): read the open turn again, once; then this step's claims.
      const { events, header } = this.agent.session
      this.inbox.readOpenTurn(events, header.seedLength ?? 0)
      for (const message of claimed) this.inbox.noteClaimed(message, turn)
      this.turnUnseen = false
      this.requestDrive()
    }
    const fold = this.foldUnlessCorrupt()
    if (fold === undefined) return decision
    const admitted = admitClaimedHeartbeats(claimed, decision, fold.loops)
    if (admitted.kind === 'enter') this.inbox.noteEntering(admitted.messages)
    return admitted
  }

  /** Ask for a drive; requests landing while one runs coalesce into one more. */
  requestDrive(): void {
    if (this.options.oneShotHost || this.disposing || this.fault !== undefined || !this.isLive()) return
    this.driveRequested = true
    if (this.draining !== undefined) return
    // The pump belongs to no caller: a tool call or timer that merely starts it must not own its turns.
    this.draining = this.ctx.agents.withoutInitiator(() => this.drain())
  }

  /**
   * Read the fold on the queue, after every earlier change and drive. Nothing is
   * flushed (SPEC.md §6 "Persistence"), so a read works while saving fails.
   * @param label - the tool name, for messages.
   * @param signal - the call's cancellation signal.
   * @param readFold - receives the fold.
   * @returns what `readFold` returns.
   */
  read<T>(label: string, signal: AbortSignal, readFold: (fold: LoopFold) => T): Promise<T> {
    return this.enqueue(async () => {
      this.assertRunnable(label, signal)
      return readFold(this.soundFold())
    })
  }

  /**
   * Run one state-changing tool call on the queue: flush, decide over the fold,
   * withdraw what the decision names from the inbox, append its change, flush
   * again. Cancellation is honoured until the append; once appended, the change
   * stands and is reported.
   * @param label - the tool name, for messages.
   * @param signal - the call's cancellation signal.
   * @param decide - receives the fold; returns the result and what to make durable, changing nothing itself.
   * @returns the result once its change is flushed.
   */
  transact<T>(label: string, signal: AbortSignal, decide: (fold: LoopFold) => LoopTransaction<T>): Promise<T> {
    return this.enqueue(async () => {
      this.assertRunnable(label, signal)
      await flushSession(this.ctx, this.agent.session)
      this.assertRunnable(label, signal)
      const decision = decide(this.soundFold())
      if (decision.change === undefined) return decision.result
      const { withdrawLoopId } = decision
      if (withdrawLoopId !== undefined) {
        // Its heartbeat entered a step DSH has not logged yet: the delete comes after that step.
        let step = this.inbox.unloggedStepWith(withdrawLoopId)
        while (step !== undefined) {
          await step
          this.assertRunnable(label, signal)
          step = this.inbox.unloggedStepWith(withdrawLoopId)
        }
        // Joined this turn live (a hot reload), it may race a step the old plugin's hook admitted
        // (`admitByLog`), which DSH logs in that same task: a task later, it is logged.
        if (this.turnUnseen) {
          await new Promise<void>((resolve) => this.clock.setTimer(resolve, 0))
          this.assertRunnable(label, signal)
        }
        this.inbox.withdraw(withdrawLoopId)
      }
      this.append(decision.change)
      try {
        await flushSession(this.ctx, this.agent.session)
      } catch (error) {
        throw decision.notSaved(error)
      } finally {
        this.requestDrive()
      }
      return decision.result
    })
  }

  /** Stop new work, cancel the timer and wait for the queue; a late timer cannot revive it. */
  dispose(): Promise<void> {
    this.disposal ??= (async () => {
      this.disposing = true
      this.driveRequested = false
      this.timer.clear()
      await Promise.allSettled([this.queueEnd, this.draining])
    })()
    return this.disposal
  }

  /** Whether the exact agent is still the live root for its session. */
  private isLive(): boolean {
    return this.ctx.agents.get(this.agent.id) === this.agent && this.ctx.agents.roots().includes(this.agent)
  }

  /**
   * Whether the session is in DSH's archive set (DSH web's Archive hides it and leaves it live).
   * Read at each drive, never per appended event; a host without the workspace registry archives nothing.
   */
  private isArchived(): boolean {
    const registry = this.ctx.get(WORKSPACE_REGISTRY_SERVICE) as WorkspaceArchive | undefined
    return registry?.archivedSessionIds.includes(this.agent.id) === true
  }

  /** Throw the caller-facing error when this call may no longer touch the session. */
  private assertRunnable(label: string, signal: AbortSignal): void {
    if (signal.aborted) throw new LoopError('cancelled', `${label} was cancelled; nothing was saved.`)
    if (this.disposing || !this.isLive()) {
      throw new LoopError(
        'agent_unavailable',
        'The loops of this session have moved on: this agent or the loop plugin was replaced or is shutting down. Call the tool again; the live one answers.',
      )
    }
    if (this.fault !== undefined) throw this.fault
  }

  /** Queue an operation behind every earlier one, keeping the queue alive after failures. */
  private enqueue<T>(operation: () => Promise<T>): Promise<T> {
    const run = this.queueEnd.then(operation)
    this.queueEnd = run.then(
      () => undefined,
      () => undefined,
    )
    return run
  }

  /** Run queued drives until no request is pending; an unexpected failure fails this runtime closed. */
  private async drain(): Promise<void> {
    try {
      while (this.driveRequested && !this.disposing && this.fault === undefined) {
        this.driveRequested = false
        await this.enqueue(() => this.driveOnce())
      }
      /* v8 ignore start -- defensive: no known host failure reaches here; it keeps a bug from becoming an unhandled rejection in the host. */
    } catch (error) {
      this.failClosed(
        new LoopError(
          'runtime_failed',
          `Loops in this session stopped after an unexpected failure: ${describeError(error)}`,
          {
            cause: error,
          },
        ),
      )
      /* v8 ignore stop */
    } finally {
      this.draining = undefined
    }
  }

  /**
   * The session's fold while it is sound. The first call reads the log (everything
   * appended before this runtime existed) and may append a fork's change
   * ({@link readLogAndNameInheritedLoops}); later changes are the ones this runtime
   * appends and folds itself, as the only writer of `loop/change` in its session.
   * @throws LoopError `corrupt_loop_log`, after failing closed.
   */
  private soundFold(): LoopFold {
    if (this.fault !== undefined) throw this.fault
    this.fold ??= this.readLogAndNameInheritedLoops()
    const { corrupt } = this.fold
    if (corrupt === undefined) return this.fold
    throw this.failClosed(
      new LoopError('corrupt_loop_log', `Loops in this session are stopped: its loop log is corrupt (${corrupt}).`),
    )
  }

  /**
   * Read the log once: the open turn, for the inbox, and the fold. Events
   * inherited through a fork seed are the parent's, never this session's. DSH web
   * shows a session that is not open by folding its whole log, so a fork whose log
   * still shows inherited loops names them in a `fork` change, which that reading
   * drops; it waits for the runtime's first change or drive, so a refused call
   * appends nothing (the next flush saves it).
   */
  private readLogAndNameInheritedLoops(): LoopFold {
    const { events, header } = this.agent.session
    const from = header.seedLength ?? 0
    this.inbox.readOpenTurn(events, from)
    const fold = foldLoopEvents(events, from)
    const inherited = from > 0 && fold.corrupt === undefined ? inheritedLoopIds(events, fold) : []
    if (inherited.length > 0) this.pendingFork = forkChange(inherited)
    return fold
  }

  /** Append a fork's pending `fork` change, once; it drops no loop of the fold, which reads from the seed. */
  private appendPendingFork(): void {
    if (this.pendingFork === undefined) return
    this.agent.session.append(LOOP_CHANGE_EVENT, this.pendingFork)
    this.pendingFork = undefined
  }

  /** Append one change to the fold it was decided on, and fold it. */
  private append(change: LoopChange): void {
    const fold = this.soundFold()
    this.appendPendingFork()
    const event = this.agent.session.append(LOOP_CHANGE_EVENT, change)
    this.fold = foldLoopChange(fold, event.data)
  }

  /** Fail closed: keep the reason for every later caller, log it once, and never arm again. */
  private failClosed(fault: LoopError): LoopError {
    this.fault = fault
    this.timer.clear()
    this.report.warn(`session "${this.agent.id}": ${fault.message}`)
    return fault
  }

  /** {@link soundFold}, or undefined once the log is corrupt (the runtime has failed closed). */
  private foldUnlessCorrupt(): LoopFold | undefined {
    try {
      return this.soundFold()
    } catch {
      return undefined
    }
  }

  /** After a failed drive, try again later with a doubling delay instead of spinning. */
  private retryLater(reason: string): void {
    // A drive that fails while its runtime is being disposed must not leave a timer behind.
    if (this.disposing) return
    this.report.warn(`loop drive for session "${this.agent.id}" failed, retrying in ${this.retryDelay} ms: ${reason}`)
    this.timer.arm(this.retryDelay)
    this.retryDelay = Math.min(this.retryDelay * 2, MAX_RETRY_DELAY_MS)
  }

  /**
   * One drive (SPEC.md §5 "Runtime"): stop unless the exact agent is live;
   * flush, so what is decided is durable; decide ({@link decideDrive}); deliver
   * the due loop's heartbeat, or only move a skewed schedule; append the
   * dispatch; flush; drive again. With nothing due, arm the timer and finish. A
   * failed step leaves the durable state as it was and retries later.
   */
  private async driveOnce(): Promise<void> {
    this.timer.clear()
    if (this.disposing || !this.isLive()) return
    try {
      await flushSession(this.ctx, this.agent.session)
    } catch (error) {
      // A session without loops or a fork's record to append has nothing to retry for (a host
      // without persistence): its next create drives again.
      const loops = this.foldUnlessCorrupt()?.loops.length ?? 0
      if (loops > 0 || this.pendingFork !== undefined) this.retryLater(describeError(error))
      return
    }
    if (this.disposing || !this.isLive()) return
    const fold = this.foldUnlessCorrupt()
    if (fold === undefined) return
    if (this.pendingFork !== undefined) {
      try {
        this.appendPendingFork()
      } catch (error) {
        this.retryLater(`the fork's record of its inherited loops could not be appended: ${describeError(error)}`)
        return
      }
      // The record is a change like any other: the drive it requests flushes it first, then decides.
      this.requestDrive()
      return
    }
    const decision = decideDrive(fold.loops, this.clock.now(), this.isArchived())
    if (decision.kind === 'wait') {
      this.retryDelay = FIRST_RETRY_DELAY_MS
      if (decision.delay !== undefined) this.timer.arm(decision.delay)
      return
    }
    const { loop } = decision
    if (decision.kind === 'deliver' && this.turnUnseen) {
      // Until the turn this runtime began in shows a step or ends, a heartbeat sent into it could be its second.
      if (this.agent.status !== 'running') this.turnUnseen = false
      else if (this.inbox.wouldSend(loop)) {
        this.timer.arm(UNSEEN_TURN_RECHECK_MS)
        return
      }
    }
    if (decision.kind === 'reschedule')
      this.report.info(
        `session "${this.agent.id}": ${loop.id} was scheduled more than one and a half intervals ahead (the clock moved back); rescheduling it`,
      )
    // A refused send records nothing: the retry decides again.
    const refused = decision.kind === 'deliver' ? this.inbox.deliver(loop) : undefined
    const failure = refused ?? this.recordDispatch(loop, decision.nextAt)
    if (failure !== undefined) {
      this.retryLater(failure)
      return
    }
    try {
      await flushSession(this.ctx, this.agent.session)
    } catch (error) {
      // The move is only in memory: not done until a later flush succeeds.
      this.retryLater(`the dispatch of ${loop.id} is not durable yet: ${describeError(error)}`)
      return
    }
    this.retryDelay = FIRST_RETRY_DELAY_MS
    this.requestDrive()
  }

  /**
   * Append a loop's dispatch: its schedule moves to `nextAt`. Not appended after a
   * refused send: the retry decides again, and a heartbeat already sent waits in the inbox, so it coalesces.
   * @returns why it could not be recorded, if it could not.
   */
  private recordDispatch(loop: LoopRecord, nextAt: number): string | undefined {
    try {
      this.append(dispatchChange(loop.id, nextAt))
      return undefined
    } catch (error) {
      return `dispatch of ${loop.id} could not be recorded: ${describeError(error)}`
    }
  }
}

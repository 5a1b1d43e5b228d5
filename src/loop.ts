/**
 * The per-agent runtime: one clamped one-shot timer, serialized coalesced
 * drives, the transaction queue tools share, and heartbeat delivery.
 * @module dsh-plugin-loop/loop
 */
import type { Context } from '@deepseek-ai/cordis'
import type { Agent } from '@deepseek-ai/dsh-agent'
import { createUserMessage } from '@deepseek-ai/dsh-llm'
import { EMPTY_LOOP_FOLD, LOOP_CHANGE_EVENT, dispatchChange, foldLoopEvents, renderHeartbeat, type LoopFoldState } from './domain.ts'
import { LoopError } from './errors.ts'
import { describeError } from './format.ts'
import { earliestNextAt, findDueLoop, nextOccurrence } from './timing.ts'
import { flushSession } from './persistence.ts'
import type { LoopChange } from './types.ts'

/** Largest delay a Node timer represents; longer waits re-arm the remainder. */
export const MAX_TIMER_DELAY_MS = 2_147_483_647

/** First retry delay after a failed drive (flush, send); doubles up to {@link MAX_RETRY_DELAY_MS}. */
export const FIRST_RETRY_DELAY_MS = 1_000

/** Cap of the retry backoff. */
export const MAX_RETRY_DELAY_MS = 60_000

/**
 * Disposable live projection of one exact root agent's loops. The session log
 * is the truth; this object only decides when to read it again.
 */
export class LoopRuntime {
  private readonly logger
  private timer: ReturnType<typeof setTimeout> | undefined
  private tail: Promise<void> = Promise.resolve()
  private draining: Promise<void> | undefined
  private requested = false
  private stopping = false
  private fault: LoopError | undefined
  private disposal: Promise<void> | undefined
  private retryDelay = FIRST_RETRY_DELAY_MS
  private fold: LoopFoldState = EMPTY_LOOP_FOLD
  private folded = 0

  /**
   * @param ctx - plugin context carrying `sessions` and `agents`.
   * @param agent - the exact root agent this runtime serves.
   */
  constructor(
    private readonly ctx: Context,
    readonly agent: Agent,
  ) {
    this.logger = ctx.logger('loop')
  }

  /** Begin with a first drive, which folds the log and arms the timer. */
  start(): void {
    this.requestDrive()
  }

  /** Ask for a drive; requests landing while one runs coalesce into one more. */
  requestDrive(): void {
    if (this.stopping || this.fault !== undefined || !this.isLive()) return
    this.requested = true
    if (this.draining === undefined) this.draining = this.drain()
  }

  /**
   * Run one tool operation on the drive queue, after a flush and over the current fold.
   * @param label - the tool name, for the error when saving its change fails.
   * @param operation - receives the fold; may return one durable change to append.
   * @returns the operation's result once its change, if any, is flushed.
   */
  transact<T>(
    label: string,
    operation: (state: LoopFoldState) => { readonly result: T; readonly change?: LoopChange },
  ): Promise<T> {
    return this.enqueue(async () => {
      this.assertRunnable()
      await flushSession(this.ctx, this.agent.session)
      this.assertRunnable()
      const { result, change } = operation(this.readFold())
      if (change === undefined) return result
      this.agent.session.append(LOOP_CHANGE_EVENT, change)
      try {
        await flushSession(this.ctx, this.agent.session)
      } catch (error) {
        throw new LoopError(
          'persistence_failed',
          `${label} was applied in this session but saving it failed, so it may not survive a restart; check the list before retrying. ${describeError(error)}`,
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

  /** Throw the caller-facing error when this runtime may no longer touch the session. */
  private assertRunnable(): void {
    if (this.stopping || !this.isLive()) {
      throw new LoopError('agent_unavailable', 'This agent is no longer live; its loops run in the agent that replaced it.')
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
      this.stop(new LoopError('runtime_failed', `Loops in this session stopped after an unexpected failure: ${describeError(error)}`, { cause: error }))
      /* v8 ignore stop */
    } finally {
      this.draining = undefined
    }
  }

  /** Fold the events appended since the last read; the log is append-only. */
  private readFold(): LoopFoldState {
    const session = this.agent.session
    const events = session.events
    const start = Math.max(this.folded, session.header.seedLength ?? 0)
    try {
      this.fold = foldLoopEvents(this.fold, events.slice(start))
    } catch (error) {
      throw this.stop(new LoopError('corrupt_loop_log', `Loops in this session are stopped: its loop log is corrupt (${describeError(error)}).`, { cause: error }))
    }
    this.folded = events.length
    return this.fold
  }

  /** Fail closed: keep the reason for every later caller, log it once, and never arm again. */
  private stop(fault: LoopError): LoopError {
    this.fault = fault
    this.clearTimer()
    this.logger.warn(`session "${this.agent.id}": ${fault.message}`)
    return fault
  }

  /** Cancel the armed timer, if any. */
  private clearTimer(): void {
    if (this.timer === undefined) return
    clearTimeout(this.timer)
    this.timer = undefined
  }

  /** Arm the one timer; waits beyond the Node limit wake early and re-arm the remainder. */
  private arm(target: number, now: number): void {
    this.clearTimer()
    const delay = Math.min(Math.max(target - now, 0), MAX_TIMER_DELAY_MS)
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.requestDrive()
    }, delay)
  }

  /** After a failed drive, try again later with a doubling delay instead of spinning. */
  private retryLater(reason: string): void {
    // A drive that fails while its runtime is being disposed must not leave a timer behind.
    if (this.stopping) return
    this.logger.warn(`loop drive for session "${this.agent.id}" failed, retrying in ${this.retryDelay} ms: ${reason}`)
    const now = Date.now()
    this.arm(now + this.retryDelay, now)
    this.retryDelay = Math.min(this.retryDelay * 2, MAX_RETRY_DELAY_MS)
  }

  /** One drive: flush, fold, then either arm the timer or dispatch the first due loop. */
  private async driveOnce(): Promise<void> {
    this.clearTimer()
    if (this.stopping || !this.isLive()) return
    try {
      await flushSession(this.ctx, this.agent.session)
    } catch (error) {
      this.retryLater(describeError(error))
      return
    }
    if (this.stopping || !this.isLive()) return
    let state: LoopFoldState
    try {
      state = this.readFold()
    } catch {
      return
    }
    const now = Date.now()
    const due = findDueLoop(state.loops, now)
    if (due === undefined) {
      this.retryDelay = FIRST_RETRY_DELAY_MS
      const target = earliestNextAt(state.loops)
      if (target !== undefined) this.arm(target, now)
      return
    }
    try {
      const message = createUserMessage({
        content: [{ type: 'text', text: renderHeartbeat(due) }],
        source: { kind: 'plugin', plugin: 'loop' },
      })
      this.agent.send(message, this.agent.status === 'running' ? 'next-step' : 'next-turn', true)
    } catch (error) {
      this.retryLater(`heartbeat for ${due.id} was not admitted: ${describeError(error)}`)
      return
    }
    this.agent.session.append(LOOP_CHANGE_EVENT, dispatchChange(due.id, nextOccurrence(due, now)))
    try {
      await flushSession(this.ctx, this.agent.session)
    } catch (error) {
      // The advance is only in memory: not done until a later flush succeeds.
      this.retryLater(`dispatch of ${due.id} is not durable yet: ${describeError(error)}`)
      return
    }
    this.retryDelay = FIRST_RETRY_DELAY_MS
    this.requestDrive()
  }
}

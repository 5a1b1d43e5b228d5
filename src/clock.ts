/**
 * The clock port: wall-clock time and timeouts (each fires once), injected into
 * the runtime, the tools and the command, so a test drives time by hand.
 * @module dsh-plugin-loop/clock
 */

/** An armed timer (the handle Node's `setTimeout` returns); only {@link LoopClock.clearTimer} reads it. */
export type TimerHandle = ReturnType<typeof setTimeout>

/**
 * Wall-clock time and timeouts: the one place the runtime, the tools and
 * the command read the time and arm timers, so a test drives them with a manual clock.
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
 * The process clock. Globals are read at every call, so tests that fake `Date`
 * and `setTimeout` still steer it; a real `setTimeout` keeps the caller's async context.
 */
export const realClock: LoopClock = {
  now: () => Date.now(),
  setTimer: (fn, ms) => setTimeout(fn, ms),
  clearTimer: (handle) => clearTimeout(handle),
}

/** The runtime's one timer: at most one wake armed at a time. */
export class WakeTimer {
  private handle: TimerHandle | undefined

  /**
   * @param clock - where timers are armed.
   * @param wake - what a timer that fires calls.
   */
  constructor(
    private readonly clock: LoopClock,
    private readonly wake: () => void,
  ) {}

  /** Arm the one wake after `delay` ms, replacing any armed one. */
  arm(delay: number): void {
    this.clear()
    this.handle = this.clock.setTimer(() => {
      this.handle = undefined
      this.wake()
    }, delay)
  }

  /** Cancel the armed wake, if any. */
  clear(): void {
    if (this.handle === undefined) return
    this.clock.clearTimer(this.handle)
    this.handle = undefined
  }
}

/**
 * The clock port: the one place the runtime, the tools and the command read the
 * time and arm timers, so a test can drive them with a manual clock instead of
 * patching globals.
 * @module dsh-plugin-loop/clock
 */

/** An armed timer, opaque to its owner: only {@link LoopClock.clearTimer} reads it. */
export type TimerHandle = unknown

/** Wall-clock time and one-shot timers. */
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
  // The handle came from setTimer above, so it is a Node timer.
  clearTimer: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
}

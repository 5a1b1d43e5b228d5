/**
 * A clock a test moves by hand: time stands still until {@link ManualClock.advance},
 * which fires every timer whose instant it passes, in instant order. No global is patched.
 */
import type { LoopClock, TimerHandle } from '../../src/clock.ts'

/** One armed timer. */
interface ManualTimer {
  readonly at: number
  readonly fn: () => void
}

/** A {@link LoopClock} that moves only when told. */
export class ManualClock implements LoopClock {
  private current: number
  private readonly timers = new Set<ManualTimer>()

  /** @param start - epoch ms at the start. */
  constructor(start: number) {
    this.current = start
  }

  /** Epoch ms now. */
  now(): number {
    return this.current
  }

  /** Arm a timer for `ms` from now. */
  setTimer(fn: () => void, ms: number): TimerHandle {
    const timer = { at: this.current + ms, fn }
    this.timers.add(timer)
    return timer as unknown as TimerHandle
  }

  /** Cancel a timer; unknown or fired handles are ignored. */
  clearTimer(handle: TimerHandle): void {
    this.timers.delete(handle as unknown as ManualTimer)
  }

  /** The instants of the armed timers, earliest first. */
  pending(): number[] {
    return [...this.timers].map((timer) => timer.at).sort((a, b) => a - b)
  }

  /** Move time forward by `ms`, firing each timer due on the way at its own instant. */
  advance(ms: number): void {
    const target = this.current + ms
    for (;;) {
      const due = [...this.timers].filter((timer) => timer.at <= target).sort((a, b) => a.at - b.at)[0]
      if (due === undefined) break
      this.timers.delete(due)
      this.current = due.at
      due.fn()
    }
    this.current = target
  }
}

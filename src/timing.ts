/**
 * Pure occurrence arithmetic over loop records. No imports beyond types, so the
 * browser dock shares it with the runtime.
 * @module dsh-plugin-loop/timing
 */
import type { LoopRecord } from './types.ts'

/**
 * Every due loop in the order a drive handles them: earliest `next_at <= now` first, ties in creation order.
 * @param loops - active loops in creation order.
 * @param now - decision time.
 * @returns a new array, empty when none is due.
 */
export function dueLoops(loops: readonly LoopRecord[], now: number): LoopRecord[] {
  // Array.prototype.sort is stable, so equal next_at keep creation order.
  return loops.filter((loop) => loop.next_at <= now).sort((a, b) => a.next_at - b.next_at)
}

/**
 * The earliest next occurrence: what the runtime arms its one timer for and the dock's summary counts down to.
 * @param loops - active loops.
 * @returns epoch milliseconds, or undefined without loops.
 */
export function earliestNextAt(loops: readonly LoopRecord[]): number | undefined {
  let earliest: number | undefined
  for (const loop of loops) if (earliest === undefined || loop.next_at < earliest) earliest = loop.next_at
  return earliest
}

/**
 * Anti-burst advance: skip whole missed intervals so the result is strictly after
 * `now`, on the loop's original cadence. A one-second loop delayed five seconds
 * yields one heartbeat, not five. A late dispatch also skips a cadence point less
 * than half an interval away, so the catch-up heartbeat after a sleep or restart
 * is never followed almost at once by the next one.
 * @param loop - the loop just dispatched.
 * @param now - dispatch time.
 * @returns the next `next_at`.
 */
export function nextOccurrence(loop: LoopRecord, now: number): number {
  const intervalMs = loop.time_in_seconds * 1000
  const skipped = Math.floor((now - loop.next_at) / intervalMs) + 1
  const next = loop.next_at + skipped * intervalMs
  return next - now < intervalMs / 2 ? next + intervalMs : next
}

/**
 * Loops whose `next_at` lies more than one and a half intervals ahead (further
 * than {@link nextOccurrence} or a create ever schedules): only a wall clock
 * that was wrong when they were scheduled (set forward, then corrected) puts them there.
 * @param loops - active loops in creation order.
 * @param now - decision time.
 * @returns a new array in creation order, empty when none is skewed.
 */
export function clockSkewedLoops(loops: readonly LoopRecord[], now: number): LoopRecord[] {
  return loops.filter((loop) => loop.next_at - now > loop.time_in_seconds * 1500)
}

/**
 * Where a skewed loop goes back to: one interval from now.
 * @param loop - the skewed loop.
 * @param now - decision time.
 * @returns the corrected `next_at`.
 */
export function rescheduledNextAt(loop: LoopRecord, now: number): number {
  return now + loop.time_in_seconds * 1000
}

/**
 * Pure occurrence arithmetic over loop records. No imports beyond types, so the
 * browser dock shares it with the runtime.
 * @module dsh-plugin-loop/timing
 */
import type { LoopRecord } from '../types.ts'

/** The last instant a JavaScript `Date` can hold (+275760-09-13T00:00:00Z), in epoch milliseconds. */
export const LATEST_DATE_MS = 8_640_000_000_000_000

/**
 * The loop a drive handles now (§7.2 step 4): the earliest `next_at <= now`, ties in fold order.
 * @param loops - active loops in fold (creation) order.
 * @param now - decision time.
 * @returns the loop, or undefined when none is due.
 */
export function earliestDueLoop(loops: readonly LoopRecord[], now: number): LoopRecord | undefined {
  let earliest: LoopRecord | undefined
  for (const loop of loops) {
    if (loop.next_at <= now && (earliest === undefined || loop.next_at < earliest.next_at)) earliest = loop
  }
  return earliest
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
 * The anti-burst advance of §7.3: skip whole missed intervals so the result is
 * strictly after `now`, on the loop's original cadence. A one-second loop
 * delayed five seconds yields one heartbeat, not five.
 * @param loop - the loop just dispatched.
 * @param now - dispatch time.
 * @returns the next `next_at`.
 */
export function nextOccurrence(loop: LoopRecord, now: number): number {
  const intervalMs = loop.time_in_seconds * 1000
  const skipped = Math.floor((now - loop.next_at) / intervalMs) + 1
  return loop.next_at + skipped * intervalMs
}

/**
 * The first loop, in fold order, whose `next_at` lies more than one and a half
 * intervals ahead (further than {@link nextOccurrence} or a create ever
 * schedules): only a wall clock that was wrong when it was scheduled (set
 * forward, then corrected) puts it there.
 * @param loops - active loops in fold order.
 * @param now - decision time.
 * @returns the loop, or undefined when none is skewed.
 */
export function firstClockSkewedLoop(loops: readonly LoopRecord[], now: number): LoopRecord | undefined {
  return loops.find((loop) => loop.next_at - now > loop.time_in_seconds * 1500)
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

/**
 * The longest interval a loop created at `now` may have: its first occurrence must still be a date.
 * @param now - creation time in epoch milliseconds.
 * @returns whole seconds.
 */
export function longestIntervalSeconds(now: number): number {
  return Math.floor((LATEST_DATE_MS - now) / 1000)
}

/**
 * Pure time arithmetic over loop records, the one home of a schedule's
 * occurrences: the first one (a create), the next one (a dispatch), the
 * earliest of them (what the runtime waits for and the dock counts down to),
 * and the last date any of them may be. No imports beyond types, so the
 * browser dock shares it with the host half.
 * @module dsh-plugin-loop/timing
 */
import type { LoopRecord } from '../types.ts'

/** The last instant a JavaScript `Date` can hold (+275760-09-13T00:00:00Z), in epoch milliseconds. */
export const LATEST_DATE_MS = 8_640_000_000_000_000

/** An occurrence as the log can hold it: past the last date a timestamp holds, the schedule stops there. */
function storable(occurrence: number): number {
  return Math.min(occurrence, LATEST_DATE_MS)
}

/**
 * The first occurrence of a schedule that starts at `now`: one interval later.
 * A create's always fits ({@link longestIntervalSeconds} bounds its interval);
 * a schedule the drive restarts after a clock correction stops at the last date.
 * @param seconds - the loop's interval.
 * @param now - when the schedule starts, in epoch milliseconds.
 * @returns its first `next_at`.
 */
export function firstOccurrence(seconds: number, now: number): number {
  return storable(now + seconds * 1000)
}

/**
 * The anti-burst advance (SPEC.md §5 "Runtime", missed intervals): skip whole missed
 * intervals so the result is strictly after `now`, on the loop's original grid.
 * A one-second loop delayed five seconds yields one heartbeat, not five.
 * @param loop - the loop being dispatched.
 * @param now - dispatch time.
 * @returns the next `next_at`.
 */
export function nextOccurrence(loop: LoopRecord, now: number): number {
  const intervalMs = loop.time_in_seconds * 1000
  const skipped = Math.floor((now - loop.next_at) / intervalMs) + 1
  return storable(loop.next_at + skipped * intervalMs)
}

/**
 * The earliest next occurrence: what the runtime waits for and the dock's summary counts down to.
 * @param loops - active loops.
 * @returns epoch milliseconds, or undefined without loops.
 */
export function earliestNextAt(loops: readonly LoopRecord[]): number | undefined {
  let earliest: number | undefined
  for (const loop of loops) if (earliest === undefined || loop.next_at < earliest) earliest = loop.next_at
  return earliest
}

/**
 * The longest interval a loop created at `now` may have: its first occurrence must still be a date.
 * @param now - creation time in epoch milliseconds.
 * @returns whole seconds.
 */
export function longestIntervalSeconds(now: number): number {
  return Math.floor((LATEST_DATE_MS - now) / 1000)
}

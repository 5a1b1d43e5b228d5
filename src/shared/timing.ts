/**
 * Pure time arithmetic over loop records that both bundles use. No imports
 * beyond types, so the browser dock shares it with the host half.
 * @module dsh-plugin-loop/timing
 */
import type { LoopRecord } from '../types.ts'

/** The last instant a JavaScript `Date` can hold (+275760-09-13T00:00:00Z), in epoch milliseconds. */
export const LATEST_DATE_MS = 8_640_000_000_000_000

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

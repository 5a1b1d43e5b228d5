/**
 * The drive's decision (SPEC.md §5 "Runtime", the drive), a pure function of the active
 * loops, `now` and the archive set: which loop a drive handles, where its
 * schedule moves, and when to wake. The runtime (`loop.ts`) carries it out; how
 * a heartbeat is delivered is the delivery rule of `delivery.ts`.
 * @module dsh-plugin-loop/drive
 */
import { earliestNextAt, firstOccurrence, nextOccurrence } from './shared/timing.ts'
import type { LoopRecord } from './types.ts'

/**
 * Longest single timer wait. Node's timers do not count time the machine is
 * suspended, and the wall clock can move under them, so every wait re-reads
 * the clock at least this often: an overdue loop fires within a minute of waking.
 * Far below Node's 2,147,483,647 ms limit (SPEC.md §5 "Runtime", the timer), so no
 * arm overflows.
 */
export const MAX_TIMER_WAIT_MS = 60_000

/** What one drive does. */
export type DriveDecision =
  /** Deliver the due loop's heartbeat and move its schedule to `nextAt`. */
  | { readonly kind: 'deliver'; readonly loop: LoopRecord; readonly nextAt: number }
  /** Move a loop a wrong clock scheduled too far ahead to `nextAt`, without a heartbeat. */
  | { readonly kind: 'reschedule'; readonly loop: LoopRecord; readonly nextAt: number }
  /** Nothing to do now: drive again after `delay` ms, or never (`undefined`) without loops. */
  | { readonly kind: 'wait'; readonly delay: number | undefined }

/**
 * One drive's decision (SPEC.md §5 "Runtime", the drive's decide step): the earliest loop
 * with `next_at <= now` (ties in creation order) is delivered. With none due,
 * the first loop more than one and a half intervals ahead (further than a create
 * or a dispatch ever schedules: only a clock set forward and then back puts it
 * there) starts its schedule again, one interval from now. Otherwise the drive
 * waits for the earliest `next_at`, at most {@link MAX_TIMER_WAIT_MS}. An
 * archived session is not driven: it only looks again within that minute, its
 * loops untouched.
 * @param loops - the active loops in creation order.
 * @param now - decision time.
 * @param archived - whether the session is in DSH's archive set.
 * @returns what the drive does.
 */
export function decideDrive(loops: readonly LoopRecord[], now: number, archived: boolean): DriveDecision {
  if (archived) return { kind: 'wait', delay: loops.length === 0 ? undefined : MAX_TIMER_WAIT_MS }
  let due: LoopRecord | undefined
  for (const loop of loops) if (loop.next_at <= now && (due === undefined || loop.next_at < due.next_at)) due = loop
  if (due !== undefined) return { kind: 'deliver', loop: due, nextAt: nextOccurrence(due, now) }
  const skewed = loops.find((loop) => loop.next_at - now > loop.time_in_seconds * 1500)
  if (skewed !== undefined)
    return { kind: 'reschedule', loop: skewed, nextAt: firstOccurrence(skewed.time_in_seconds, now) }
  const earliest = earliestNextAt(loops)
  return { kind: 'wait', delay: earliest === undefined ? undefined : Math.min(earliest - now, MAX_TIMER_WAIT_MS) }
}

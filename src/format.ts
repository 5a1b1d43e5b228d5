/**
 * Pure formatting for people: intervals, due times and thrown values, shared
 * by the `/loop` command replies, the runtime diagnostics and the dock.
 * @module dsh-plugin-loop/format
 */

const UNITS: readonly (readonly [suffix: string, seconds: number])[] = [
  ['d', 86_400],
  ['h', 3_600],
  ['m', 60],
  ['s', 1],
]

/**
 * Mixed-unit duration: `45s`, `1m 30s`, `2h`, `1d 2h 3m 4s`; zero units are omitted.
 * @param totalSeconds - non-negative whole seconds.
 * @returns the compact text.
 */
export function formatDuration(totalSeconds: number): string {
  let rest = Math.max(0, Math.floor(totalSeconds))
  const parts: string[] = []
  for (const [suffix, size] of UNITS) {
    const count = Math.floor(rest / size)
    rest -= count * size
    if (count > 0) parts.push(`${count}${suffix}`)
  }
  return parts.length === 0 ? '0s' : parts.join(' ')
}

/**
 * The interval label: `every 30s`, `every 1m 30s`.
 * @param seconds - the loop's `time_in_seconds`.
 * @returns the label.
 */
export function formatInterval(seconds: number): string {
  return `every ${formatDuration(seconds)}`
}

/** When the next occurrence is, relative to now. */
export interface NextDue {
  /** True once `next_at <= now`: the heartbeat is waiting for its drive. */
  readonly overdue: boolean
  /** `next in 8s` or `overdue by 3s`. */
  readonly text: string
}

/**
 * Describe a due time relative to now, rounding the countdown up so it never shows `0s` early.
 * @param nextAt - epoch milliseconds of the next occurrence.
 * @param now - epoch milliseconds.
 * @returns overdue flag and text.
 */
export function describeNextDue(nextAt: number, now: number): NextDue {
  if (nextAt <= now) return { overdue: true, text: `overdue by ${formatDuration((now - nextAt) / 1000)}` }
  return { overdue: false, text: `next in ${formatDuration(Math.ceil((nextAt - now) / 1000))}` }
}

/**
 * An instant as ISO 8601 UTC, total over every number: beyond the range a Date
 * represents (a record written before intervals were bounded) it says so instead of throwing.
 * @param epochMs - epoch milliseconds.
 * @returns `2026-11-30T00:00:07.000Z`, or `beyond the representable date range`.
 */
export function formatInstant(epochMs: number): string {
  const date = new Date(epochMs)
  return Number.isNaN(date.getTime()) ? 'beyond the representable date range' : date.toISOString()
}

/**
 * The message of anything thrown, for diagnostics.
 * @param error - a thrown value.
 * @returns its message, or its string form.
 */
export function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** One non-zero unit of a duration: `{ unit: 'm', count: 1 }` of `1m 30s`. */
export interface DurationPart {
  /** Days, hours, minutes or seconds. */
  readonly unit: 'd' | 'h' | 'm' | 's'
  /** How many of the unit, at least 1 (except the single `0s` part of a zero duration). */
  readonly count: number
}

/**
 * The same decomposition `formatDuration` prints, as data, so a translated
 * surface (the dock) can supply its own unit words: largest unit first, zero
 * units left out, `[{ unit: 's', count: 0 }]` for nothing.
 * @param totalSeconds - non-negative seconds; fractions are dropped.
 * @returns the parts in display order.
 */
export function durationParts(totalSeconds: number): readonly DurationPart[] {
  let rest = Math.max(0, Math.floor(totalSeconds))
  const parts: DurationPart[] = []
  for (const [unit, size] of UNITS) {
    const count = Math.floor(rest / size)
    rest -= count * size
    if (count > 0) parts.push({ unit: unit as DurationPart['unit'], count })
  }
  return parts.length === 0 ? [{ unit: 's', count: 0 }] : parts
}

/** `describeNextDue` as data: whether the occurrence is due, and the whole seconds to show. */
export interface DueIn {
  /** True once `next_at <= now`. */
  readonly overdue: boolean
  /** Seconds until `next_at` rounded up (never `0s` early), or seconds since it rounded down. */
  readonly seconds: number
}

/**
 * The rounding rule of `describeNextDue`, without the English words.
 * @param nextAt - epoch milliseconds of the next occurrence.
 * @param now - epoch milliseconds.
 * @returns overdue flag and whole seconds.
 */
export function dueIn(nextAt: number, now: number): DueIn {
  if (nextAt <= now) return { overdue: true, seconds: Math.floor((now - nextAt) / 1000) }
  return { overdue: false, seconds: Math.ceil((nextAt - now) / 1000) }
}

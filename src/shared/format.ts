/**
 * Pure formatting for people: intervals, due times and thrown values, shared
 * by the `/loop` command replies, the runtime diagnostics and the dock.
 * @module dsh-plugin-loop/format
 */

const UNITS: readonly (readonly [unit: DurationPart['unit'], seconds: number])[] = [
  ['d', 86_400],
  ['h', 3_600],
  ['m', 60],
  ['s', 1],
]

/** Mixed-unit duration of non-negative seconds: `45s`, `1m 30s`, `2h`, `1d 2h 3m 4s`; zero units are omitted. */
export function formatDuration(totalSeconds: number): string {
  return durationParts(totalSeconds)
    .map(({ unit, count }) => `${count}${unit}`)
    .join(' ')
}

/** The interval label of a loop's `time_in_seconds`: `every 30s`, `every 1m 30s`. */
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

/** A due time relative to now, the countdown rounded up so it never shows `0s` early. */
export function describeNextDue(nextAt: number, now: number): NextDue {
  const { overdue, seconds } = dueIn(nextAt, now)
  return { overdue, text: `${overdue ? 'overdue by' : 'next in'} ${formatDuration(seconds)}` }
}

/** An instant as ISO 8601 UTC (`2026-11-30T00:00:07.000Z`); total: beyond a Date's range it says so. */
export function formatInstant(epochMs: number): string {
  const date = new Date(epochMs)
  return Number.isNaN(date.getTime()) ? 'beyond the representable date range' : date.toISOString()
}

/** The message of anything thrown, or its string form, for diagnostics. */
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
 * The parts `formatDuration` prints, as data, so the dock can word them in its language:
 * largest unit first, zero units left out, `[{ unit: 's', count: 0 }]` for nothing; fractions dropped.
 */
export function durationParts(totalSeconds: number): readonly DurationPart[] {
  let rest = Math.max(0, Math.floor(totalSeconds))
  const parts: DurationPart[] = []
  for (const [unit, size] of UNITS) {
    const count = Math.floor(rest / size)
    rest -= count * size
    if (count > 0) parts.push({ unit, count })
  }
  return parts.length === 0 ? [{ unit: 's', count: 0 }] : parts
}

/** The data `describeNextDue` words: whether the occurrence is due, and the whole seconds to show. */
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

/** What a cut text ends with. */
const ELLIPSIS = '…'

/**
 * Cut text to at most `width` (≥ 1) code points, the last of them `…` when it was cut. Code
 * points, never UTF-16 units, so a cut never splits a surrogate pair; it stops reading at the cut.
 */
export function cutToWidth(text: string, width: number): string {
  // Each code point is one or two units: a text no longer in units than `width` fits without counting.
  if (text.length <= width) return text
  const points: string[] = []
  for (const point of text) {
    if (points.length === width) {
      points[width - 1] = ELLIPSIS
      return points.join('')
    }
    points.push(point)
  }
  return text
}

/** The mark a line break shows as when a prompt is printed on one line. */
const LINE_BREAK_MARK = '⏎'

/**
 * Every sequence a terminal or a text view may break a line at: CRLF as one
 * break, then LF, CR, vertical tab, form feed, NEL, and the Unicode line and
 * paragraph separators.
 */
const LINE_BREAKS = /\r\n|[\n\r\v\f\u0085\u2028\u2029]/g

/** How many code points of a prompt a one-line listing shows. */
const ONE_LINE_PROMPT_WIDTH = 80

/** A prompt as one line of a listing: each line break shown as `⏎`, so no line can pass for a row, then cut to `width`. */
export function promptOnOneLine(prompt: string, width: number = ONE_LINE_PROMPT_WIDTH): string {
  return cutToWidth(prompt.replace(LINE_BREAKS, LINE_BREAK_MARK), width)
}

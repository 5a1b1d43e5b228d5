/**
 * Pure rules of the loop dock: which layout a loop count gets, the text of a
 * row and of the collapsed summary, the delete command line, and how a
 * command executor's reply is read. All interval and countdown text comes from
 * `../format.ts`, the same rules the `/loop` command replies use.
 * @module dsh-plugin-loop/ui/dock
 */
import { describeError, describeNextDue, formatInterval, type NextDue } from '../format.ts'
import { earliestNextAt } from '../timing.ts'
import type { LoopProjection, LoopRecord } from '../types.ts'

/** From this many active loops on, the dock starts as one collapsed summary row. */
export const SUMMARY_THRESHOLD = 3

/** The local repaint period of countdowns, in milliseconds. */
export const REPAINT_MS = 1000

/** How the dock lays out a number of loops. */
export type DockLayout = 'hidden' | 'rows' | 'summary'

/**
 * 0 loops → nothing; 1 or 2 → one row each; 3 or more → a collapsed summary that expands.
 * @param count - active loops.
 * @returns the layout.
 */
export function dockLayout(count: number): DockLayout {
  if (count <= 0) return 'hidden'
  return count < SUMMARY_THRESHOLD ? 'rows' : 'summary'
}

/**
 * The active loops of a projection value; anything that is not a projection reads as none.
 * @param projection - what `useProjection('loop')` returned (`undefined` until it arrives).
 * @returns the loops in projection (creation) order.
 */
export function loopsOf(projection: LoopProjection | undefined): readonly LoopRecord[] {
  return Array.isArray(projection?.loops) ? projection.loops : []
}

/** What one row shows besides its prompt (the `↻` glyph is the component's, hidden from assistive technology). */
export interface RowText {
  /** `every 1m 30s`. */
  readonly interval: string
  /** `next in 8s`, or `overdue by 3s` with `overdue: true`. */
  readonly due: NextDue
}

/**
 * The interval and countdown of one loop at `now`.
 * @param loop - the loop.
 * @param now - epoch milliseconds.
 * @returns the row text.
 */
export function rowText(loop: LoopRecord, now: number): RowText {
  return { interval: formatInterval(loop.time_in_seconds), due: describeNextDue(loop.next_at, now) }
}

/**
 * The collapsed summary after its `↻` glyph: `4 active loops · next in 1s`, timed by the earliest `next_at`.
 * @param loops - at least one loop.
 * @param now - epoch milliseconds.
 * @returns the summary text and whether the earliest loop is overdue.
 */
export function summaryText(loops: readonly LoopRecord[], now: number): { readonly text: string; readonly overdue: boolean } {
  const due = describeNextDue(earliestNextAt(loops)!, now)
  return { text: `${loops.length} active loops · ${due.text}`, overdue: due.overdue }
}

/**
 * The exact command line the dock sends to delete a loop.
 * @param id - the loop id.
 * @returns `/loop delete <id>`.
 */
export function deleteCommand(id: string): string {
  return `/loop delete ${id}`
}

/** How a delete went: success, or a message for the row's alert. */
export type DeleteOutcome = { readonly ok: true } | { readonly ok: false; readonly message: string }

const failure = (reason: string): string => `Delete failed: ${reason}`
const failed = (reason: string): DeleteOutcome => ({ ok: false, message: failure(reason) })
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null
const nonEmpty = (value: unknown): value is string => typeof value === 'string' && value.trim() !== ''

/** The alert for a reply that is not a command result. */
export const MALFORMED_REPLY = failure('DSH sent an unexpected reply.')

/**
 * Read what the host's command executor resolved with
 * (`{ ok: true, value: { commandId, result: { kind, text } } }` on success).
 * @param reply - the executor's resolved value, untrusted.
 * @returns success only for a `success` command result; otherwise the alert text.
 */
export function readDeleteReply(reply: unknown): DeleteOutcome {
  if (!isObject(reply)) return { ok: false, message: MALFORMED_REPLY }
  if (reply.ok === false) {
    const error = reply.error
    return failed(isObject(error) && nonEmpty(error.message) ? error.message : 'the command was rejected.')
  }
  if (reply.ok !== true) return { ok: false, message: MALFORMED_REPLY }
  if (reply.value === undefined) return failed('the /loop command is not available in this session.')
  const result = isObject(reply.value) ? reply.value.result : undefined
  if (!isObject(result)) return { ok: false, message: MALFORMED_REPLY }
  if (result.kind === 'success') return { ok: true }
  if (result.kind === 'error') return failed(nonEmpty(result.text) ? result.text : 'the command reported an error.')
  return { ok: false, message: MALFORMED_REPLY }
}

/**
 * The alert for an executor that threw instead of resolving.
 * @param error - what was thrown.
 * @returns the alert text.
 */
export function thrownDeleteMessage(error: unknown): string {
  const reason = describeError(error)
  return failure(nonEmpty(reason) ? reason : 'the command could not be sent.')
}

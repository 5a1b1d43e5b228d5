/**
 * Pure rules of the loop dock: which layout a loop count gets, the collapsed
 * summary, the delete command line, and how a command executor's reply is
 * read. Words come from the `loop` dictionaries (`./locales.ts`); duration
 * units and countdown rounding from `../shared/format.ts`, the rules the `/loop`
 * command replies use.
 * @module dsh-plugin-loop/ui/dock
 */
import { describeError } from '../shared/format.ts'
import { isRecord } from '../shared/guards.ts'
import { earliestNextAt } from '../shared/timing.ts'
import type { LoopProjection, LoopRecord } from '../types.ts'
import { localDue, type LocalDue, type LoopTranslate } from './locales.ts'

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

/**
 * The collapsed summary after its `↻` glyph: `4 active loops · next in 1s`, timed by the earliest `next_at`.
 * @param t - the `loop` translate seat.
 * @param loops - at least one loop.
 * @param now - epoch milliseconds.
 * @returns the summary text and whether the earliest loop is overdue.
 */
export function summaryText(t: LoopTranslate, loops: readonly LoopRecord[], now: number): LocalDue {
  const due = localDue(t, earliestNextAt(loops)!, now)
  return { text: t('summary', { count: loops.length, due: due.text }), overdue: due.overdue }
}

/**
 * The exact command line the dock sends to delete a loop.
 * @param id - the loop id.
 * @returns `/loop delete <id>`.
 */
export function deleteCommand(id: string): string {
  return `/loop delete ${id}`
}

/** Why a delete failed, in words of the dictionary or relayed verbatim from the host or the command. */
export type DeleteFailure =
  | { readonly reason: 'rejected' | 'unavailable' | 'commandError' | 'malformed' | 'unsent' }
  | { readonly reason: 'relayed'; readonly text: string }

/** How a delete went: success, or why it failed. */
export type DeleteOutcome = { readonly ok: true } | { readonly ok: false; readonly failure: DeleteFailure }

const failed = (failure: DeleteFailure): DeleteOutcome => ({ ok: false, failure })
const MALFORMED = failed({ reason: 'malformed' })
const nonEmpty = (value: unknown): value is string => typeof value === 'string' && value.trim() !== ''
const relayedOr = (text: unknown, reason: 'rejected' | 'commandError' | 'unsent'): DeleteFailure =>
  nonEmpty(text) ? { reason: 'relayed', text } : { reason }

/**
 * Read what the host's command executor resolved with
 * (`{ ok: true, value: { commandId, result: { kind, text } } }` on success).
 * @param reply - the executor's resolved value, untrusted.
 * @returns success only for a `success` command result; otherwise why not.
 */
export function readDeleteReply(reply: unknown): DeleteOutcome {
  if (!isRecord(reply)) return MALFORMED
  if (reply.ok === false) return failed(relayedOr(isRecord(reply.error) ? reply.error.message : undefined, 'rejected'))
  if (reply.ok !== true) return MALFORMED
  if (reply.value === undefined) return failed({ reason: 'unavailable' })
  const result = isRecord(reply.value) ? reply.value.result : undefined
  if (!isRecord(result)) return MALFORMED
  if (result.kind === 'success') return { ok: true }
  if (result.kind === 'error') return failed(relayedOr(result.text, 'commandError'))
  return MALFORMED
}

/**
 * Why a delete failed when the executor threw instead of resolving.
 * @param error - what was thrown.
 * @returns the failure.
 */
export function thrownDeleteFailure(error: unknown): DeleteFailure {
  return relayedOr(describeError(error), 'unsent')
}

/**
 * The alert line of a failed delete in the active language: `Delete failed: <reason>`.
 * @param t - the `loop` translate seat.
 * @param failure - why it failed.
 * @returns the alert text.
 */
export function deleteFailureText(t: LoopTranslate, failure: DeleteFailure): string {
  return t('delete.failed', { reason: failure.reason === 'relayed' ? failure.text : t(`delete.${failure.reason}`) })
}

/**
 * The two from-scratch folds a drive is compared with: the plugin's own fold
 * of the whole log, and DSH's `foldScheduleEvents` (the host's approach: refold
 * `session.events` on every decision) over the same log with every
 * `loop/change` turned into the equivalent `schedule/change`.
 * @module scripts/bench/fold
 */
import { foldScheduleEvents } from '@deepseek-ai/dsh-schedule'
import type { SessionEvent } from '@deepseek-ai/dsh-session'
import { activeLoops, emptyLoopFold, foldLoopEvents } from '../../src/domain.ts'

/**
 * Fold a whole log with the plugin's fold, from an empty state.
 * @param events - the log.
 * @returns how many loops are active (so the work cannot be optimised away).
 */
export function foldLoopLog(events: readonly SessionEvent[]): number {
  return activeLoops(foldLoopEvents(emptyLoopFold(), events)).length
}

/**
 * Fold a schedule log with `foldScheduleEvents`.
 * @param events - a log from {@link toScheduleLog}.
 * @returns how many schedules are active.
 */
export function foldScheduleLog(events: readonly SessionEvent[]): number {
  return foldScheduleEvents(events, 0).active.length
}

const SCHEDULED_AT = '2099-01-01T00:00:00.000Z'

type LoopChangeData =
  { operation: 'create'; loop: { id: string; prompt: string } } | { operation: 'delete'; id: string }

/**
 * The same log with schedule events in the loop events' places (same count,
 * same positions); every other event is the identical object.
 * @param events - a log built by `LogWriter`.
 * @returns a frozen schedule log.
 */
export function toScheduleLog(events: readonly SessionEvent[]): SessionEvent[] {
  return events.map((event) => {
    if (event.type !== 'loop/change') return event
    const change = event.data as unknown as LoopChangeData
    const data =
      change.operation === 'create'
        ? {
            version: 1,
            operation: 'create',
            schedule: Object.freeze({
              id: change.loop.id,
              kind: 'every',
              prompt: change.loop.prompt,
              everySeconds: 300,
              scheduledAt: SCHEDULED_AT,
            }),
          }
        : { version: 1, operation: 'delete', id: change.id }
    return Object.freeze({ ...event, type: 'schedule/change', data: Object.freeze(data) }) as unknown as SessionEvent
  })
}

/**
 * The `loop` session projection: active records only, for the dock.
 * @module dsh-plugin-loop/projection
 */
import type { Context } from '@deepseek-ai/cordis'
import type { Session, SessionEvent } from '@deepseek-ai/dsh-session'
import type {} from '@deepseek-ai/dsh-session-projection'
import { z } from 'zod'
import {
  LOOP_CHANGE_EVENT,
  activeLoops,
  applyLoopChange,
  decodeLoopChange,
  emptyLoopTable,
  type LoopFoldState,
} from './domain.ts'
import type { LoopProjection } from './types.ts'

/** Projection key, also the dock's `useProjection` key. */
export const LOOP_PROJECTION_KEY = 'loop'

/** Bump when {@link LoopProjectionState} changes shape, so cached cells refold. */
const LOOP_PROJECTION_STATE_VERSION = 3

/** Wire schema of the `loop` projection value. */
export const loopProjectionSchema = z
  .object({
    loops: z.array(
      z
        .object({
          id: z.string(),
          prompt: z.string(),
          time_in_seconds: z.number().int().positive(),
          next_at: z.number().int().nonnegative(),
        })
        .strict(),
    ),
  })
  .strict()

/** Internal projection state: plain JSON, as projection caches require (no used-id set: see {@link LoopFoldState}). */
export interface LoopProjectionState {
  /** Active loops by id, in creation order. */
  readonly loops: LoopFoldState['loops']
  /** Set once a malformed record was met: the projection fails closed to no loops. */
  readonly corrupt: boolean
}

/**
 * Loop events a session inherited through a fork seed. The projection's `apply`
 * sees events but not `seedLength`, so inherited events are recognised by
 * identity; the runtime folds after `seedLength` the same way.
 */
const inheritedLoopEvents = new WeakSet<SessionEvent>()

/**
 * Remember the loop events before a session's seed boundary so its projection skips them.
 * @param session - a session being published (fresh fork, resumed fork, or plain).
 */
function markInheritedLoopEvents(session: Session): void {
  const seedLength = session.header.seedLength ?? 0
  // Only forks inherit; reading `events` would copy a long resumed log for nothing.
  if (seedLength === 0) return
  for (const event of session.events.slice(0, seedLength)) {
    if (event.type === LOOP_CHANGE_EVENT) inheritedLoopEvents.add(event)
  }
}

/** The state of a session with no loops. */
export function initLoopProjection(): LoopProjectionState {
  return { loops: emptyLoopTable(), corrupt: false }
}

/**
 * Reducer: the same object for every event it ignores (O(1) for unrelated
 * events); for a loop change, a new wrapper around the active loops, which
 * {@link applyLoopChange} updates in place. In-place updates are safe because
 * the registry keeps only the latest state of a cell (`cell.state = next`) and
 * checkpoints a structured clone; copying on every change is what made a long
 * session's projection quadratic. Reusing an id that is still active fails
 * closed here; reusing a deleted one is the runtime's to detect (it keeps the
 * used ids), so the projection's state stays the size of the active loops.
 * @param state - current state.
 * @param event - committed session event.
 * @returns the next state.
 */
export function applyLoopProjection(state: LoopProjectionState, event: SessionEvent): LoopProjectionState {
  if (event.type !== LOOP_CHANGE_EVENT || state.corrupt || inheritedLoopEvents.has(event)) return state
  try {
    applyLoopChange(state, decodeLoopChange(event.data))
    return { loops: state.loops, corrupt: false }
  } catch {
    return { loops: emptyLoopTable(), corrupt: true }
  }
}

/**
 * The wire value: only the active records, in creation order.
 * @param state - current state.
 * @returns `{ loops }`.
 */
export function viewLoopProjection(state: LoopProjectionState): LoopProjection {
  return { loops: activeLoops(state) }
}

/**
 * Register the projection when the host has a projection registry, and mark the
 * inherited events of every session so forks never show their parent's loops.
 * @param ctx - plugin context carrying `sessions`.
 */
export function registerLoopProjection(ctx: Context): void {
  for (const session of ctx.sessions.list()) markInheritedLoopEvents(session)
  // Prepended: another plugin's listener may append to the fork, which folds the
  // projection over the seed; the inherited events must be marked before that.
  ctx.on('session/created', (session) => markInheritedLoopEvents(session), { prepend: true })
  ctx.inject(['sessionProjections'], (projectionCtx) => {
    projectionCtx.sessionProjections.register({
      key: LOOP_PROJECTION_KEY,
      schema: loopProjectionSchema,
      init: initLoopProjection,
      apply: applyLoopProjection,
      view: viewLoopProjection,
      stateVersion: LOOP_PROJECTION_STATE_VERSION,
    })
  })
}

/**
 * The `loop` session projection the dock reads: a pure reducer whose state is
 * the fold of `fold.ts`, the one the runtime uses, so the dock and the runtime
 * agree on every log. Its view is the active records only.
 * @module dsh-plugin-loop/projection
 */
import type { Context } from '@deepseek-ai/cordis'
import type { Session, SessionEvent } from '@deepseek-ai/dsh-session'
import type {} from '@deepseek-ai/dsh-session-projection'
import { z } from 'zod'
import { EMPTY_LOOP_FOLD, LOOP_CHANGE_EVENT, foldLoopChange, type LoopFold } from './fold.ts'
import { LOOP_PROJECTION_KEY } from './shared/projection-key.ts'
import type { LoopProjection } from './types.ts'

/** Bump when the state's shape or the fold's meaning changes, so cached cells refold. */
const LOOP_PROJECTION_STATE_VERSION = 6

/**
 * The event DSH's sub-agent manager writes first in a delegated session (after a
 * `subagent_fork`'s inherited prefix). Such a session never gets loops of its own
 * (src/index.ts), so from it on the projection shows none, in a live fold and in
 * DSH web's fold of a stored log alike, neither of which sees the session header.
 */
const SUBAGENT_DESCRIPTOR_EVENT = 'subagent/descriptor'

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

/**
 * Loop events a session inherited through a fork seed. `apply` sees events but
 * not `seedLength`, so inherited events are recognised by identity (a fork's
 * seed events are its own copies); the runtime folds after `seedLength` instead.
 * The one state this module keeps, because the host gives `apply` no other way.
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
  const events = session.events
  for (let index = 0; index < seedLength; index += 1)
    if (events[index]!.type === LOOP_CHANGE_EVENT) inheritedLoopEvents.add(events[index]!)
}

/**
 * The reducer: every other event, and a fork's inherited loop event, returns the
 * same state; a loop change returns the next fold; a sub-agent's descriptor, no loops.
 * @param state - the fold so far.
 * @param event - a committed session event.
 * @returns the next fold.
 */
export function applyLoopProjection(state: LoopFold, event: SessionEvent): LoopFold {
  // A type the host's typed event map does not list, so compared as a string.
  if ((event.type as string) === SUBAGENT_DESCRIPTOR_EVENT) return EMPTY_LOOP_FOLD
  if (event.type !== LOOP_CHANGE_EVENT || inheritedLoopEvents.has(event)) return state
  return foldLoopChange(state, event.data)
}

/**
 * The wire value: only the active records, in creation order (none once the log is corrupt).
 * @param state - the fold.
 * @returns `{ loops }`.
 */
export function viewLoopProjection(state: LoopFold): LoopProjection {
  return { loops: [...state.loops] }
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
      init: () => EMPTY_LOOP_FOLD,
      apply: applyLoopProjection,
      view: viewLoopProjection,
      stateVersion: LOOP_PROJECTION_STATE_VERSION,
    })
  })
}

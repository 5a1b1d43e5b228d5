/**
 * The `loop` session projection the dock reads: a pure reducer over the fold of
 * `fold.ts`, the one the runtime uses, so the dock and the runtime agree on every
 * log this plugin writes. Its state keeps what a reader needs of that fold (the
 * active records, and why none once the log is corrupt); its view, the records.
 * @module dsh-plugin-loop/projection
 */
import type { Context } from '@deepseek-ai/cordis'
import type { Session, SessionEvent } from '@deepseek-ai/dsh-session'
import type {} from '@deepseek-ai/dsh-session-projection'
import type {} from '@deepseek-ai/dsh-session-projection/types'
import { z } from 'zod'
import { LOOP_CHANGE_EVENT, foldLoopChange, type LoopFold } from './fold.ts'
import { LOOP_PROJECTION_KEY } from './shared/projection-key.ts'
import type { LoopProjection } from './types.ts'

declare module '@deepseek-ai/dsh-session-projection/types' {
  interface SessionProjectionMap {
    /** Active loops of one session, read by the inline dock and the heartbeat row. */
    [LOOP_PROJECTION_KEY]: LoopProjection
  }
}

/** Bump when the state's shape or the fold's meaning changes, so cached cells refold. */
const LOOP_PROJECTION_STATE_VERSION = 7

/** The projection's state: the fold without its id counter, which only the runtime's next create reads. */
export type ProjectedLoops = Pick<LoopFold, 'loops' | 'corrupt'>

/** The state of a session without loops. */
const NO_LOOPS: ProjectedLoops = Object.freeze({ loops: Object.freeze([]) })

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
 * The reducer: every other event, a fork's inherited loop event and any event
 * after a corrupt record return the same state; a loop change returns the next
 * fold's records; a sub-agent's descriptor, no loops.
 * @param state - the state so far.
 * @param event - a committed session event.
 * @returns the next state.
 */
export function applyLoopProjection(state: ProjectedLoops, event: SessionEvent): ProjectedLoops {
  // A type the host's typed event map does not list, so compared as a string.
  if ((event.type as string) === SUBAGENT_DESCRIPTOR_EVENT) return NO_LOOPS
  if (event.type !== LOOP_CHANGE_EVENT || inheritedLoopEvents.has(event) || state.corrupt !== undefined) return state
  // The fold's id counter starts at 0 here and is dropped: no reader of the projection allocates an id.
  const { loops, corrupt } = foldLoopChange({ ...state, lastIdNumber: 0 }, event.data)
  return corrupt === undefined ? { loops } : { loops, corrupt }
}

/**
 * The wire value: only the active records, in creation order (none once the log is corrupt).
 * @param state - the fold.
 * @returns `{ loops }`.
 */
export function viewLoopProjection(state: ProjectedLoops): LoopProjection {
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
      init: () => NO_LOOPS,
      apply: applyLoopProjection,
      view: viewLoopProjection,
      stateVersion: LOOP_PROJECTION_STATE_VERSION,
    })
  })
}

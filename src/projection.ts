/**
 * The `loop` session projection: active records only, for the dock.
 * @module dsh-plugin-loop/projection
 */
import type { Context } from '@deepseek-ai/cordis'
import type { Session, SessionEvent } from '@deepseek-ai/dsh-session'
import type {} from '@deepseek-ai/dsh-session-projection'
import { z } from 'zod'
import { LOOP_CHANGE_EVENT, LoopTable, UsedIdLog, applyStoredChange, type TrackedLoopFold } from './domain.ts'
import type { LoopProjection, LoopRecord } from './types.ts'

/** Projection key, also the dock's `useProjection` key. */
export const LOOP_PROJECTION_KEY = 'loop'

/** Bump when {@link LoopProjectionState} changes shape, so cached cells refold. */
const LOOP_PROJECTION_STATE_VERSION = 4

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
 * Internal projection state: plain JSON, as projection caches require. The
 * fold's table and used ids live beside it ({@link ProjectedFold}), never in it.
 */
export interface LoopProjectionState {
  /** Active loops in creation order; the fold updates this array in place. */
  readonly loops: LoopRecord[]
  /** Set once a malformed record was met: the projection fails closed to no loops. */
  readonly corrupt: boolean
  /** The seq of the last event applied (-1 before the first); updated in place for every event. */
  seq: number
}

/**
 * What the projection knows about one fold beyond its JSON state: the table over
 * `state.loops`, and, for a fold that has applied every event of its log from the
 * first (a registry cell built over the live log, not a cache row), the ids the
 * session used, so the runtime can take the fold instead of reading the log a
 * second time ({@link takeProjectedFold}). The fold itself never checks an id
 * against the used ones: it shows the log as it is, and a reuse is found when
 * the runtime takes it.
 */
interface ProjectedFold {
  readonly active: LoopTable
  /** Kept until the fold misses an event, meets a corrupt record or starts from a cache row. */
  usedIds: UsedIdLog | undefined
  /** The state the fold produced last, whose `seq` says how far it has read. */
  state: LoopProjectionState
  /** The lowest seq of a change applied, so a fold that took a fork's inherited change is never handed on. */
  firstChangeSeq: number
}

/** Folds that began at a log's first event, by that event: a session's events are its own objects. */
const foldsByFirstEvent = new WeakMap<SessionEvent, ProjectedFold>()

/** Each fold, by the `loops` array that all its states share: what {@link adopt} looks up. */
const foldsByLoops = new WeakMap<LoopRecord[], ProjectedFold>()

/**
 * The state this module made or returned last, and its fold: the registry hands
 * it straight back for the next event, so the fold is found without a lookup.
 * Holds one fold alive after its session is gone, until the next fold is used.
 */
let currentState: LoopProjectionState | undefined
let currentFold: ProjectedFold | undefined

/** A fold of its own for a state, which becomes {@link currentState}. */
function startFold(state: LoopProjectionState, usedIds: UsedIdLog | undefined): LoopProjectionState {
  const fold = { active: new LoopTable(state.loops), usedIds, state, firstChangeSeq: Number.POSITIVE_INFINITY }
  foldsByLoops.set(state.loops, fold)
  currentState = state
  currentFold = fold
  return state
}

/**
 * Make a state handed back that is not {@link currentState} the current one:
 * another cell's latest state; an earlier state of one of this module's folds
 * (the registry's `restore` returns its result as a checkpoint row, which a
 * caller may restore from again), whose `loops` the fold has moved on since, so
 * the fold's latest state is copied instead; or a cache row, which is copied so
 * that nothing the projection cache holds is ever changed in place.
 */
function adopt(state: LoopProjectionState): LoopProjectionState {
  const fold = foldsByLoops.get(state.loops)
  if (fold?.state === state) {
    currentState = state
    currentFold = fold
    return state
  }
  const from = fold?.state ?? state
  // A row of a fold that had read nothing has used no ids; any other row cannot know them.
  const used = from.seq === -1 && from.loops.length === 0 ? new UsedIdLog() : undefined
  return startFold({ loops: from.loops.slice(), corrupt: false, seq: from.seq }, used)
}

/**
 * Loop events a session inherited through a fork seed. The projection's `apply`
 * sees events but not `seedLength`, so inherited events are recognised by
 * identity; the runtime folds after `seedLength` the same way.
 */
const inheritedLoopEvents = new WeakSet<SessionEvent>()

/** Whether any event was ever marked inherited: until then `apply` skips the lookup. */
let anyInherited = false

/**
 * Remember the loop events before a session's seed boundary so its projection skips them.
 * @param session - a session being published (fresh fork, resumed fork, or plain).
 */
function markInheritedLoopEvents(session: Session): void {
  const seedLength = session.header.seedLength ?? 0
  // Only forks inherit; reading `events` would copy a long resumed log for nothing.
  if (seedLength === 0) return
  for (const event of session.events.slice(0, seedLength)) {
    if (event.type !== LOOP_CHANGE_EVENT) continue
    inheritedLoopEvents.add(event)
    anyInherited = true
  }
}

/** The state of a session with no loops. */
export function initLoopProjection(): LoopProjectionState {
  return startFold({ loops: [], corrupt: false, seq: -1 }, new UsedIdLog())
}

/**
 * Reducer. Every event moves `seq` on in place; an event at or below it was read
 * already and changes nothing. For an ignored event the same object comes back
 * (O(1)); for a loop change, a new wrapper around the active loops, which
 * {@link applyStoredChange} updates in place. In-place updates are safe because the
 * registry keeps only the latest state of a cell (`cell.state = next`) and
 * checkpoints a structured clone, and a cache row is copied before its first
 * change ({@link adopt}); copying on every change is what made a long session's
 * projection quadratic. A corrupt state is final.
 * @param state - current state.
 * @param event - committed session event.
 * @returns the next state.
 */
export function applyLoopProjection(state: LoopProjectionState, event: SessionEvent): LoopProjectionState {
  if (state.corrupt) return state
  if (state !== currentState) state = adopt(state)
  const fold = currentFold!
  const seq = event.seq
  if (seq !== state.seq + 1) {
    if (seq <= state.seq) return state
    // A gap: the fold missed events, so it no longer stands for the whole log.
    fold.usedIds = undefined
  }
  if (seq === 0) foldsByFirstEvent.set(event, fold)
  state.seq = seq
  if (event.type !== LOOP_CHANGE_EVENT || (anyInherited && inheritedLoopEvents.has(event))) return state
  // The runtime reads the log itself for any record this fold refuses or cannot judge, and meets it with its own diagnostic.
  try {
    applyStoredChange(fold, event.data)
  } catch {
    fold.usedIds = undefined
    return { loops: [], corrupt: true, seq }
  }
  if (fold.firstChangeSeq > seq) fold.firstChangeSeq = seq
  const next = { loops: state.loops, corrupt: false, seq }
  fold.state = next
  currentState = next
  return next
}

/**
 * The fold the `loop` projection already made of a session's log, as a copy the
 * runtime owns, so a resumed session's log is read once for both. Only a fold
 * that began at this log's first event, applied every event since and none of
 * the fork's inherited changes, and created no id twice, qualifies; the caller
 * folds the events after it.
 * @param events - the session's whole log.
 * @param from - the seed boundary: the fold must hold no change before it.
 * @returns the fold and the position to continue at, or undefined when there is none to take.
 */
export function takeProjectedFold(
  events: readonly SessionEvent[],
  from: number,
): { readonly fold: TrackedLoopFold; readonly next: number } | undefined {
  const first = events[0]
  const fold = first === undefined ? undefined : foldsByFirstEvent.get(first)
  // A fold that has not read up to the seed boundary would leave the runtime folding inherited changes.
  if (fold?.usedIds === undefined || fold.firstChangeSeq < from || fold.state.seq + 1 < from) return undefined
  if (fold.state.seq >= events.length) return undefined
  // A deleted id created again has no set: the runtime reads the log itself and stops there.
  const usedIds = fold.usedIds.toSet()
  return usedIds === undefined ? undefined : { fold: { active: fold.active.copy(), usedIds }, next: fold.state.seq + 1 }
}

/**
 * The wire value: only the active records, in creation order.
 * @param state - current state.
 * @returns `{ loops }`.
 */
export function viewLoopProjection(state: LoopProjectionState): LoopProjection {
  return { loops: state.loops.slice() }
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

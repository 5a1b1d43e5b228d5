/**
 * The persistence barrier and the host event-catalog registration.
 * @module dsh-plugin-loop/persistence
 */
import type { Context } from '@deepseek-ai/cordis'
import type { Session } from '@deepseek-ai/dsh-session'
import * as ownSessionModule from '@deepseek-ai/dsh-session'
import { LOOP_CHANGE_EVENT } from './fold.ts'
import { LoopError } from './errors.ts'
import { describeError } from './shared/format.ts'

/**
 * Require one acknowledged flush of the session's pending events.
 * `false` (no persistence listened), a rejection and a throw are all failures.
 * @param ctx - context carrying `ctx.sessions`.
 * @param session - the live session to flush.
 * @throws LoopError `persistence_failed`.
 */
export async function flushSession(ctx: Context, session: Session): Promise<void> {
  let acknowledged: boolean
  try {
    acknowledged = await ctx.sessions.flush(session)
  } catch (error) {
    throw new LoopError('persistence_failed', `Session persistence failed: ${describeError(error)}`, { cause: error })
  }
  if (!acknowledged)
    throw new LoopError(
      'persistence_failed',
      'Session persistence did not acknowledge the flush; no persistence is mounted for this session.',
    )
}

/** The one mutable shape we need from a `KNOWN_SESSION_EVENT_TYPES` instance. */
type EventTypeCatalog = Set<string>

/** The catalog a module exports, when it exports one we can extend. */
function catalogOf(module: unknown): EventTypeCatalog | undefined {
  const catalog = (module as { KNOWN_SESSION_EVENT_TYPES?: unknown } | undefined)?.KNOWN_SESSION_EVENT_TYPES
  return catalog instanceof Set ? (catalog as EventTypeCatalog) : undefined
}

/** Where `loop/change` was registered: how many distinct catalogs, and whether the host's own copy was found. */
export interface EventTypeRegistration {
  readonly catalogs: number
  readonly hostResolved: boolean
}

/**
 * Add `loop/change` to the persisted-event catalog of our `@deepseek-ai/dsh-session` and of the
 * host's (`inspectHost`), which a plugin installed in a profile does not always share.
 * The entry stays after disposal (SPEC.md §3 "Durable events", event catalog).
 * @param hostModule - the host's `@deepseek-ai/dsh-session`, if found.
 */
export function registerLoopEventType(hostModule: unknown): EventTypeRegistration {
  const catalogs = new Set<EventTypeCatalog>()
  for (const module of [ownSessionModule, hostModule]) {
    const catalog = catalogOf(module)
    if (catalog !== undefined) catalogs.add(catalog)
  }
  for (const catalog of catalogs) catalog.add(LOOP_CHANGE_EVENT)
  return { catalogs: catalogs.size, hostResolved: catalogOf(hostModule) !== undefined }
}

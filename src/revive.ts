/**
 * The start-up path of a long-lived host: once DSH has finished loading, the
 * lease holder finds the sessions holding active loops (hint files and
 * projection checkpoints, never a scan of every log), reads only those in
 * full, and brings each one live through the host's own resolver (the Typert
 * lookup `agent`), exactly as opening it in DSH web does. The plugin owns no
 * scheduler: each session's runtime then arms its own timer, as for any
 * session that comes live.
 *
 * Real time, not the clock port (src/clock.ts): hint times are compared with file
 * modification times the kernel stamps, and the polls are unref'd Node timers
 * (a poll must not keep the process alive), which the port's opaque handle does
 * not offer; its tests fake the globals instead.
 * @module dsh-plugin-loop/revive
 */
import { join } from 'node:path'
import type { Context } from '@deepseek-ai/cordis'
import type { SessionHeader, SessionId } from '@deepseek-ai/dsh-session'
import type {} from '@deepseek-ai/dsh-session-persistence'
import { activeLoops, emptyLoopFold, foldLoopEvents } from './domain.ts'
import { LoopError } from './errors.ts'
import { describeError } from './format.ts'
import { Lease, LEASE_REFRESH_MS } from './lease.ts'
import { describeHolder, describeRevival, describeSkip, planRevival, type Skipped } from './revive-plan.ts'
import { createReport, type LoopReport } from './report.ts'
import { SessionHints } from './session-hints.ts'

/** How many sessions are read and brought live at once: the start stays responsive. */
export const REVIVE_CONCURRENCY = 4
/** How often a host that does not hold the lease checks whether it can take over. */
const LEASE_POLL_MS = 5_000

/** The plugin's files in one DSH home. */
export interface LoopHomeFiles {
  readonly hints: SessionHints
  readonly lease: Lease
}

/**
 * The plugin's files in the running host's home (`$DSH_HOME/storages/loop`), or
 * undefined when DSH provides no home (`dshHomePath`, which `dsh-app-boot` provides to every profile).
 * @param ctx - plugin context.
 */
export function loopHomeFiles(ctx: Context): LoopHomeFiles | undefined {
  const home = ctx.get('dshHomePath') as ((...segments: string[]) => string) | undefined
  if (home === undefined) return undefined
  const dir = home('storages', 'loop')
  return { hints: new SessionHints(join(dir, 'sessions')), lease: new Lease(dir) }
}

/**
 * The durable hint a create writes before it is queued, so a loop confirmed a
 * moment before a crash is still found at the next start. A failure refuses the create.
 * @param hints - the hint directory.
 * @param sessionId - the creating session.
 * @throws LoopError `persistence_failed`; nothing was appended.
 */
export async function noteSessionHint(hints: SessionHints, sessionId: string): Promise<void> {
  try {
    await hints.note(sessionId, Date.now())
  } catch (error) {
    throw new LoopError(
      'persistence_failed',
      `loop_create could not record this session for the next DSH start (${hints.dir}); nothing was saved. ${describeError(error)}`,
      { cause: error },
    )
  }
}

/** The host's `agent` lookup as far as it is used here (typed locally: the Typert packages are not dependencies). */
interface AgentLookup {
  resolve(sessionId: string): unknown
}

/** What the start-up path reads from the host, resolved once the loader settled. */
interface HostServices {
  readonly lookup: AgentLookup
  readonly persistence: Context['sessionPersistence']
}

/** Options of {@link startRevival}. */
export interface RevivalOptions extends LoopHomeFiles {
  /** Whether the setting `resumeOnStart` is on, read when the host has loaded. */
  readonly enabled: () => boolean
}

/** The loop projection value's shape as far as the checkpoint hint reads it. */
interface CheckpointedLoops {
  readonly loops?: readonly unknown[]
}

/**
 * Bring back the sessions holding loops once the host has loaded, if this
 * process is a long-lived host, the setting is on and it holds the lease.
 * Runs in the background: `apply` must return before the loader can settle.
 * @param ctx - plugin context.
 * @param options - setting, hints and lease.
 * @returns disposer: stops polling and refreshing, releases the lease; brought-back sessions stay live (the host owns them).
 */
export function startRevival(ctx: Context, options: RevivalOptions): () => Promise<void> {
  // The start-up report: the host log and the terminal (src/report.ts).
  const report = createReport(ctx.logger('loop'))
  const abort = new AbortController()
  let timer: ReturnType<typeof setTimeout> | undefined
  let holding = false
  let announced = false
  /** The step in flight (the first claim, a poll or a refresh): the disposer waits for it. */
  let current: Promise<void> = Promise.resolve()

  const run = (step: () => Promise<void>): void => {
    current = step().catch((error: unknown) => report.warn(`resume on start: ${describeError(error)}`))
  }

  const later = (delay: number, step: () => Promise<void>): void => {
    if (abort.signal.aborted) return
    timer = setTimeout(() => run(step), delay)
    // A poll must never keep a process alive that is otherwise done.
    timer.unref()
  }

  const refresh = async (): Promise<void> => {
    if (await options.lease.refresh()) return later(LEASE_REFRESH_MS, refresh)
    holding = false
    report.warn(
      'the loop lease on this DSH_HOME was taken over by another process; this one keeps the sessions it already brought back',
    )
  }

  const claim = (services: HostServices) => async (): Promise<void> => {
    const outcome = await options.lease.acquire()
    // Set before the abort check, so a disposer racing the acquire still releases what it took.
    holding = outcome.held
    if (abort.signal.aborted) return
    if (!outcome.held) {
      // Said once; on the first look the holder may be mid-takeover (no readable record yet).
      if (!announced && outcome.holder !== undefined) report.notice(describeHolder(outcome.holder))
      announced ||= outcome.holder !== undefined
      return later(LEASE_POLL_MS, claim(services))
    }
    later(LEASE_REFRESH_MS, refresh)
    await reviveSessions(ctx, services, options.hints, report, abort.signal)
  }

  const begin = async (): Promise<void> => {
    // Waiting inside `apply` would deadlock: the loader settles only when every plugin's apply has returned.
    await ctx.get('loader')?.await()
    // A one-shot run brings nothing back: it exits when its own task ends.
    if (ctx.get('headlessStartup') !== undefined) return
    const services = hostServices(ctx)
    if (services === undefined) return
    if (!options.enabled()) {
      report.notice(
        'resumeOnStart is off: no session is brought back at start; sessions holding loops come back when opened',
      )
      return
    }
    await claim(services)()
  }

  run(begin)
  return async () => {
    abort.abort()
    clearTimeout(timer)
    await current
    if (holding) await options.lease.release()
  }
}

/** The host's resolver and persistence, present only in a long-lived host after loading. */
function hostServices(ctx: Context): HostServices | undefined {
  const typert = ctx.get('typert') as { lookups?: { get(key: string): AgentLookup | undefined } } | undefined
  const lookup = typert?.lookups?.get('agent')
  const persistence = ctx.get('sessionPersistence')
  return lookup === undefined || persistence === undefined ? undefined : { lookup, persistence }
}

/** Sessions whose projection checkpoint (`sessionProjectionCache`, no I/O) still shows active loops. */
function checkpointedSessions(ctx: Context, headers: readonly SessionHeader[]): Set<string> {
  const cache = ctx.get('sessionProjectionCache') as
    { cachedSnapshot(meta: SessionHeader): { values: { loop?: CheckpointedLoops } } | undefined } | undefined
  const found = new Set<string>()
  if (cache === undefined) return found
  for (const header of headers) {
    if ((cache.cachedSnapshot(header)?.values.loop?.loops?.length ?? 0) > 0) found.add(header.id)
  }
  return found
}

/**
 * Find and bring back the sessions holding loops, a few at a time, most recently active first.
 * @param ctx - plugin context.
 * @param services - the host's resolver and persistence.
 * @param hints - the hint directory.
 * @param report - where the start-up report goes.
 * @param signal - aborted when the plugin unloads: no further session is started.
 * @returns how many were brought back, and every skip.
 */
async function reviveSessions(
  ctx: Context,
  services: HostServices,
  hints: SessionHints,
  report: LoopReport,
  signal: AbortSignal,
): Promise<{ readonly revived: string[]; readonly skipped: Skipped[] }> {
  // A hint written after this instant (a create racing the start) is never dropped as stale.
  const listedAt = Date.now()
  const hinted = await hints.read()
  // No hint and the checkpoint scan done once: nothing can hold a loop, so not even the headers are listed.
  const scan = !(await hints.scanned())
  if (hinted.size === 0 && !scan) {
    report.notice(describeRevival(0, []))
    return { revived: [], skipped: [] }
  }
  const headers = await services.persistence.list(signal)
  const archived = new Set<string>(
    (ctx.get('workspaceRegistry') as { archivedSessionIds?: readonly string[] } | undefined)?.archivedSessionIds ?? [],
  )
  const plan = planRevival({ sessions: headers, hinted, checkpointed: checkpointedSessions(ctx, headers), archived })
  const skipped: Skipped[] = []
  const revived: string[] = []
  const skip = (entry: Skipped, detail?: string): void => {
    skipped.push(entry)
    report.notice(describeSkip(entry, detail))
  }
  const listed = new Set<string>(headers.map((header) => header.id))
  for (const entry of plan.skipped) {
    skip(entry)
    // A hint naming no stored session can never be right again.
    if (!listed.has(entry.id)) await hints.drop(entry.id, listedAt)
  }
  const queue = [...plan.candidates]
  const worker = async (): Promise<void> => {
    for (let id = queue.shift(); id !== undefined && !signal.aborted; id = queue.shift()) {
      const outcome = await reviveOne(ctx, services, hints, id, signal)
      if (outcome === 'revived') revived.push(id)
      else skip({ id, reason: outcome.reason }, outcome.detail)
    }
  }
  await Promise.all(Array.from({ length: REVIVE_CONCURRENCY }, worker))
  // Sessions from before hints existed were found through their checkpoints just now; later ones always have a hint.
  if (scan) await hints.markScanned()
  report.notice(describeRevival(revived.length, skipped))
  return { revived, skipped }
}

/**
 * A failed lookup's own words: DSH web's resolver throws a `TypertLookupFailure`
 * whose message is generic and whose `failure` carries the cause (`{ code, message }`).
 */
function describeLookupError(error: unknown): string {
  const failure = (error as { failure?: { code?: unknown; message?: unknown } }).failure
  return typeof failure?.message === 'string' ? `${String(failure.code)}: ${failure.message}` : describeError(error)
}

/** One candidate: read it, and bring it live only if it holds an active loop. */
async function reviveOne(
  ctx: Context,
  services: HostServices,
  hints: SessionHints,
  id: string,
  signal: AbortSignal,
): Promise<'revived' | { readonly reason: Skipped['reason']; readonly detail?: string }> {
  // Opened meanwhile (a browser tab, a prompt): it is live with its loops already.
  if (ctx.agents.get(id as SessionId) !== undefined) return 'revived'
  const readSince = Date.now()
  let active: number
  try {
    const { meta, events } = await services.persistence.inspect(id as SessionId, signal)
    // A fork's inherited loops are not its own (SPEC.md, "Durable events").
    active = activeLoops(foldLoopEvents(emptyLoopFold(), events.slice(meta.seedLength ?? 0))).length
  } catch (error) {
    return { reason: 'unreadable', detail: describeError(error) }
  }
  if (active === 0) {
    // Untouched: no resume, so its log stays byte-identical. The stale hint goes.
    await hints.drop(id, readSince)
    return { reason: 'no-loops' }
  }
  try {
    const agent = await ctx.agents.withoutInitiator(() => services.lookup.resolve(id))
    return agent === undefined ? { reason: 'unresolved' } : 'revived'
  } catch (error) {
    return { reason: 'unresolved', detail: describeLookupError(error) }
  }
}

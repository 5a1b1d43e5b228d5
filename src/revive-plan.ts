/**
 * Pure rules of the start-up path: which sessions a long-lived host brings
 * back, in which order, why the others are skipped, when a lease is stale,
 * and the log lines that say so. No I/O, no host.
 * @module dsh-plugin-loop/revive-plan
 */

/** What the plan reads of one listed session header (`sessionPersistence.list()`). */
export interface ListedSession {
  readonly id: string
  readonly createdAt: number
  readonly cwd?: string
  readonly origin?: 'subagent'
}

/** Why a session was not brought back. */
export type SkipReason = 'archived' | 'subagent' | 'missing' | 'unreadable' | 'no-loops' | 'unresolved'

/** The words each reason is logged with. */
const SKIP_WORDS: { readonly [Reason in SkipReason]: string } = {
  archived: 'archived in DSH web',
  subagent: 'owned by a subagent',
  missing: 'its session directory is gone',
  unreadable: 'its log cannot be read',
  'no-loops': 'no active loop',
  unresolved: 'the host could not bring it live',
}

/** One skipped session and why. */
export interface Skipped {
  readonly id: string
  readonly reason: SkipReason
}

/** Inputs of {@link planRevival}: everything found without reading a log. */
export interface RevivalInput {
  /** Every stored session's header. */
  readonly sessions: readonly ListedSession[]
  /** Session ids named by the plugin's hint files, with when each was last written (epoch ms). */
  readonly hinted: ReadonlyMap<string, number>
  /** Sessions whose last projection checkpoint still shows active loops (a second, older hint). */
  readonly checkpointed: ReadonlySet<string>
  /** Sessions DSH web archived. */
  readonly archived: ReadonlySet<string>
}

/** The candidates to read in full, most recently active first, and what was skipped outright. */
export interface RevivalPlan {
  readonly candidates: readonly string[]
  readonly skipped: readonly Skipped[]
}

/**
 * Choose the sessions to read in full. A session is a candidate when a hint or
 * a checkpoint names it; archived, subagent-owned and directory-less sessions
 * are skipped; a hint naming no stored session is skipped as `missing`.
 * Candidates are ordered by the hint's time (else the session's creation), newest first.
 * @param input - headers and hints.
 * @returns the plan.
 */
export function planRevival(input: RevivalInput): RevivalPlan {
  const skipped: Skipped[] = []
  const ranked: { id: string; rank: number }[] = []
  const listed = new Set<string>()
  for (const session of input.sessions) {
    listed.add(session.id)
    if (!input.hinted.has(session.id) && !input.checkpointed.has(session.id)) continue
    if (input.archived.has(session.id)) skipped.push({ id: session.id, reason: 'archived' })
    else if (session.origin === 'subagent') skipped.push({ id: session.id, reason: 'subagent' })
    // The host's resolver serves only sessions stored with a working directory.
    else if (session.cwd === undefined) skipped.push({ id: session.id, reason: 'missing' })
    else ranked.push({ id: session.id, rank: input.hinted.get(session.id) ?? session.createdAt })
  }
  for (const id of input.hinted.keys()) if (!listed.has(id)) skipped.push({ id, reason: 'missing' })
  ranked.sort((a, b) => b.rank - a.rank || Number(a.id > b.id) - Number(a.id < b.id))
  return { candidates: ranked.map((entry) => entry.id), skipped }
}

/**
 * One log line per skipped session.
 * @param skip - the session and reason.
 * @param detail - optional diagnostic (the read error).
 * @returns the line.
 */
export function describeSkip(skip: Skipped, detail?: string): string {
  return `session "${skip.id}" not brought back: ${SKIP_WORDS[skip.reason]}${detail === undefined ? '' : ` (${detail})`}`
}

/**
 * The start-up summary line.
 * @param revived - how many sessions are live with their loops.
 * @param skipped - every skipped session.
 * @returns e.g. `brought back 2 sessions holding active loops; skipped 3 (archived in DSH web: 1, no active loop: 2)`.
 */
export function describeRevival(revived: number, skipped: readonly Skipped[]): string {
  const counts = new Map<SkipReason, number>()
  for (const { reason } of skipped) counts.set(reason, (counts.get(reason) ?? 0) + 1)
  // A fixed order, whatever order the concurrent reads finished in.
  const reasons = (Object.keys(SKIP_WORDS) as SkipReason[])
    .filter((reason) => counts.has(reason))
    .map((reason) => `${SKIP_WORDS[reason]}: ${counts.get(reason)}`)
    .join(', ')
  const noun = revived === 1 ? 'session' : 'sessions'
  return `brought back ${revived} ${noun} holding active loops; skipped ${skipped.length}${reasons === '' ? '' : ` (${reasons})`}`
}

/** The lease file's record: who brings sessions back on this home. */
export interface LeaseRecord {
  /** Unique per holder instance (host, pid, process start, random). */
  readonly token: string
  readonly host: string
  readonly pid: number
  /** When the holding process started (epoch ms). */
  readonly startedAt: number
  /** Last refresh (epoch ms). */
  readonly refreshedAt: number
}

/**
 * Read a lease file's text strictly.
 * @param text - the file content.
 * @returns the record, or undefined when it is not one.
 */
export function parseLease(text: string): LeaseRecord | undefined {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null) return undefined
  const record = value as Record<string, unknown>
  const { token, host, pid, startedAt, refreshedAt } = record
  if (typeof token !== 'string' || typeof host !== 'string') return undefined
  if (![pid, startedAt, refreshedAt].every((field) => typeof field === 'number' && Number.isSafeInteger(field)))
    return undefined
  return { token, host, pid: pid as number, startedAt: startedAt as number, refreshedAt: refreshedAt as number }
}

/** What {@link isLeaseStale} needs to know about the holder. */
export interface HolderFacts {
  /** This machine's host name. */
  readonly host: string
  /** Whether the holder's pid names a running process (only meaningful on the same host). */
  readonly pidAlive: boolean
}

/**
 * A lease is stale when its holder cannot be holding it any more: on this
 * machine its process is gone, or (anywhere) it was not refreshed within the
 * time to live, so a killed holder, a reused pid or a hung one never blocks forever.
 * @param record - the lease.
 * @param now - epoch ms.
 * @param ttlMs - time to live since the last refresh.
 * @param facts - about the holder.
 * @returns whether another process may take it over.
 */
export function isLeaseStale(record: LeaseRecord, now: number, ttlMs: number, facts: HolderFacts): boolean {
  if (record.host === facts.host && !facts.pidAlive) return true
  return now - record.refreshedAt > ttlMs
}

/**
 * The line a host that does not hold the lease logs.
 * @param holder - the current lease.
 * @returns the line.
 */
export function describeHolder(holder: LeaseRecord): string {
  return `DSH process ${holder.pid} on ${holder.host} (started ${new Date(holder.startedAt).toISOString()}) holds the loop lease on this DSH_HOME and brings back the sessions holding loops; this process brings none back and takes over when that one has gone`
}

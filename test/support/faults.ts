/**
 * Fault injection at the real host boundary: a deliberately failing or held
 * `ctx.sessions.flush`, a failing `session.append`, and observers of both.
 */
import type { Session } from '@deepseek-ai/dsh-session'
import { vi, type MockInstance } from 'vitest'
import type { Host } from './host.ts'

/** The three ways a flush fails: no persistence acknowledged, a rejection, a synchronous throw. */
export type FlushFault = 'false' | 'reject' | 'throw'

/** Every flush fault, for `it.each`. */
export const FLUSH_FAULTS: readonly FlushFault[] = ['false', 'reject', 'throw']

/** Text each fault puts into the caller-facing error, so a test can check the cause is named. */
export const FLUSH_FAULT_CAUSE: Readonly<Record<FlushFault, string>> = {
  false: 'did not acknowledge',
  reject: 'disk gone (injected)',
  throw: 'flush threw (injected)',
}

/** A flush replaced for a test. */
export interface FlushInjection {
  /** Flush calls seen since the injection, failed or not. */
  readonly calls: () => number
  /** Sessions each call was for, in order. */
  readonly sessions: Session[]
  restore(): void
}

/** The acknowledgement of one failing flush call. */
function failing(fault: FlushFault): Promise<boolean> {
  if (fault === 'false') return Promise.resolve(false)
  if (fault === 'reject') return Promise.reject(new Error(FLUSH_FAULT_CAUSE.reject))
  throw new Error(FLUSH_FAULT_CAUSE.throw)
}

/**
 * Fail flush calls number `after + 1` to `after + times` from now; the others reach the real persistence.
 * @param host - the host whose session store flushes.
 * @param fault - how the failing calls fail.
 * @param options - `after` calls pass first (default 0); `times` calls fail (default 1).
 * @returns the injection.
 */
export function failFlush(
  host: Host,
  fault: FlushFault,
  options: { after?: number; times?: number } = {},
): FlushInjection {
  const after = options.after ?? 0
  const times = options.times ?? 1
  const real = host.ctx.sessions.flush
  const sessions: Session[] = []
  const spy = vi.spyOn(host.ctx.sessions, 'flush').mockImplementation((session) => {
    sessions.push(session)
    const call = sessions.length
    return call > after && call <= after + times ? failing(fault) : real(session)
  })
  return { calls: () => sessions.length, sessions, restore: () => spy.mockRestore() }
}

/** Flushes the test releases by hand. */
export interface HeldFlushes {
  /** How many flushes are waiting. */
  readonly waiting: () => number
  /** Resolve every waiting flush through the real persistence (or with `false`), and stop holding. */
  release(outcome?: 'persist' | 'false' | 'reject'): Promise<void>
}

/**
 * Hold every flush from now until {@link HeldFlushes.release}.
 * @param host - the host whose session store flushes.
 * @returns the handle.
 */
export function holdFlushes(host: Host): HeldFlushes {
  const real = host.ctx.sessions.flush
  const held: { session: Session; resolve: (value: boolean) => void; reject: (error: unknown) => void }[] = []
  const spy = vi.spyOn(host.ctx.sessions, 'flush').mockImplementation(
    (session) =>
      new Promise<boolean>((resolve, reject) => {
        held.push({ session, resolve, reject })
      }),
  )
  return {
    waiting: () => held.length,
    async release(outcome = 'persist') {
      spy.mockRestore()
      for (const { session, resolve, reject } of held.splice(0)) {
        if (outcome === 'false') resolve(false)
        else if (outcome === 'reject') reject(new Error(FLUSH_FAULT_CAUSE.reject))
        else resolve(await real(session))
      }
    },
  }
}

/**
 * Tell `observe` of every flush before it reaches the real persistence.
 * @param host - the host whose session store flushes.
 * @param observe - sees each call's session first.
 * @returns the spy (restore it to stop).
 */
export function observeFlushes(
  host: Host,
  observe: (session: Session) => void,
): MockInstance<Host['ctx']['sessions']['flush']> {
  const real = host.ctx.sessions.flush
  return vi.spyOn(host.ctx.sessions, 'flush').mockImplementation((session) => {
    observe(session)
    return real(session)
  })
}

/**
 * Tell `observe` of every `session.append` before it is made; an `observe` that throws fails that append instead.
 * @param session - the live session.
 * @param observe - sees each append's type and data first.
 * @returns the spy (restore it to stop).
 */
export function observeAppends(
  session: Session,
  observe: (type: string, data: unknown) => void,
): MockInstance<Session['append']> {
  const real = session.append.bind(session) as (type: string, data: unknown) => ReturnType<Session['append']>
  return vi.spyOn(session, 'append').mockImplementation(((type: string, data: unknown) => {
    observe(type, data)
    return real(type, data)
  }) as Session['append'])
}

/**
 * Make the next `session.append` of a `loop/change` throw; every other append goes through.
 * @param session - the live session.
 * @returns the spy.
 */
export function failNextLoopAppend(session: Session): MockInstance<Session['append']> {
  let failed = false
  return observeAppends(session, (type) => {
    if (type === 'loop/change' && !failed) {
      failed = true
      throw new Error('session log sealed (injected)')
    }
  })
}

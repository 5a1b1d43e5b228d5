/**
 * Delivery bookkeeping for reliability tests: record every heartbeat given to a
 * fake agent's `send` (read back with saxes, test/support/heartbeat-xml.ts), replay a
 * durable `loop/change` log independently of the plugin's own fold, and check
 * the two against each other.
 */
import type { Agent, InboxTarget } from '@deepseek-ai/dsh-agent'
import type { Mock } from 'vitest'
import { parseHeartbeat } from './heartbeat-xml.ts'

/** One heartbeat the agent admitted. */
export interface SentHeartbeat {
  /** Wall-clock time (`Date.now()`) of the send. */
  readonly at: number
  readonly loopId: string
  readonly prompt: string
  readonly target: InboxTarget
  readonly wakeup: boolean
}

/**
 * Record each admitted heartbeat; a send that throws (a `mockImplementationOnce`
 * fault) is not admitted and not recorded.
 * @param send - a fake agent's `send` spy.
 * @returns the live list of admitted heartbeats, in send order.
 */
export function recordHeartbeats(send: Mock<Agent['send']>): SentHeartbeat[] {
  const sent: SentHeartbeat[] = []
  send.mockImplementation((message, target, wakeup) => {
    const part = message.content[0]
    if (part?.type !== 'text' || message.content.length !== 1) throw new Error('a heartbeat is exactly one text part')
    const { loopId, prompt } = parseHeartbeat(part.text)
    sent.push({ at: Date.now(), loopId, prompt, target, wakeup })
  })
  return sent
}

/** What the durable log says about one loop. */
export interface LoopLedger {
  readonly id: string
  readonly prompt: string
  readonly intervalMs: number
  /** `next_at` of the create record. */
  readonly firstNextAt: number
  /** `next_at` after every change, starting with the create's. */
  readonly schedule: number[]
  /** Dispatch records, in log order. */
  dispatches: number
  deleted: boolean
}

/** The audit of a log against the heartbeats sent. */
export interface DeliveryAudit {
  readonly loops: ReadonlyMap<string, LoopLedger>
  /** Every rule broken, in words; empty when the log and the sends agree. */
  readonly violations: readonly string[]
}

interface ChangeShape {
  readonly operation: string
  readonly id?: string
  readonly next_at?: number
  readonly loop?: {
    readonly id: string
    readonly prompt: string
    readonly time_in_seconds: number
    readonly next_at: number
  }
}

/**
 * Replay a durable log and pair its dispatches with the heartbeats sent.
 * Rules: one create per id and never a reused id; deletes and dispatches only
 * for active loops; the i-th dispatch of a loop belongs to its i-th heartbeat;
 * a heartbeat is never early (sent at or after the `next_at` it served); the
 * dispatch moves `next_at` to the first grid point after the send (no burst,
 * no skipped occurrence); heartbeats carry the stored prompt; a heartbeat sent
 * after a loop that was due earlier is a violation (next_at order).
 * @param changes - `loop/change` payloads in log order.
 * @param sent - admitted heartbeats in send order.
 * @param slackMs - tolerance between the runtime's decision instant and the send (0 with fake timers).
 * @returns the ledger and the violations.
 */
export function auditDeliveries(
  changes: readonly unknown[],
  sent: readonly SentHeartbeat[],
  slackMs = 0,
): DeliveryAudit {
  const loops = new Map<string, LoopLedger>()
  const violations: string[] = []
  const sendsById = new Map<string, SentHeartbeat[]>()
  for (const heartbeat of sent) sendsById.set(heartbeat.loopId, [...(sendsById.get(heartbeat.loopId) ?? []), heartbeat])
  const dueOfSend = new Map<SentHeartbeat, number>()

  for (const [position, raw] of changes.entries()) {
    const change = raw as ChangeShape
    if (change.operation === 'create') {
      const loop = change.loop!
      if (loops.has(loop.id)) violations.push(`#${position}: id ${loop.id} created twice`)
      loops.set(loop.id, {
        id: loop.id,
        prompt: loop.prompt,
        intervalMs: loop.time_in_seconds * 1000,
        firstNextAt: loop.next_at,
        schedule: [loop.next_at],
        dispatches: 0,
        deleted: false,
      })
      continue
    }
    const ledger = loops.get(change.id!)
    if (ledger === undefined || ledger.deleted) {
      violations.push(`#${position}: ${change.operation} of inactive ${change.id}`)
      continue
    }
    if (change.operation === 'delete') {
      ledger.deleted = true
      continue
    }
    const due = ledger.schedule.at(-1)!
    const nextAt = change.next_at!
    const heartbeat = sendsById.get(ledger.id)?.[ledger.dispatches]
    ledger.dispatches += 1
    ledger.schedule.push(nextAt)
    if (heartbeat === undefined) {
      violations.push(`#${position}: dispatch ${ledger.dispatches} of ${ledger.id} has no heartbeat`)
      continue
    }
    dueOfSend.set(heartbeat, due)
    if (heartbeat.at < due) violations.push(`${ledger.id}: heartbeat at ${heartbeat.at} is early for next_at ${due}`)
    if (heartbeat.prompt !== ledger.prompt)
      violations.push(`${ledger.id}: heartbeat prompt ${JSON.stringify(heartbeat.prompt)} is not the stored one`)
    if ((nextAt - due) % ledger.intervalMs !== 0 || nextAt <= due)
      violations.push(`${ledger.id}: next_at ${nextAt} is off the grid of ${due} every ${ledger.intervalMs} ms`)
    if (nextAt + slackMs <= heartbeat.at)
      violations.push(`${ledger.id}: next_at ${nextAt} is not after the heartbeat at ${heartbeat.at}`)
    if (nextAt - ledger.intervalMs > heartbeat.at + slackMs)
      violations.push(`${ledger.id}: next_at ${nextAt} skips an occurrence after the heartbeat at ${heartbeat.at}`)
  }

  for (const [id, heartbeats] of sendsById) {
    const recorded = loops.get(id)?.dispatches ?? 0
    if (heartbeats.length > recorded)
      violations.push(`${id}: ${heartbeats.length} heartbeats but ${recorded} dispatches in the log`)
  }
  for (let index = 1; index < sent.length; index += 1) {
    const before = sent[index - 1]!
    const after = sent[index]!
    const dueBefore = dueOfSend.get(before)
    const dueAfter = dueOfSend.get(after)
    if (dueBefore === undefined || dueAfter === undefined) continue
    if (dueAfter < dueBefore && dueAfter <= before.at) {
      violations.push(
        `${after.loopId} (due ${dueAfter}) was sent after ${before.loopId} (due ${dueBefore}) although it was already due`,
      )
    }
  }
  return { loops, violations }
}

/**
 * How many occurrences of a loop fall in `[firstNextAt, until]`.
 * @param ledger - one loop's ledger.
 * @param until - end of the observed span.
 * @returns the number of grid points up to `until`.
 */
export function occurrencesUntil(ledger: LoopLedger, until: number): number {
  return until < ledger.firstNextAt ? 0 : Math.floor((until - ledger.firstNextAt) / ledger.intervalMs) + 1
}

/**
 * The delivery rules, pure: how a due occurrence reaches the agent (`chooseDelivery`), which of
 * an inbox's messages are a loop's waiting heartbeats, and which claimed heartbeats a step keeps.
 * Plain values in; no host access. The agent's inbox itself is `heartbeat-inbox.ts`.
 * @module dsh-plugin-loop/delivery
 */
import type { PreStepDecision } from '@deepseek-ai/dsh-agent'
import type { MessageId } from '@deepseek-ai/dsh-llm'
import { foldLoopEvents, type FoldableEvent } from './fold.ts'
import { readHeartbeat } from './shared/heartbeat.ts'
import type { LoopRecord } from './types.ts'

/** What the session says about one loop's heartbeats at the instant it is due. */
export interface DeliveryFacts {
  /** Whether the agent is running (a turn or a step is in progress). */
  readonly running: boolean
  /** Whether a heartbeat of this loop is still waiting, unconsumed, in the agent's inbox. */
  readonly waiting: boolean
  /** Whether a heartbeat of this loop is already a user message of the open turn. */
  readonly inOpenTurn: boolean
}

/** How one due occurrence is handled. */
export type Delivery =
  | { readonly kind: 'send'; readonly target: 'next-step' | 'next-turn' }
  | { readonly kind: 'replace'; readonly target: 'next-turn' }
  | { readonly kind: 'coalesce' }

/**
 * The delivery rule (SPEC.md §4 "Delivery"). At most one undelivered heartbeat per loop:
 * while one waits for a running agent, the occurrence only moves the schedule.
 * One left waiting in an idle agent's inbox has nothing to deliver it, so a
 * fresh one that wakes the agent replaces it. At most one heartbeat per loop
 * per turn, and none queued for the next: every turn ends, and the agent goes
 * idle after it, when DSH starts its own idle-time work. Otherwise adaptive:
 * the next step while running, a new turn while idle.
 * @param facts - inbox and turn facts for the due loop.
 * @returns send (with its inbox target), replace the waiting heartbeat, or coalesce.
 */
export function chooseDelivery(facts: DeliveryFacts): Delivery {
  if (facts.waiting) return facts.running ? { kind: 'coalesce' } : { kind: 'replace', target: 'next-turn' }
  if (!facts.running) return { kind: 'send', target: 'next-turn' }
  return facts.inOpenTurn ? { kind: 'coalesce' } : { kind: 'send', target: 'next-step' }
}

/** An inbox message as read here: a heartbeat or anything else, with the id the inbox removes it by. */
export interface InboxMessage {
  readonly id: MessageId
}

/**
 * Each loop's heartbeats among `messages`, in inbox order.
 * @param messages - the inbox's waiting messages.
 * @returns loop id → the message ids of its waiting heartbeats; loops without one are absent.
 */
export function waitingHeartbeats(messages: Iterable<InboxMessage>): Map<string, MessageId[]> {
  const waiting = new Map<string, MessageId[]>()
  for (const message of messages) {
    const heartbeat = readHeartbeat(message)
    if (heartbeat === undefined) continue
    const ids = waiting.get(heartbeat.loopId)
    if (ids === undefined) waiting.set(heartbeat.loopId, [message.id])
    else ids.push(message.id)
  }
  return waiting
}

/**
 * The loops whose heartbeats are among `messages`.
 * @param messages - a step's input, untrusted.
 * @returns their loop ids.
 */
export function heartbeatLoopIds(messages: readonly unknown[]): Set<string> {
  const loops = new Set<string>()
  for (const message of messages) {
    const heartbeat = readHeartbeat(message)
    if (heartbeat !== undefined) loops.add(heartbeat.loopId)
  }
  return loops
}

/**
 * Keep heartbeats of loops that are no longer active out of a step. DSH claims a
 * step's input before its pre-step hooks run, so a delete decided in between can
 * no longer take the message out of the inbox. Anything else passes unchanged.
 * When every claimed message is such a heartbeat, the step gets no input at all
 * (what hooks added for it goes too), so DSH ends the turn instead of calling the model.
 * @param claimed - the messages DSH took out of the inbox for this step.
 * @param decision - what the inner pre-step hooks decided.
 * @param loops - the active loops.
 * @returns the same decision, or a copy without the deleted loops' heartbeats.
 */
export function admitClaimedHeartbeats(
  claimed: readonly unknown[],
  decision: PreStepDecision,
  loops: readonly LoopRecord[],
): PreStepDecision {
  if (decision.kind === 'reject') return decision
  const dropped = (message: unknown): boolean => {
    const heartbeat = readHeartbeat(message)
    return heartbeat !== undefined && !loops.some((loop) => loop.id === heartbeat.loopId)
  }
  const messages = decision.messages.filter((message) => !dropped(message))
  if (messages.length === decision.messages.length) return decision
  // Decided on the claimed batch itself: a hook may have replaced a claimed message with an edited copy.
  return { ...decision, messages: claimed.some(dropped) && claimed.every(dropped) ? [] : messages }
}

/**
 * A step that no runtime of the hook's plugin serves once the inner hooks return (the plugin
 * reloaded while they ran): admitted by the loops its log holds now, since whichever runtime
 * deleted a loop meanwhile logged the delete ({@link admitClaimedHeartbeats}). The log is folded
 * only for a step that carries a heartbeat (an agent the plugin never serves gets none). A corrupt
 * log changes nothing, as for a runtime.
 * @param claimed - the messages DSH took out of the inbox for this step.
 * @param decision - what the inner pre-step hooks decided.
 * @param events - the session's log.
 * @param seedLength - where its own events begin (a fork's seed boundary).
 * @returns the decision to enter with.
 */
export function admitByLog(
  claimed: readonly unknown[],
  decision: PreStepDecision,
  events: readonly FoldableEvent[],
  seedLength: number,
): PreStepDecision {
  if (decision.kind === 'reject' || !decision.messages.some((message) => readHeartbeat(message) !== undefined))
    return decision
  const fold = foldLoopEvents(events, seedLength)
  return fold.corrupt === undefined ? admitClaimedHeartbeats(claimed, decision, fold.loops) : decision
}

/**
 * One agent's inbox as the runtime uses it: a due loop's heartbeat goes in by the delivery rule
 * (`delivery.ts`), and a loop's waiting heartbeats come out when it is deleted or a stale one is
 * replaced. It also keeps which loops' heartbeats the open turn took: read once from the log's
 * tail, then kept current by the agent's claims, which name their turn; and the last step entered
 * with heartbeats, until DSH has logged it.
 * @module dsh-plugin-loop/heartbeat-inbox
 */
import type { Agent } from '@deepseek-ai/dsh-agent'
import { createUserMessage } from '@deepseek-ai/dsh-llm'
import type { SessionEvent } from '@deepseek-ai/dsh-session'
import type { LoopClock } from './clock.ts'
import { chooseDelivery, heartbeatLoopIds, waitingHeartbeats, type InboxMessage } from './delivery.ts'
import type { LoopReport } from './report.ts'
import { describeError } from './shared/format.ts'
import { HEARTBEAT_SOURCE, readHeartbeat, renderHeartbeat } from './shared/heartbeat.ts'
import type { LoopRecord } from './types.ts'

/** Heartbeats in and out of one agent's inbox. */
export class HeartbeatInbox {
  /** The turn {@link loopsInOpenTurn} belongs to; undefined when no turn is known to be open. */
  private turn: number | undefined
  /** Loops whose heartbeat is a user message of {@link turn}. */
  private readonly loopsInOpenTurn = new Set<string>()
  /**
   * The last step DSH entered with heartbeats ({@link noteEntering}): their loops, and whether DSH
   * has logged it. DSH logs a step's input in the task that admitted it, so a 0 ms timer tells.
   */
  private lastEntered:
    { readonly loops: ReadonlySet<string>; logged: boolean; readonly whenLogged: Promise<void> } | undefined

  /**
   * @param agent - the exact agent whose inbox this is.
   * @param report - where a replaced heartbeat is noted.
   * @param clock - whose 0 ms timer tells when an entered step is logged.
   */
  constructor(
    private readonly agent: Agent,
    private readonly report: Pick<LoopReport, 'info'>,
    private readonly clock: LoopClock,
  ) {}

  /**
   * Read the open turn from the log: the user messages after its last turn
   * boundary, found from the end, so a long log is not copied or walked.
   * @param events - the session's log.
   * @param from - the seed boundary; a fork's inherited turns are not this session's.
   */
  readOpenTurn(events: readonly SessionEvent[], from: number): void {
    let start = from
    for (let index = events.length - 1; index >= from; index -= 1) {
      const event = events[index]!
      if (event.type === 'turn/end') this.enterTurn(undefined)
      else if (event.type === 'turn/start') this.enterTurn(event.data.turn)
      else continue
      start = index + 1
      break
    }
    for (let index = start; index < events.length; index += 1) {
      const event = events[index]!
      if (event.type === 'user/message') this.noteHeartbeat(event.data)
    }
  }

  /**
   * Count a message the agent took out of its inbox for a turn, before DSH logs
   * it as the step's user message. A newer turn than the one known begins a new set.
   * @param message - the claimed message, untrusted.
   * @param turn - the turn that claimed it.
   */
  noteClaimed(message: unknown, turn: number): void {
    this.enterTurn(turn)
    this.noteHeartbeat(message)
  }

  /**
   * Hand one due loop's heartbeat to the inbox by the delivery rule.
   * @param loop - the due loop.
   * @returns why the inbox refused it, if it did.
   */
  deliver(loop: LoopRecord): string | undefined {
    const delivery = this.deliveryOf(loop)
    if (delivery.kind === 'coalesce') return undefined
    try {
      if (delivery.kind === 'replace') {
        // Nothing would deliver it (an idle agent does not wake by itself): the fresh heartbeat takes its place.
        this.report.info(
          `session "${this.agent.id}": the heartbeat of ${loop.id} waited in the inbox of an idle agent; replacing it with one that wakes the agent`,
        )
        this.withdraw(loop.id)
      }
      const content = [{ type: 'text' as const, text: renderHeartbeat(loop) }]
      this.agent.send(createUserMessage({ content, source: { ...HEARTBEAT_SOURCE } }), delivery.target, true)
      return undefined
    } catch (error) {
      return `heartbeat for ${loop.id} was not admitted: ${describeError(error)}`
    }
  }

  /**
   * Whether a due loop's heartbeat would go into the inbox now, rather than coalesce into one
   * that waits or that the open turn took.
   * @param loop - the due loop.
   * @returns true when {@link deliver} would send.
   */
  wouldSend(loop: LoopRecord): boolean {
    return this.deliveryOf(loop).kind !== 'coalesce'
  }

  /** The delivery rule applied to a loop and this inbox now. */
  private deliveryOf(loop: LoopRecord): ReturnType<typeof chooseDelivery> {
    return chooseDelivery({
      running: this.agent.status === 'running',
      waiting: waitingHeartbeats(this.messages()).has(loop.id),
      inOpenTurn: this.loopsInOpenTurn.has(loop.id),
    })
  }

  /**
   * Take a loop's waiting heartbeats out of the inbox; DSH logs each removal as
   * a durable cancellation, saved with the next flush.
   * @param loopId - the loop.
   */
  withdraw(loopId: string): void {
    for (const id of waitingHeartbeats(this.messages()).get(loopId) ?? []) this.agent.inbox.remove(id)
  }

  /**
   * A step is about to be entered with these messages: remember its heartbeats' loops until DSH
   * has logged it.
   * @param messages - the step's admitted input.
   */
  noteEntering(messages: readonly unknown[]): void {
    const loops = heartbeatLoopIds(messages)
    if (loops.size === 0) return
    const entered = {
      loops,
      logged: false,
      whenLogged: new Promise<void>((resolve) =>
        this.clock.setTimer(() => {
          entered.logged = true
          resolve()
        }, 0),
      ),
    }
    this.lastEntered = entered
  }

  /**
   * When the last step entered with a heartbeat of this loop is not logged yet: a delete of the
   * loop appends after that step, as it would after a step a moment later.
   * @param loopId - the loop.
   * @returns a promise settled once DSH has logged that step; undefined when there is none to wait for.
   */
  unloggedStepWith(loopId: string): Promise<void> | undefined {
    const entered = this.lastEntered
    return entered?.loops.has(loopId) === true && !entered.logged ? entered.whenLogged : undefined
  }

  /** Begin a turn's set (undefined: no turn open); the same turn keeps what it has. */
  private enterTurn(turn: number | undefined): void {
    if (turn !== undefined && turn === this.turn) return
    this.turn = turn
    this.loopsInOpenTurn.clear()
  }

  /** Remember a heartbeat the open turn took. */
  private noteHeartbeat(message: unknown): void {
    const heartbeat = readHeartbeat(message)
    if (heartbeat !== undefined) this.loopsInOpenTurn.add(heartbeat.loopId)
  }

  /** The inbox's unconsumed messages (replayed by DSH from the log), next-step first. */
  private messages(): InboxMessage[] {
    return [...this.agent.inbox.nextStep, ...this.agent.inbox.nextTurn]
  }
}

/**
 * The synthetic log every size-dependent row uses, appended with the real `Session.append` of a live session (every
 * `session/event` listener and the plugin's projection see each event) and flushed through real JSONL persistence.
 * One cycle is ten events shaped like a short turn next to loop traffic: a `loop/change` create of a fresh id and its
 * delete, then turn/start, step/start, four assistant chunks, step/end, turn/end. So loop events are a fifth of the
 * log and every create takes a fresh id, as the tools' creates do.
 * @module scripts/bench/log
 */
import type { Session, SessionEvent } from '@deepseek-ai/dsh-session'
import { foldLoopEvents } from '../../src/fold.ts'
import type { Host } from './host.ts'

export const CYCLE = 10

/** A day: no synthetic loop falls due while the bench runs. */
export const SYNTHETIC_INTERVAL_SECONDS = 86_400

/** A create as the tools write it (next_at one interval ahead, so the runtime never corrects it). */
export function syntheticCreate(id: string, prompt: string) {
  return {
    version: 1,
    operation: 'create',
    loop: {
      id,
      prompt,
      time_in_seconds: SYNTHETIC_INTERVAL_SECONDS,
      next_at: Date.now() + SYNTHETIC_INTERVAL_SECONDS * 1000,
    },
  } as const
}

export function loopId(index: number): string {
  return `loop_${index.toString(16).padStart(8, '0')}`
}

/**
 * The plugin's fold of a whole log from empty (what its runtime does once when it first reads a session).
 * @returns the active loops, so the work cannot be optimised away.
 */
export function foldFromScratch(events: readonly SessionEvent[]): number {
  return foldLoopEvents(events).loops.length
}

/** Appends synthetic cycles to one live session. */
export class LogWriter {
  /**
   * @param cycle - a writer continuing a reopened log starts past every id the log already used.
   */
  constructor(
    private readonly session: Session,
    private cycle = 0,
  ) {}

  get nextCycle(): number {
    return this.cycle
  }

  /** Three loops that stay active (once, first). */
  seedStandingLoops(): void {
    for (let index = 0; index < 3; index += 1)
      this.session.append('loop/change', syntheticCreate(loopId(0xf0000000 + index), `standing loop ${index}`))
  }

  /** Exactly `count` events (a multiple of {@link CYCLE}). */
  appendEvents(count: number): void {
    for (let done = 0; done < count; done += CYCLE) this.appendCycle()
  }

  appendCycle(): void {
    const session = this.session
    const id = loopId(this.cycle)
    this.cycle += 1
    session.append('loop/change', syntheticCreate(id, `check build ${this.cycle}`))
    session.append('loop/change', { version: 1, operation: 'delete', id })
    const turn = this.cycle
    session.append('turn/start', { turn })
    session.append('step/start', { turn, step: 0 })
    for (let chunk = 0; chunk < 4; chunk += 1) {
      const text = `partial answer ${chunk} `
      session.append('assistant/chunk', { turn, step: 0, chunk: { type: 'text-delta', index: 0, text } })
    }
    session.append('step/end', { turn, step: 0 })
    session.append('turn/end', { turn, reason: { kind: 'completed' } })
  }
}

/** Grow a live session to at least `events`, flushing every 50k events so the persistence buffer stays bounded. */
export async function growTo(host: Host, writer: LogWriter, session: Session, events: number): Promise<void> {
  while (session.seq < events) {
    const until = Math.min(events, session.seq + 50_000)
    while (session.seq < until) writer.appendCycle()
    await host.ctx.sessions.flush(session)
  }
}

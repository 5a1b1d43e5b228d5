/**
 * The synthetic session log every size-dependent row uses, appended through the
 * real `Session.append` of a live session (so every `session/event` listener,
 * the plugin's included, sees each event) and flushed through real JSONL
 * persistence. One cycle is ten events shaped like a short model turn next to
 * loop traffic: a `loop/change` create of a fresh id and its delete, then
 * turn/start, step/start, four assistant chunks, step/end and turn/end. Loop
 * events are 20% of the log and the used-id set grows by one per cycle, which
 * is the load that made the old projection quadratic.
 * @module scripts/bench/log
 */
import type { Session } from '@deepseek-ai/dsh-session'
import type { Host } from './host.ts'

/** Events per cycle. */
export const CYCLE = 10

/** Loop events per cycle (create + delete). */
export const LOOP_EVENTS_PER_CYCLE = 2

/** Interval of every synthetic loop: a day, so none falls due while the bench runs. */
export const SYNTHETIC_INTERVAL_SECONDS = 86_400

/**
 * A synthetic loop's change as the tools would write it now: next_at one interval ahead
 * (a next_at further ahead than one interval would be corrected by the runtime, a dispatch).
 * @param id - loop id.
 * @param prompt - prompt.
 * @returns the v1 create change.
 */
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

/** Loops that stay active in every synthetic log (created first). */
export const STANDING_LOOPS = 3

/** A generated, never reused loop id. */
export function loopId(index: number): string {
  return `loop_${index.toString(16).padStart(8, '0')}`
}

/** Appends one synthetic cycle at a time; remembers its counters across calls. */
export class LogWriter {
  private cycle: number
  private turn: number

  /**
   * @param session - the live session to append to.
   * @param firstCycle - the first cycle's number; a writer on a resumed log starts past every id the log already used.
   */
  constructor(
    private readonly session: Session,
    firstCycle = 0,
  ) {
    this.cycle = firstCycle
    this.turn = firstCycle
  }

  /** The next cycle's number: a writer that continues this log on a reopened session starts here. */
  get nextCycle(): number {
    return this.cycle
  }

  /** Create the standing loops (once, first). */
  seedStandingLoops(): void {
    for (let index = 0; index < STANDING_LOOPS; index += 1) {
      this.session.append('loop/change', syntheticCreate(loopId(0xf0000000 + index), `standing loop ${index}`))
    }
  }

  /**
   * Append whole cycles until the log holds at least `events` events.
   * @param events - target log length.
   */
  appendUntil(events: number): void {
    while (this.session.seq < events) this.appendCycle()
  }

  /** Append exactly `count` events' worth of cycles (count must be a multiple of {@link CYCLE}). */
  appendEvents(count: number): void {
    for (let done = 0; done < count; done += CYCLE) this.appendCycle()
  }

  /** One ten-event cycle. */
  appendCycle(): void {
    const session = this.session
    const id = loopId(this.cycle)
    this.cycle += 1
    session.append('loop/change', syntheticCreate(id, `check build ${this.cycle}`))
    session.append('loop/change', { version: 1, operation: 'delete', id })
    const turn = ++this.turn
    session.append('turn/start', { turn })
    session.append('step/start', { turn, step: 0 })
    for (let chunk = 0; chunk < 4; chunk += 1) {
      session.append('assistant/chunk', {
        turn,
        step: 0,
        chunk: { type: 'text-delta', index: 0, text: `partial answer ${chunk} ` },
      })
    }
    session.append('step/end', { turn, step: 0 })
    session.append('turn/end', { turn, reason: { kind: 'completed' } })
  }
}

/**
 * Grow a live session to `events` events, flushing to disk every `flushEvery`
 * events so the persistence buffer stays bounded.
 * @param host - the host owning the session.
 * @param writer - the session's writer.
 * @param session - the session.
 * @param events - target length.
 * @param flushEvery - flush interval in events.
 */
export async function growTo(
  host: Host,
  writer: LogWriter,
  session: Session,
  events: number,
  flushEvery = 50_000,
): Promise<void> {
  while (session.seq < events) {
    writer.appendUntil(Math.min(events, session.seq + flushEvery))
    await host.ctx.sessions.flush(session)
  }
}

/**
 * Benchmark: the fold cost of one drive as a session log grows.
 *
 * Baseline: refold the whole log on every drive (what a naive runtime does).
 * Measured: the runtime's incremental fold, which only reads events appended
 * since its previous drive. Both read the real `Session.events` snapshot after
 * one new dispatch, as a drive does. Run: `pnpm run bench`.
 */
import { Session, SessionId } from '@deepseek-ai/dsh-session'
import { createChange, dispatchChange, emptyLoopFold, foldLoopEvents } from '../src/domain.ts'

const LOOPS = 5
const SIZES = [1_000, 10_000, 100_000]
const ROUNDS = 30

/** A session with `size` events: five loops, then commands and dispatches interleaved. */
function buildSession(size: number): Session {
  const session = Session.create(SessionId(`bench-${size}`))
  for (let index = 0; index < LOOPS; index += 1) {
    session.append('loop/change', createChange({ id: `loop_${index}`, prompt: `check ${index}`, time_in_seconds: 1, next_at: 1_000 }))
  }
  for (let index = LOOPS; index < size; index += 1) {
    if (index % 2 === 0) session.append('loop/change', dispatchChange(`loop_${index % LOOPS}`, 1_000 + index))
    else session.append('command/run', { commandId: `cmd-${index}`, name: 'noop', source: { kind: 'user' } } as never)
  }
  return session
}

/** Median of a list of durations. */
function median(values: number[]): number {
  const sorted = [...values].sort((left, right) => left - right)
  return sorted[Math.floor(sorted.length / 2)]!
}

console.log(`fold cost per drive, median of ${ROUNDS} drives (one new dispatch before each)`)
console.log('events    full refold (ms)   incremental (ms)   speed-up')
for (const size of SIZES) {
  const session = buildSession(size)
  let state = foldLoopEvents(emptyLoopFold(), session.events)
  let folded = session.events.length
  const full: number[] = []
  const incremental: number[] = []
  for (let round = 0; round < ROUNDS; round += 1) {
    session.append('loop/change', dispatchChange(`loop_${round % LOOPS}`, 10_000_000 + round))
    // The incremental fold runs first, so it pays for materializing the new events snapshot.
    const incrementalStart = performance.now()
    const events = session.events
    state = foldLoopEvents(state, events.slice(folded))
    folded = events.length
    incremental.push(performance.now() - incrementalStart)
    const fullStart = performance.now()
    const fullState = foldLoopEvents(emptyLoopFold(), session.events)
    full.push(performance.now() - fullStart)
    if (JSON.stringify(state.loops) !== JSON.stringify(fullState.loops)) throw new Error('incremental and full folds disagree')
  }
  const [fullMs, incrementalMs] = [median(full), median(incremental)]
  console.log(`${String(size).padEnd(9)} ${fullMs.toFixed(3).padStart(16)}   ${incrementalMs.toFixed(3).padStart(16)}   ${(fullMs / incrementalMs).toFixed(0).padStart(7)}x`)
}

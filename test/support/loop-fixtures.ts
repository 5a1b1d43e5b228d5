/**
 * Shared fixtures of the pure-logic tests (test/fold.test.ts, test/validation.test.ts,
 * test/drive.test.ts, test/shared/timing.test.ts, test/shared/heartbeat.test.ts):
 * a fixed instant, two loop records and a fold helper.
 * @module test/support/loop-fixtures
 */
import { expect } from 'vitest'
import { LoopError } from '../../src/errors.ts'
import { foldLoopEvents } from '../../src/fold.ts'
import type { LoopRecord } from '../../src/types.ts'

/** The fixed instant every pure-logic test reads as now. */
export const NOW = 1_800_000_000_000
/** A one-second loop, due in one second. */
export const loopA: LoopRecord = { id: 'loop_a', prompt: 'check A', time_in_seconds: 1, next_at: NOW + 1000 }
/** A one-minute loop, due in half a second (before {@link loopA}). */
export const loopB: LoopRecord = { id: 'loop_b', prompt: 'check B', time_in_seconds: 60, next_at: NOW + 500 }
/** A `loop/change` session event carrying `data`. */
export const event = (data: unknown) => ({ type: 'loop/change', data })
/** The fold of the given change payloads, in order. */
export const foldOf = (...changes: unknown[]) => foldLoopEvents(changes.map(event))

/** The error a call throws, asserted to be a LoopError. */
export function caught(fn: () => unknown): LoopError {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(LoopError)
    return error as LoopError
  }
  throw new Error('expected a LoopError')
}

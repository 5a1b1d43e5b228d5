/** Time arithmetic of loops (src/shared/timing.ts): the due loop, the earliest wake-up, clock skew, the next occurrence and the longest interval. */
import { describe, expect, it } from 'vitest'
import { activeLoops, createChange } from '../../src/domain.ts'
import {
  earliestDueLoop,
  earliestNextAt,
  firstClockSkewedLoop,
  longestIntervalSeconds,
  nextOccurrence,
  rescheduledNextAt,
} from '../../src/shared/timing.ts'
import { NOW, foldOf, loopA, loopB } from '../support/loop-fixtures.ts'

describe('timing', () => {
  const loops = activeLoops(foldOf(createChange(loopA), createChange(loopB)))

  it('finds the due loop with the earliest next_at, and the earliest future next_at', () => {
    expect(earliestDueLoop(loops, NOW)).toBeUndefined()
    expect(earliestNextAt(loops)).toBe(NOW + 500)
    expect(earliestNextAt([])).toBeUndefined()
    expect(earliestDueLoop(loops, NOW + 500)).toBe(loopB)
    // loopA (created first) is due later than loopB: next_at order, not creation order.
    expect(earliestDueLoop(loops, NOW + 5000)).toBe(loopB)
    expect(earliestDueLoop([loopA], NOW + 5000)).toBe(loopA)
  })

  it('breaks next_at ties in fold order', () => {
    const c = { ...loopA, id: 'loop_c', next_at: NOW }
    const tied = activeLoops(
      foldOf(createChange({ ...loopA, next_at: NOW }), createChange({ ...loopB, next_at: NOW }), createChange(c)),
    )
    expect(earliestDueLoop(tied, NOW)?.id).toBe('loop_a')
    expect(earliestDueLoop(tied.slice(1), NOW)?.id).toBe('loop_b')
    expect(earliestDueLoop([...tied, { ...loopB, id: 'loop_d', next_at: NOW - 1 }], NOW)?.id).toBe('loop_d')
  })

  it('finds the first schedule more than one and a half intervals ahead (the clock moved back) and puts it one interval from now', () => {
    // loopA: 1 s interval, due NOW + 1000; loopB: 60 s, due NOW + 500.
    expect(firstClockSkewedLoop(loops, NOW - 500)).toBeUndefined()
    expect(firstClockSkewedLoop(loops, NOW - 501)?.id).toBe('loop_a')
    expect(firstClockSkewedLoop([loopB], NOW - 89_500)).toBeUndefined()
    expect(firstClockSkewedLoop([loopB], NOW - 89_501)?.id).toBe('loop_b')
    expect(firstClockSkewedLoop(loops, NOW - 89_501)?.id).toBe('loop_a')
    expect(rescheduledNextAt(loopB, NOW)).toBe(NOW + 60_000)
  })

  it('advances exactly as §7.3: floor((now - oldNextAt) / interval) + 1 whole intervals, strictly after now', () => {
    // loopA: 1 s interval, next_at NOW + 1000.
    expect(nextOccurrence(loopA, NOW + 1000)).toBe(NOW + 2000)
    expect(nextOccurrence(loopA, NOW + 1999)).toBe(NOW + 2000)
    expect(nextOccurrence(loopA, NOW + 2000)).toBe(NOW + 3000)
    // A one-second loop delayed five seconds: one dispatch, next occurrence in the future.
    expect(nextOccurrence(loopA, NOW + 6000)).toBe(NOW + 7000)
    expect(nextOccurrence(loopA, NOW + 6500)).toBe(NOW + 7000)
    // Resumed less than one interval late: a 4 s loop 3.3 s late moves on 4 s, to 0.7 s from now.
    const four = { ...loopA, time_in_seconds: 4, next_at: NOW }
    expect(nextOccurrence(four, NOW + 3300)).toBe(NOW + 4000)
    // Resumed several intervals late: 3 intervals and 1 ms late skips 4.
    expect(nextOccurrence(loopB, NOW + 500 + 3 * 60_000 + 1)).toBe(NOW + 500 + 4 * 60_000)
  })

  it('gives the longest interval whose first occurrence is still a date', () => {
    expect(longestIntervalSeconds(NOW)).toBe(Math.floor((8.64e15 - NOW) / 1000))
    expect(NOW + longestIntervalSeconds(NOW) * 1000).toBeLessThanOrEqual(8.64e15)
    expect(NOW + (longestIntervalSeconds(NOW) + 1) * 1000).toBeGreaterThan(8.64e15)
  })
})

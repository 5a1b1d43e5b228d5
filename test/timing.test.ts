/** Time arithmetic of loops (src/timing.ts): due loops, the earliest wake-up, clock skew and the next occurrence. */
import { describe, expect, it } from 'vitest'
import { activeLoops, createChange } from '../src/domain.ts'
import { clockSkewedLoops, dueLoops, earliestNextAt, nextOccurrence, rescheduledNextAt } from '../src/timing.ts'
import { NOW, foldOf, loopA, loopB } from './support/loop-fixtures.ts'

describe('timing', () => {
  const loops = activeLoops(foldOf(createChange(loopA), createChange(loopB)))

  it('finds every due loop, earliest first, and the earliest future next_at', () => {
    expect(dueLoops(loops, NOW)).toEqual([])
    expect(earliestNextAt(loops)).toBe(NOW + 500)
    expect(earliestNextAt([])).toBeUndefined()
    expect(dueLoops(loops, NOW + 500)).toEqual([loopB])
    // loopA (created first) is due later than loopB: next_at order, not creation order.
    expect(dueLoops(loops, NOW + 5000)).toEqual([loopB, loopA])
  })

  it('breaks next_at ties in creation order', () => {
    const c = { ...loopA, id: 'loop_c', next_at: NOW - 1 }
    const tied = activeLoops(
      foldOf(createChange({ ...loopA, next_at: NOW }), createChange({ ...loopB, next_at: NOW }), createChange(c)),
    )
    expect(dueLoops(tied, NOW).map((loop) => loop.id)).toEqual(['loop_c', 'loop_a', 'loop_b'])
  })

  it('finds every schedule more than one and a half intervals ahead (the clock moved back) and puts it one interval from now', () => {
    // loopA: 1 s interval, due NOW + 1000; loopB: 60 s, due NOW + 500.
    expect(clockSkewedLoops(loops, NOW - 500)).toEqual([])
    expect(clockSkewedLoops(loops, NOW - 501).map((loop) => loop.id)).toEqual(['loop_a'])
    expect(clockSkewedLoops([loopB], NOW - 89_500)).toEqual([])
    expect(clockSkewedLoops(loops, NOW - 89_501).map((loop) => loop.id)).toEqual(['loop_a', 'loop_b'])
    expect(rescheduledNextAt(loopB, NOW)).toBe(NOW + 60_000)
  })

  it('advances by whole intervals to strictly after now', () => {
    expect(nextOccurrence(loopA, NOW + 1000)).toBe(NOW + 2000)
    expect(nextOccurrence(loopA, NOW + 1499)).toBe(NOW + 2000)
    // Late by more than half an interval: the cadence point 1 ms away is skipped, not fired at once.
    expect(nextOccurrence(loopA, NOW + 1501)).toBe(NOW + 3000)
    expect(nextOccurrence(loopA, NOW + 1999)).toBe(NOW + 3000)
    // A one-second loop delayed five seconds: one dispatch, next occurrence in the future.
    expect(nextOccurrence(loopA, NOW + 6000)).toBe(NOW + 7000)
    expect(nextOccurrence(loopA, NOW + 6500)).toBe(NOW + 7000)
    expect(nextOccurrence(loopB, NOW + 500 + 3 * 60_000 + 1)).toBe(NOW + 500 + 4 * 60_000)
  })
})

/** The drive's decision (src/drive.ts) over plain values: which loop a drive handles, where its schedule moves, and when to wake. */
import { describe, expect, it } from 'vitest'
import { MAX_TIMER_WAIT_MS, decideDrive } from '../src/drive.ts'
import { LATEST_DATE_MS } from '../src/shared/timing.ts'
import type { LoopRecord } from '../src/types.ts'
import { NOW } from './support/epoch.ts'
import { loopA, loopB } from './support/loop-fixtures.ts'

/** loopA (1 s, due NOW + 1000) and loopB (60 s, due NOW + 500), in creation order. */
const loops: readonly LoopRecord[] = Object.freeze([loopA, loopB])

describe('the longest wait', () => {
  it('is one minute, far below the 2^31 - 1 ms a Node timer takes', () => {
    expect(MAX_TIMER_WAIT_MS).toBe(60_000)
  })
})

describe('deciding a drive', () => {
  it('waits forever without loops', () => {
    expect(decideDrive([], NOW, false)).toStrictEqual({ kind: 'wait', delay: undefined })
  })

  it('waits for the earliest next_at while none is due', () => {
    expect(decideDrive(loops, NOW, false)).toStrictEqual({ kind: 'wait', delay: 500 })
    expect(decideDrive(loops, NOW + 499, false)).toStrictEqual({ kind: 'wait', delay: 1 })
    expect(decideDrive([loopA], NOW, false)).toStrictEqual({ kind: 'wait', delay: 1000 })
  })

  it('waits at most a minute, however far the earliest next_at is', () => {
    const hourly = (nextAt: number): LoopRecord => ({ ...loopB, time_in_seconds: 3600, next_at: nextAt })
    expect(decideDrive([hourly(NOW + 59_999)], NOW, false)).toStrictEqual({ kind: 'wait', delay: 59_999 })
    expect(decideDrive([hourly(NOW + 60_000)], NOW, false)).toStrictEqual({ kind: 'wait', delay: 60_000 })
    expect(decideDrive([hourly(NOW + 60_001)], NOW, false)).toStrictEqual({ kind: 'wait', delay: 60_000 })
    expect(decideDrive([hourly(NOW + 3_600_000)], NOW, false)).toStrictEqual({ kind: 'wait', delay: 60_000 })
  })

  it('delivers the due loop with the earliest next_at, not the first created', () => {
    expect(decideDrive(loops, NOW + 500, false)).toStrictEqual({ kind: 'deliver', loop: loopB, nextAt: NOW + 60_500 })
    // Both due: loopB's next_at is earlier.
    const both = decideDrive(loops, NOW + 5000, false)
    expect(both).toStrictEqual({ kind: 'deliver', loop: loopB, nextAt: NOW + 60_500 })
    // The record itself, as the caller passed it.
    expect(both.kind === 'deliver' && both.loop).toBe(loopB)
    expect(decideDrive([loopA], NOW + 5000, false)).toStrictEqual({ kind: 'deliver', loop: loopA, nextAt: NOW + 6000 })
  })

  it('breaks next_at ties in creation order', () => {
    const a = { ...loopA, next_at: NOW }
    const b = { ...loopB, next_at: NOW }
    const c = { ...loopA, id: 'loop_c', next_at: NOW }
    expect(decideDrive([a, b, c], NOW, false)).toStrictEqual({ kind: 'deliver', loop: a, nextAt: NOW + 1000 })
    expect(decideDrive([b, c, a], NOW, false)).toStrictEqual({ kind: 'deliver', loop: b, nextAt: NOW + 60_000 })
    const d = { ...loopB, id: 'loop_d', next_at: NOW - 1 }
    expect(decideDrive([a, b, c, d], NOW, false)).toStrictEqual({ kind: 'deliver', loop: d, nextAt: NOW + 59_999 })
  })

  it('advances exactly as SPEC.md §5 "Runtime" says of missed intervals: floor((now - next_at) / interval) + 1 whole intervals, strictly after now', () => {
    const next = (loop: LoopRecord, now: number) => {
      const decision = decideDrive([loop], now, false)
      return decision.kind === 'deliver' ? decision.nextAt : decision
    }
    // loopA: 1 s interval, next_at NOW + 1000.
    expect(next(loopA, NOW + 1000)).toBe(NOW + 2000)
    expect(next(loopA, NOW + 1999)).toBe(NOW + 2000)
    expect(next(loopA, NOW + 2000)).toBe(NOW + 3000)
    // A one-second loop delayed five seconds: one heartbeat, the next occurrence in the future.
    expect(next(loopA, NOW + 6000)).toBe(NOW + 7000)
    expect(next(loopA, NOW + 6500)).toBe(NOW + 7000)
    // Resumed less than one interval late: a 4 s loop 3.3 s late moves on 4 s, to 0.7 s from now.
    expect(next({ ...loopA, time_in_seconds: 4, next_at: NOW }, NOW + 3300)).toBe(NOW + 4000)
    // Resumed several intervals late: 3 intervals and 1 ms late skips 4.
    expect(next(loopB, NOW + 500 + 3 * 60_000 + 1)).toBe(NOW + 500 + 4 * 60_000)
    expect(next(loopB, NOW + 500 + 3 * 60_000)).toBe(NOW + 500 + 4 * 60_000)
    expect(next(loopB, NOW + 500 + 3 * 60_000 - 1)).toBe(NOW + 500 + 3 * 60_000)
  })

  it('stops a huge interval at the last date a timestamp holds, never past the safe integers', () => {
    const huge = { ...loopA, time_in_seconds: Number.MAX_SAFE_INTEGER, next_at: 0 }
    expect(decideDrive([huge], NOW, false)).toStrictEqual({ kind: 'deliver', loop: huge, nextAt: LATEST_DATE_MS })
    const far = { ...loopA, time_in_seconds: 8_700_000_000_000, next_at: NOW }
    expect(decideDrive([far], NOW, false)).toStrictEqual({ kind: 'deliver', loop: far, nextAt: 8_640_000_000_000_000 })
    // One that lands exactly on the last date is kept.
    const exact = { ...loopA, time_in_seconds: 8_638_204_003_200, next_at: NOW }
    expect(decideDrive([exact], NOW, false)).toStrictEqual({
      kind: 'deliver',
      loop: exact,
      nextAt: 8_640_000_000_000_000,
    })
  })

  it('moves the first schedule more than one and a half intervals ahead (the clock moved back) to one interval from now', () => {
    // loopA: 1 s interval, due NOW + 1000, so skewed once now is before NOW - 500.
    expect(decideDrive(loops, NOW - 500, false)).toStrictEqual({ kind: 'wait', delay: 1000 })
    expect(decideDrive(loops, NOW - 501, false)).toStrictEqual({ kind: 'reschedule', loop: loopA, nextAt: NOW + 499 })
    // loopB: 60 s interval, due NOW + 500, so skewed once now is before NOW - 89_500.
    expect(decideDrive([loopB], NOW - 89_500, false)).toStrictEqual({ kind: 'wait', delay: 60_000 })
    expect(decideDrive([loopB], NOW - 89_501, false)).toStrictEqual({
      kind: 'reschedule',
      loop: loopB,
      nextAt: NOW - 29_501,
    })
    // Both skewed: the first in creation order.
    expect(decideDrive([loopB, loopA], NOW - 89_501, false)).toStrictEqual({
      kind: 'reschedule',
      loop: loopB,
      nextAt: NOW - 29_501,
    })
    expect(decideDrive(loops, NOW - 89_501, false)).toStrictEqual({
      kind: 'reschedule',
      loop: loopA,
      nextAt: NOW - 88_501,
    })
  })

  it('delivers a due loop before it corrects a skewed one', () => {
    const due = { ...loopB, next_at: NOW - 1 }
    const skewed = { ...loopA, next_at: NOW + 10_000 }
    expect(decideDrive([skewed, due], NOW, false)).toStrictEqual({ kind: 'deliver', loop: due, nextAt: NOW + 59_999 })
  })

  it('stops a corrected schedule at the last date too', () => {
    // A 3e11 s interval (3e14 ms) due at 9e15, decided at 8.4e15: 6e14 ahead is more than 1.5 intervals.
    const skewed = { ...loopA, time_in_seconds: 300_000_000_000, next_at: 9_000_000_000_000_000 }
    expect(decideDrive([skewed], 8_400_000_000_000_000, false)).toStrictEqual({
      kind: 'reschedule',
      loop: skewed,
      nextAt: LATEST_DATE_MS,
    })
  })

  it('drives no archived session, due or not: it only looks again within a minute, its loops untouched', () => {
    const due = { ...loopA, next_at: NOW - 5000 }
    const skewed = { ...loopB, next_at: NOW + 10 * 60_000 }
    expect(decideDrive([due, skewed], NOW, true)).toStrictEqual({ kind: 'wait', delay: 60_000 })
    expect(decideDrive([], NOW, true)).toStrictEqual({ kind: 'wait', delay: undefined })
    // The same loops, not archived: the due one is delivered.
    expect(decideDrive([due, skewed], NOW, false)).toMatchObject({ kind: 'deliver', loop: due })
  })

  it('changes none of the records it reads', () => {
    const frozen = Object.freeze([Object.freeze({ ...loopA }), Object.freeze({ ...loopB })])
    for (const now of [NOW - 100_000, NOW, NOW + 5000]) decideDrive(frozen, now, false)
    expect(frozen).toStrictEqual([loopA, loopB])
  })
})

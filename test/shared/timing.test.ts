/** Time arithmetic both bundles share (src/shared/timing.ts): the last date, a schedule's first and next occurrences, the earliest wake-up and the longest interval. */
import { describe, expect, it } from 'vitest'
import {
  LATEST_DATE_MS,
  earliestNextAt,
  firstOccurrence,
  longestIntervalSeconds,
  nextOccurrence,
} from '../../src/shared/timing.ts'
import { NOW } from '../support/epoch.ts'
import { loopA, loopB } from '../support/loop-fixtures.ts'

describe('timing', () => {
  it('names the last instant a Date holds, +275760-09-13T00:00:00Z', () => {
    expect(LATEST_DATE_MS).toBe(8_640_000_000_000_000)
    expect(new Date(LATEST_DATE_MS).toISOString()).toBe('+275760-09-13T00:00:00.000Z')
    expect(new Date(LATEST_DATE_MS + 1).getTime()).toBeNaN()
  })

  it('starts a schedule one interval from its start, stopping at the last date', () => {
    expect(firstOccurrence(1, NOW)).toBe(NOW + 1000)
    expect(firstOccurrence(60, NOW)).toBe(NOW + 60_000)
    expect(firstOccurrence(longestIntervalSeconds(NOW), NOW)).toBe(LATEST_DATE_MS)
    expect(firstOccurrence(longestIntervalSeconds(NOW) + 1, NOW)).toBe(LATEST_DATE_MS)
  })

  it('moves a schedule to the first point of its grid strictly after now, stopping at the last date', () => {
    // loopA: 1 s interval, next_at NOW + 1000.
    expect(nextOccurrence(loopA, NOW + 1000)).toBe(NOW + 2000)
    expect(nextOccurrence(loopA, NOW + 6500)).toBe(NOW + 7000)
    expect(nextOccurrence({ ...loopA, time_in_seconds: Number.MAX_SAFE_INTEGER, next_at: 0 }, NOW)).toBe(LATEST_DATE_MS)
  })

  it('finds the earliest next_at, whatever the order, and none without loops', () => {
    // loopA (created first) is due at NOW + 1000, loopB at NOW + 500.
    expect(earliestNextAt([loopA, loopB])).toBe(NOW + 500)
    expect(earliestNextAt([loopB, loopA])).toBe(NOW + 500)
    expect(earliestNextAt([loopA])).toBe(NOW + 1000)
    expect(earliestNextAt([loopA, { ...loopB, next_at: NOW + 1000 }])).toBe(NOW + 1000)
    expect(earliestNextAt([loopA, loopB, { ...loopA, id: 'loop_c', next_at: 0 }])).toBe(0)
    expect(earliestNextAt([])).toBeUndefined()
  })

  it('gives the longest interval whose first occurrence is still a date', () => {
    expect(longestIntervalSeconds(NOW)).toBe(8_638_204_003_200)
    expect(NOW + longestIntervalSeconds(NOW) * 1000).toBe(8_640_000_000_000_000)
    expect(longestIntervalSeconds(0)).toBe(8_640_000_000_000)
    // Whole seconds, rounded down: one millisecond later loses a whole second.
    expect(longestIntervalSeconds(1)).toBe(8_639_999_999_999)
    expect(longestIntervalSeconds(LATEST_DATE_MS - 999)).toBe(0)
    expect(longestIntervalSeconds(LATEST_DATE_MS - 1000)).toBe(1)
  })
})

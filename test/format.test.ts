import { describe, expect, it } from 'vitest'
import { describeNextDue, formatDuration, formatInstant, formatInterval } from '../src/format.ts'

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [1, '1s'],
    [59, '59s'],
    [60, '1m'],
    [90, '1m 30s'],
    [3600, '1h'],
    [3661, '1h 1m 1s'],
    [7200 + 60 * 5, '2h 5m'],
    [86_400, '1d'],
    [86_400 + 7200 + 3, '1d 2h 3s'],
    [-4, '0s'],
    [1.9, '1s'],
  ])('%s seconds → %s', (seconds, text) => {
    expect(formatDuration(seconds)).toBe(text)
  })

  it('labels intervals', () => {
    expect(formatInterval(90)).toBe('every 1m 30s')
    expect(formatInterval(1)).toBe('every 1s')
  })
})

describe('describeNextDue', () => {
  const now = 1_000_000
  it('counts down, rounding up so it never shows 0s early', () => {
    expect(describeNextDue(now + 8000, now)).toEqual({ overdue: false, text: 'next in 8s' })
    expect(describeNextDue(now + 7001, now)).toEqual({ overdue: false, text: 'next in 8s' })
    expect(describeNextDue(now + 1, now)).toEqual({ overdue: false, text: 'next in 1s' })
    expect(describeNextDue(now + 90_000, now)).toEqual({ overdue: false, text: 'next in 1m 30s' })
  })

  it('is overdue from the due instant on', () => {
    expect(describeNextDue(now, now)).toEqual({ overdue: true, text: 'overdue by 0s' })
    expect(describeNextDue(now - 3500, now)).toEqual({ overdue: true, text: 'overdue by 3s' })
  })
})

describe('formatInstant', () => {
  it('is ISO 8601 UTC for representable instants and total beyond them', () => {
    expect(formatInstant(Date.parse('2026-11-30T00:00:07Z'))).toBe('2026-11-30T00:00:07.000Z')
    expect(formatInstant(8_700_000_000_000_000)).toBe('beyond the representable date range')
    expect(formatInstant(Number.MAX_SAFE_INTEGER)).toBe('beyond the representable date range')
  })

  it('keeps every duration total, however large', () => {
    expect(formatDuration(8_700_000_000_000)).toBe('100694444d 10h 40m')
    expect(describeNextDue(Number.MAX_SAFE_INTEGER, 0).text).toMatch(/^next in \d+d/)
  })
})

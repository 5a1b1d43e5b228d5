import { describe, expect, it } from 'vitest'
import {
  cutToWidth,
  describeNextDue,
  formatDuration,
  formatInstant,
  formatInterval,
  promptOnOneLine,
} from '../../src/shared/format.ts'
import { NOW } from '../support/epoch.ts'

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
  it('counts down, rounding up so it never shows 0s early', () => {
    expect(describeNextDue(NOW + 8000, NOW)).toEqual({ overdue: false, text: 'next in 8s' })
    expect(describeNextDue(NOW + 7001, NOW)).toEqual({ overdue: false, text: 'next in 8s' })
    expect(describeNextDue(NOW + 1, NOW)).toEqual({ overdue: false, text: 'next in 1s' })
    expect(describeNextDue(NOW + 90_000, NOW)).toEqual({ overdue: false, text: 'next in 1m 30s' })
  })

  it('is overdue from the due instant on', () => {
    expect(describeNextDue(NOW, NOW)).toEqual({ overdue: true, text: 'overdue by 0s' })
    expect(describeNextDue(NOW - 3500, NOW)).toEqual({ overdue: true, text: 'overdue by 3s' })
  })
})

describe('formatInstant', () => {
  it('is ISO 8601 UTC for representable instants and total beyond them', () => {
    expect(formatInstant(NOW + 7000)).toBe('2026-11-30T00:00:07.000Z')
    expect(formatInstant(8_700_000_000_000_000)).toBe('beyond the representable date range')
    expect(formatInstant(Number.MAX_SAFE_INTEGER)).toBe('beyond the representable date range')
  })

  it('keeps every duration total, however large', () => {
    expect(formatDuration(8_700_000_000_000)).toBe('100694444d 10h 40m')
    expect(describeNextDue(Number.MAX_SAFE_INTEGER, 0).text).toMatch(/^next in \d+d/)
  })
})

/** Whether a string holds no lone surrogate (what `String.prototype.isWellFormed` checks). */
const wellFormed = (text: string) => !/\p{Cs}/u.test(text)

describe('cutToWidth', () => {
  it('keeps a text that fits, counted in code points, not UTF-16 units', () => {
    expect(cutToWidth('', 1)).toBe('')
    expect(cutToWidth('abc', 3)).toBe('abc')
    expect(cutToWidth('😀😀😀', 3)).toBe('😀😀😀')
    expect(cutToWidth('a😀b', 3)).toBe('a😀b')
  })

  it('cuts to width code points, the last one an ellipsis', () => {
    expect(cutToWidth('abcd', 3)).toBe('ab…')
    expect(cutToWidth('abcd', 1)).toBe('…')
    expect(cutToWidth('😀😀😀😀', 3)).toBe('😀😀…')
  })

  it('never cuts inside a surrogate pair, wherever the pair falls', () => {
    for (let pad = 0; pad < 6; pad += 1) {
      for (let width = 1; width < 12; width += 1) {
        const text = `${'x'.repeat(pad)}${'𠀀😀'.repeat(5)}`
        const cut = cutToWidth(text, width)
        expect(wellFormed(cut), `${pad}/${width}: ${JSON.stringify(cut)}`).toBe(true)
        expect([...cut].length).toBe(Math.min(width, [...text].length))
      }
    }
    // The exact case the presentCall title broke on: a pair straddling unit 79.
    const title = cutToWidth(`${'a'.repeat(78)}😀😀`, 80)
    expect(title).toBe(`${'a'.repeat(78)}😀😀`)
    expect(cutToWidth(`${'a'.repeat(78)}😀😀b`, 80)).toBe(`${'a'.repeat(78)}😀…`)
  })

  it('reads a long text only up to the cut', () => {
    const huge = 'y'.repeat(1_000_000)
    expect(cutToWidth(huge, 5)).toBe('yyyy…')
  })
})

describe('promptOnOneLine', () => {
  it('shows every kind of line break as one ⏎, CRLF included', () => {
    expect(promptOnOneLine('a\nb\r\nc\rd\ve\ff\u0085g\u2028h\u2029i')).toBe('a⏎b⏎c⏎d⏎e⏎f⏎g⏎h⏎i')
    expect(promptOnOneLine('\n\nx\n')).toBe('⏎⏎x⏎')
    expect(promptOnOneLine('tabs\tand  spaces stay')).toBe('tabs\tand  spaces stay')
  })

  it('cuts to 80 code points by default, marks counted', () => {
    expect(promptOnOneLine('z'.repeat(80))).toBe('z'.repeat(80))
    expect(promptOnOneLine('z'.repeat(81))).toBe(`${'z'.repeat(79)}…`)
    expect(promptOnOneLine(`${'\n'.repeat(79)}😀😀`)).toBe(`${'⏎'.repeat(79)}…`)
    expect(promptOnOneLine('one\ntwo', 5)).toBe('one⏎…')
  })
})

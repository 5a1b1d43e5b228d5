/**
 * The `loop` dictionaries and localized durations (src/ui/locales.ts):
 * complete zh and en dictionaries with the same placeholders, and English
 * words equal to the `/loop` command replies' for the same durations (one
 * decomposition and rounding rule in src/shared/format.ts).
 */
import { describe, expect, it } from 'vitest'
import { translator } from '../support/ui-locale.ts'
import { NOW } from '../support/epoch.ts'
import { describeNextDue, formatDuration, formatInterval } from '../../src/shared/format.ts'
import { LOOP_DICTIONARIES, localDue, localDuration, localInterval } from '../../src/ui/locales.ts'

describe('languages', () => {
  it('has complete zh and en dictionaries with the same placeholders', () => {
    const { zh, en } = LOOP_DICTIONARIES
    // A key missing from either dictionary fails here (and, for en, in the compiler).
    expect(Object.keys(en).sort()).toEqual(Object.keys(zh).sort())
    const placeholders = (template: string) => [...template.matchAll(/\{(\w+)\}/g)].map(([, name]) => name).sort()
    for (const key of Object.keys(zh) as (keyof typeof zh)[]) {
      expect(placeholders(en[key]), key).toEqual(placeholders(zh[key]))
      if (key !== 'duration.separator') {
        expect(zh[key].trim(), key).not.toBe('')
        expect(en[key].trim(), key).not.toBe('')
      }
    }
    // zh carries no English word; en no Chinese character.
    const words = (value: string) =>
      value
        .replace(/\{\w+\}/g, '')
        .replace('/loop', '')
        .replace('DSH', '')
    for (const value of Object.values(zh)) expect(words(value)).not.toMatch(/[A-Za-z]/)
    for (const value of Object.values(en)) expect(value).not.toMatch(/[\u3000-\u9fff\uff00-\uffef]/)
  })
})

describe('localized durations (src/ui/locales.ts)', () => {
  it('says in English exactly what the /loop command replies say (one decomposition and rounding rule in src/shared/format.ts)', () => {
    const en = translator('en')
    for (const seconds of [0, 0.5, 1, 59, 60, 61, 90, 3_599, 3_600, 3_661, 86_399, 86_400, 90_061, 31_536_000]) {
      expect(localDuration(en, seconds)).toBe(formatDuration(seconds))
      expect(localInterval(en, seconds)).toBe(formatInterval(seconds))
    }
    for (const offset of [-90_061_000, -65_500, -1_000, -999, 0, 1, 999, 1_000, 1_001, 59_999, 125_000, 7_200_000]) {
      expect(localDue(en, NOW + offset, NOW)).toEqual(describeNextDue(NOW + offset, NOW))
    }
  })
})

/** The two releases, each one object, with plain values (SPEC.md §13 "Leaving loop"). */
import { describe, expect, it } from 'vitest'
import { RELEASE_MODES, markRow } from '../../src/release/modes.ts'
import { refusal } from '../support/release-home.ts'

describe('markRow', () => {
  it('puts the marker before the closing brace of a loop/change row, every other byte kept', () => {
    const row = '{"type":"loop/change","seq":4,"time":10,"data":{"version":1,"operation":"delete","id":"loop_1"}}'
    expect(markRow(Buffer.from(row), 'row 5')).toEqual({
      kind: 'splice',
      at: row.length - 1,
      length: 0,
      insert: ',"ignorable":true',
    })
  })

  it('leaves a row an earlier run marked, and refuses one that does not end as a JSON object', () => {
    expect(
      markRow(Buffer.from('{"type":"loop/change","seq":4,"time":10,"data":{},"ignorable":true}'), 'row 5'),
    ).toBeUndefined()
    // A marker inside the data is not the row's.
    expect(markRow(Buffer.from('{"type":"loop/change","seq":4,"data":{"ignorable":true}}'), 'row 5')).toMatchObject({
      kind: 'splice',
    })
    expect(refusal(() => markRow(Buffer.from('{"type":"loop/change","seq":4,"data":{'), 'row 3'))).toBe(
      'row 3 does not end as a JSON object does',
    )
  })
})

describe('RELEASE_MODES', () => {
  const tally = { rows: 10, marked: 3, alreadyMarked: 2, removed: 4 }
  const fork = { id: 'f', seedLength: 2, fields: {} }
  const root = { id: 's', seedLength: undefined, fields: {} }

  it('removal: marks, reads every log in one pass, keeps no originals, and says what it marked', () => {
    const { removal } = RELEASE_MODES
    expect(Object.isFrozen(removal)).toBe(true)
    expect([removal.countsFirst(fork), removal.countsFirst(root), removal.keepsOriginals]).toEqual([
      false,
      false,
      false,
    ])
    expect(removal.written(tally)).toBe(3)
    expect(removal.describe(tally, false)).toBe('3 loop/change rows marked ignorable (2 already were)')
    expect(removal.describe({ ...tally, alreadyMarked: 0 }, true)).toBe('3 loop/change rows would be marked ignorable')
  })

  it('upgrade: counts a fork first, keeps the originals, and says what it removed and kept', () => {
    const { upgrade } = RELEASE_MODES
    expect(Object.isFrozen(upgrade)).toBe(true)
    expect([upgrade.countsFirst(fork), upgrade.countsFirst(root), upgrade.keepsOriginals]).toEqual([true, false, true])
    expect(upgrade.written(tally)).toBe(4)
    expect(upgrade.describe(tally, false)).toBe('4 loop/change rows removed, 6 rows kept')
    expect(upgrade.describe(tally, true)).toBe('4 loop/change rows would be removed, 6 rows kept')
  })
})

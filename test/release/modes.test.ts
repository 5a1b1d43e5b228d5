/** The two releases and the stage each creates per log, with plain values (SPEC.md §13 "Leaving loop"). */
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
  const tally = { rows: 10, loopRows: 3, alreadyMarked: 2 }
  const fork = { id: 'f', seedLength: 2, fields: { type: 'session', id: 'f', seedLength: 2 } }
  const root = { id: 's', seedLength: undefined, fields: {} }
  const loopRow = (seq: number) => Buffer.from(`{"type":"loop/change","seq":${seq},"time":1,"data":{}}`)

  it('removal: a stage per log that marks in one pass and counts what it marked; no originals kept', () => {
    const { removal } = RELEASE_MODES
    expect(Object.isFrozen(removal)).toBe(true)
    const stage = removal.createStage(fork)
    expect([stage.countsFirst, stage.headerEdit, stage.afterCount(), removal.keepsOriginals]).toEqual([
      false,
      undefined,
      stage,
      false,
    ])
    expect(stage.row(loopRow(0))).toMatchObject({ kind: 'splice' })
    expect(stage.row(Buffer.from('{"type":"loop/change","seq":1,"data":{},"ignorable":true}'))).toBeUndefined()
    expect(stage.row(Buffer.from('{"type":"user/message","seq":2}'))).toBeUndefined()
    expect(stage.finish()).toEqual({ status: 'released', tally: { rows: 3, loopRows: 1, alreadyMarked: 1 } })
    // Each log's stage counts its own.
    expect(removal.createStage(root).finish()).toEqual({
      status: 'no-loops',
      tally: { rows: 0, loopRows: 0, alreadyMarked: 0 },
    })
    const marked = removal.createStage(root)
    marked.row(Buffer.from('{"type":"loop/change","seq":0,"data":{},"ignorable":true}'))
    expect(marked.finish()).toEqual({ status: 'already-released', tally: { rows: 1, loopRows: 0, alreadyMarked: 1 } })
    expect(removal.describe({ status: 'released', tally }, { passive: '' })).toBe(
      '3 loop/change rows marked ignorable (2 already were)',
    )
    expect(
      removal.describe(
        { status: 'released', tally: { rows: 10, loopRows: 3, alreadyMarked: 0 } },
        { passive: 'would be ' },
      ),
    ).toBe('3 loop/change rows would be marked ignorable')
    // A rebuilt log is released though no row changed; one found as the removal leaves it is already released.
    expect(
      removal.describe({ status: 'released', tally: { rows: 10, loopRows: 0, alreadyMarked: 4 } }, { passive: '' }),
    ).toBe('0 loop/change rows marked ignorable (4 already were)')
    expect(
      removal.describe(
        { status: 'already-released', tally: { rows: 10, loopRows: 0, alreadyMarked: 4 } },
        { passive: '' },
      ),
    ).toBe('all 4 loop/change rows already marked; nothing written')
  })

  it('upgrade: counts a fork first and writes it in a second pass seeded by the first; keeps the originals', () => {
    const { upgrade } = RELEASE_MODES
    expect(Object.isFrozen(upgrade)).toBe(true)
    expect([upgrade.createStage(root).countsFirst, upgrade.keepsOriginals]).toEqual([false, true])
    const counting = upgrade.createStage(fork)
    expect([counting.countsFirst, counting.headerEdit]).toEqual([true, undefined])
    expect(counting.row(loopRow(0))).toEqual({ kind: 'drop' })
    const writing = counting.afterCount()
    expect(writing.countsFirst).toBe(false)
    expect(writing.headerEdit).toEqual({ kind: 'replace', text: '{"type":"session","id":"f","seedLength":1}' })
    expect(writing.finish()).toEqual({ status: 'no-loops', tally: { rows: 0, loopRows: 0 } })
    // The fork's row is its parent's: the fork loses no loop of its own.
    expect(counting.finish()).toEqual({ status: 'released', tally: { rows: 1, loopRows: 1 }, removedLoops: [] })
    expect(upgrade.describe({ status: 'released', tally: { rows: 10, loopRows: 4 } }, { passive: '' })).toBe(
      '4 loop/change rows removed, 6 rows kept',
    )
    expect(upgrade.describe({ status: 'released', tally: { rows: 10, loopRows: 4 } }, { passive: 'would be ' })).toBe(
      '4 loop/change rows would be removed, 6 rows kept',
    )
  })
})

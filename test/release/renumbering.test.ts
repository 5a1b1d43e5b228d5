/** The upgrade's arithmetic, with plain values: the seq each kept event has, and every field that names one (SPEC.md §13 "Leaving loop"). */
import { describe, expect, it } from 'vitest'
import { readRowHead } from '../../src/release/log-format.ts'
import { Renumbering, renumberHeader, renumberRow } from '../../src/release/renumbering.ts'
import { refusal } from '../support/release-home.ts'

describe('Renumbering', () => {
  it('maps a kept event past the removed rows before it, and refuses a reference to a removed one', () => {
    const renumbering = new Renumbering()
    renumbering.remove(2)
    renumbering.remove(5)
    expect(renumbering.removedCount).toBe(2)
    expect([0, 1, 3, 4, 6, 9].map((seq) => renumbering.namedEvent(seq, 'x'))).toEqual([0, 1, 2, 3, 4, 7])
    expect(refusal(() => renumbering.namedEvent(5, 'data.sourceEventSeq'))).toBe(
      'data.sourceEventSeq names a loop/change row',
    )
    expect(refusal(() => renumbering.namedEvent(-1, 'seq'))).toBe('seq is not a seq')
    expect(refusal(() => renumbering.namedEvent('3', 'seq'))).toBe('seq is not a seq')
  })

  it('maps "through" to the last kept event at or before it, and counts a prefix', () => {
    const renumbering = new Renumbering()
    renumbering.remove(0)
    renumbering.remove(3)
    expect([1, 2, 3, 4].map((seq) => renumbering.through(seq, 'x'))).toEqual([0, 1, 1, 2])
    expect(refusal(() => renumbering.through(0, 'data.throughSeq'))).toBe('data.throughSeq names only loop/change rows')
    expect(refusal(() => renumbering.through(null, 'data.throughSeq'))).toBe('data.throughSeq is not a seq')
    expect([0, 1, 3, 4, 6].map((count) => renumbering.count(count, 'x'))).toEqual([0, 0, 2, 2, 4])
    expect(refusal(() => renumbering.count(-1, 'the header seedLength'))).toBe('the header seedLength is not a count')
  })
})

describe('renumberRow', () => {
  const removedAt = (...seqs: number[]): Renumbering => {
    const renumbering = new Renumbering()
    for (const seq of seqs) renumbering.remove(seq)
    return renumbering
  }
  /** A row's bytes with an edit made. */
  const edited = (line: string, renumbering: Renumbering): string => {
    const row = Buffer.from(line)
    const edit = renumberRow(row, readRowHead(row, 1), renumbering, 1)
    if (edit?.kind === 'splice') return `${line.slice(0, edit.at)}${edit.insert}${line.slice(edit.at + edit.length)}`
    if (edit?.kind === 'replace') return edit.text
    throw new Error(`unexpected edit ${JSON.stringify(edit)}`)
  }
  const rewrite = (row: Record<string, unknown>, renumbering: Renumbering) =>
    JSON.parse(edited(JSON.stringify(row), renumbering)) as unknown

  it('rewrites only the seq of a row that names no other event, keeping every other byte', () => {
    const line = '{"type":"assistant/chunk","seq":10,"time":2,"data":{"text":"\\u00e9 \\"seq\\":10"}}'
    expect(renumberRow(Buffer.from(line), readRowHead(Buffer.from(line), 1), removedAt(3), 1)).toEqual({
      kind: 'splice',
      at: 32,
      length: 2,
      insert: '9',
    })
    expect(edited(line, removedAt(3))).toBe(
      '{"type":"assistant/chunk","seq":9,"time":2,"data":{"text":"\\u00e9 \\"seq\\":10"}}',
    )
  })

  it('renumbers the envelope: seq, a surface replacement and its sources', () => {
    const row = {
      type: 'user/message',
      seq: 9,
      time: 1,
      data: { content: [] },
      surfaceOp: { op: 'replace', start: 3, end: 7 },
      sourceEventSeqs: [3, 4, 7],
    }
    expect(rewrite(row, removedAt(2, 5))).toEqual({
      ...row,
      seq: 7,
      surfaceOp: { op: 'replace', start: 2, end: 5 },
      sourceEventSeqs: [2, 3, 5],
    })
    expect(rewrite({ ...row, surfaceOp: 'append' }, removedAt(2))).toMatchObject({
      seq: 8,
      surfaceOp: 'append',
      sourceEventSeqs: [2, 3, 6],
    })
  })

  it('renumbers every data field of the table, and a packed run seq0', () => {
    const renumbering = removedAt(1)
    expect(
      rewrite(
        { type: 'command/done', seq: 5, data: { commandId: 'c', kind: 'success', sourceEventSeq: 3 } },
        renumbering,
      ),
    ).toEqual({
      type: 'command/done',
      seq: 4,
      data: { commandId: 'c', kind: 'success', sourceEventSeq: 2 },
    })
    expect(
      rewrite(
        {
          type: 'compaction/summary',
          seq: 8,
          data: { shadowedRange: { start: 2, end: 4 }, shadowedSeqs: [2, 3, 4], summary: 's' },
        },
        renumbering,
      ),
    ).toEqual({
      type: 'compaction/summary',
      seq: 7,
      data: { shadowedRange: { start: 1, end: 3 }, shadowedSeqs: [1, 2, 3], summary: 's' },
    })
    expect(rewrite({ type: 'session/title', seq: 6, data: { title: 't', messageSeqs: [0, 2] } }, renumbering)).toEqual({
      type: 'session/title',
      seq: 5,
      data: { title: 't', messageSeqs: [0, 1] },
    })
    expect(
      rewrite(
        { type: 'session-log-deepseek/delivery-accepted', seq: 6, data: { sessionId: 's', throughSeq: 1 } },
        renumbering,
      ),
    ).toEqual({
      type: 'session-log-deepseek/delivery-accepted',
      seq: 5,
      data: { sessionId: 's', throughSeq: 0 },
    })
    expect(rewrite({ type: 'command/done', seq: 5, data: { commandId: 'c', kind: 'error' } }, renumbering)).toEqual({
      type: 'command/done',
      seq: 4,
      data: { commandId: 'c', kind: 'error' },
    })
    expect(rewrite({ type: 'text-chunks', seq0: 4, time0: 1, data: { texts: ['a', 'b', 'c'] } }, renumbering)).toEqual({
      type: 'text-chunks',
      seq0: 3,
      time0: 1,
      data: { texts: ['a', 'b', 'c'] },
    })
  })

  it('refuses a field of the wrong shape', () => {
    const renumbering = removedAt(1)
    expect(refusal(() => rewrite({ type: 'session/title', seq: 6, data: { messageSeqs: 2 } }, renumbering))).toBe(
      'row 1 data.messageSeqs is not a list of seqs',
    )
    expect(
      refusal(() => rewrite({ type: 'compaction/prune', seq: 6, data: { shadowedRange: [2, 3] } }, renumbering)),
    ).toBe('row 1 data.shadowedRange is not a range')
  })

  it('refuses a surface marker that is neither an append nor a range', () => {
    expect(refusal(() => rewrite({ type: 'tool/result', seq: 6, data: {}, surfaceOp: 'replace' }, removedAt(1)))).toBe(
      'row 1 surfaceOp is not a range',
    )
  })
})

describe('renumberHeader', () => {
  it("counts a fork's inherited events without the removed ones, every other field kept", () => {
    const renumbering = new Renumbering()
    renumbering.remove(1)
    renumbering.remove(4)
    expect(renumberHeader({ type: 'session', version: 0, id: 'f', seedLength: 4 }, renumbering)).toEqual({
      kind: 'replace',
      text: '{"type":"session","version":0,"id":"f","seedLength":3}',
    })
  })
})

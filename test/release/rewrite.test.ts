/** One log's rewrite, batch by batch, with plain values (SPEC.md §13 "Leaving loop"). */
import { describe, expect, it } from 'vitest'
import { LogRefusal } from '../../src/release/refusals.ts'
import { RELEASE_MODES } from '../../src/release/modes.ts'
import { createRewrite } from '../../src/release/rewrite.ts'

const header = '{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":0}'
const row = (type: string, seq: number, data: unknown = {}) => JSON.stringify({ type, seq, time: seq, data })
/** A batch of rows as its bytes. */
const batch = (...rows: string[]) => Buffer.from(rows.map((line) => `${line}\n`).join(''))
/** A rewritten batch's text (`undefined`: written as it was). */
const text = (bytes: Buffer | undefined) => bytes?.toString()

describe('createRewrite', () => {
  it('removal: marks the loop rows of a batch and leaves a batch without one as it was', () => {
    const rewrite = createRewrite(RELEASE_MODES.removal)
    expect(rewrite.batch(batch(header))).toBeUndefined()
    expect(rewrite.header).toEqual({ id: 's', seedLength: undefined, fields: JSON.parse(header) })
    // A row that only mentions the type is not one.
    expect(rewrite.batch(batch(row('user/message', 0, { text: '{"type":"loop/change",' })))).toBeUndefined()
    expect(text(rewrite.batch(batch(row('user/message', 1), row('loop/change', 2))))).toBe(
      `${row('user/message', 1)}\n${row('loop/change', 2).slice(0, -1)},"ignorable":true}\n`,
    )
    expect(rewrite.stage?.finish().tally).toEqual({ rows: 3, loopRows: 1, alreadyMarked: 0 })
  })

  it('removal: counts the rows an earlier run marked, and refuses a loop row that does not end as JSON does', () => {
    const rewrite = createRewrite(RELEASE_MODES.removal)
    rewrite.batch(batch(header))
    expect(rewrite.batch(batch(`${row('loop/change', 0).slice(0, -1)},"ignorable":true}`))).toBeUndefined()
    expect(rewrite.stage?.finish().tally).toEqual({ rows: 1, loopRows: 0, alreadyMarked: 1 })
    expect(() => rewrite.batch(batch('{"type":"loop/change","seq":1,"data":{'))).toThrow(
      new LogRefusal('row 2 does not end as a JSON object does'),
    )
  })

  it('upgrade: refuses a row it must parse that is not UTF-8', () => {
    const rewrite = createRewrite(RELEASE_MODES.upgrade)
    rewrite.batch(batch(header, row('loop/change', 0)))
    expect(() =>
      rewrite.batch(Buffer.from('{"type":"user/message","seq":1,"time":1,"data":"\xff"}\n', 'latin1')),
    ).toThrow(new LogRefusal('row 2 holds bytes that are not UTF-8'))
  })

  it('upgrade: drops loop rows, renumbers every row after the first, and writes nothing for a batch of loop rows only', () => {
    const rewrite = createRewrite(RELEASE_MODES.upgrade)
    expect(rewrite.batch(batch(header, row('user/message', 0)))).toBeUndefined()
    expect(text(rewrite.batch(batch(row('loop/change', 1))))).toBe('')
    expect(text(rewrite.batch(batch(row('user/message', 2))))).toBe(
      `${JSON.stringify({ type: 'user/message', seq: 1, time: 2, data: {} })}\n`,
    )
    expect(rewrite.stage?.finish().tally).toEqual({ rows: 3, loopRows: 1 })
  })

  it('upgrade: refuses a reference to a removed row, and a row that does not begin as DSH writes one', () => {
    const dangling = createRewrite(RELEASE_MODES.upgrade)
    expect(() =>
      dangling.batch(batch(header, row('loop/change', 0), row('command/done', 1, { sourceEventSeq: 0 }))),
    ).toThrow(new LogRefusal('row 2 data.sourceEventSeq names a loop/change row'))
    const foreign = createRewrite(RELEASE_MODES.upgrade)
    expect(() => foreign.batch(batch(header, row('loop/change', 0), '{"seq":1,"type":"user/message"}'))).toThrow(
      new LogRefusal('row 2 does not begin with its type and seq as DSH writes a row'),
    )
  })

  it('upgrade of a fork: the first pass finds the rows to go, the second counts them out of the header', () => {
    const fork = '{"type":"session","version":0,"id":"f","seedLength":3}'
    const rows = [row('user/message', 0), row('loop/change', 1), row('user/message', 2), row('loop/change', 3)]
    const first = createRewrite(RELEASE_MODES.upgrade)
    first.batch(batch(fork, ...rows))
    // The header is not read again: the first pass's is handed on.
    const second = createRewrite(RELEASE_MODES.upgrade, { header: first.header!, stage: first.stage! })
    expect(text(second.batch(batch(fork, ...rows)))).toBe(
      `{"type":"session","version":0,"id":"f","seedLength":2}\n${row('user/message', 0)}\n${JSON.stringify({ type: 'user/message', seq: 1, time: 2, data: {} })}\n`,
    )
    expect(second.stage?.finish().tally).toEqual({ rows: 4, loopRows: 2 })
  })

  it('refuses a batch that does not end with a whole row', () => {
    expect(() => createRewrite(RELEASE_MODES.removal).batch(Buffer.from(header))).toThrow(
      new LogRefusal('a batch of the log does not end with a whole row'),
    )
  })

  it("upgrade: folds the session's own loop records to name what it loses, not a fork's inherited ones", () => {
    const loop = (id: string, prompt: string) => ({ id, prompt, time_in_seconds: 60, next_at: 60_000 })
    const fork = createRewrite(RELEASE_MODES.upgrade)
    fork.batch(
      batch(
        '{"type":"session","version":0,"id":"f","createdAt":1,"delegationDepth":0,"seedLength":2}',
        row('loop/change', 0, { version: 1, operation: 'create', loop: loop('loop_parent', 'inherited') }),
        row('user/message', 1),
        row('loop/change', 2, { version: 1, operation: 'create', loop: loop('loop_own', 'mine') }),
      ),
    )
    expect(fork.stage?.finish().removedLoops).toEqual([{ id: 'loop_own', prompt: 'mine', time_in_seconds: 60 }])
    const unreadable = createRewrite(RELEASE_MODES.upgrade)
    unreadable.batch(batch(header, '{"type":"loop/change","seq":0,"data":{'))
    expect(unreadable.stage?.finish()).toEqual({
      status: 'released',
      tally: { rows: 1, loopRows: 1 },
      unreadableLoops: 'corrupt loop/change record: payload is not an object',
    })
  })
})

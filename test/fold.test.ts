/** The durable `loop/change` protocol (src/fold.ts): ids, the prompt rule, the strict decoder, the one plain fold and id allocation. */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  CorruptLoopRecord,
  EMPTY_LOOP_FOLD,
  LOOP_CHANGE_EVENT,
  applyLoopChange,
  createChange,
  decodeLoopChange,
  deleteChange,
  dispatchChange,
  firstNonXmlCharacter,
  forkChange,
  inheritedLoopIds,
  foldLoopChange,
  foldLoopEvents,
  isLoopId,
  nextLoopId,
  type FoldableEvent,
  type LoopFold,
} from '../src/fold.ts'
import type { LoopRecord, StoredLoopChange } from '../src/types.ts'
import { NOW } from './support/epoch.ts'
import { caughtAs, event, foldOf, loopA, loopB } from './support/loop-fixtures.ts'

/** Freeze a value and everything it holds, so any write in place throws (modules run in strict mode). */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key])
  }
  return value
}

/** The error a decode or a fold step throws, asserted to be a {@link CorruptLoopRecord}. */
const caughtCorrupt = (fn: () => unknown) => caughtAs(CorruptLoopRecord, fn)

/** The diagnostic of a corrupt record. */
const diagnostic = (detail: string) => `corrupt loop/change record: ${detail}`

/** A legacy `update` of a record, as the previous build wrote it. */
const update = (loop: object) => ({ version: 1, operation: 'update', loop })

describe('the event type', () => {
  it('is loop/change', () => {
    expect(LOOP_CHANGE_EVENT).toBe('loop/change')
  })
})

describe('ids', () => {
  it('follow one rule: loop_ and 1-64 letters, digits, _ or -', () => {
    const accepted = [
      'loop_1a2b3c4d',
      'loop_a',
      'loop_A-b_9',
      'loop_AZaz09_-',
      'loop__',
      'loop_-',
      `loop_${'x'.repeat(64)}`,
    ]
    expect(accepted.map(isLoopId)).toEqual(accepted.map(() => true))
    const refused = [
      'loop_',
      'loop_a b',
      'loop_a\n',
      `loop_${'x'.repeat(65)}`,
      'loop_<x>',
      'Loop_a',
      'loopa',
      'loo',
      '',
    ]
    // Each neighbour of an accepted range: '/' ':' '@' '[' '^' '`' '{' ',' '.' and DEL, a CR, an accented letter.
    const neighbours = ['/', ':', '@', '[', '^', '`', '{', ',', '.', '\u007f', '\r', 'é'].map(
      (character) => `loop_a${character}`,
    )
    const others = [7, undefined, null, ['loop_a'], { id: 'loop_a' }]
    expect([...refused, ...neighbours, ...others].map(isLoopId)).toEqual(
      [...refused, ...neighbours, ...others].map(() => false),
    )
  })
})

describe('the prompt rule', () => {
  it.each([
    ['an empty string', ''],
    ['plain text', 'check CI'],
    ['TAB, LF and CR', 'a\tb\nc\rd\r\ne'],
    ['DEL and the C1 controls', '\u007F\u0080\u0085\u009F'],
    ['a paired surrogate', '\uD83D\uDE00'],
    ['the highest pair', '\uDBFF\uDFFF'],
    ['U+FFFD and U+FFFC', '\uFFFD\uFFFC'],
    ['a zero-width space', '\u200B'],
  ])('finds nothing in %s', (_name, prompt) => {
    expect(firstNonXmlCharacter(prompt)).toBeUndefined()
  })

  it.each([
    ['a bell', 'ring\u0007', 4, 'U+0007'],
    ['NUL', '\u0000', 0, 'U+0000'],
    ['a backspace', 'a\u0008', 1, 'U+0008'],
    ['VT', 'a\u000Bb', 1, 'U+000B'],
    ['FF', 'a\u000Cb', 1, 'U+000C'],
    ['SO', 'a\u000Eb', 1, 'U+000E'],
    ['ESC', '\u001b[31m', 0, 'U+001B'],
    ['US', 'a\u001Fb', 1, 'U+001F'],
    ['U+FFFE', 'x\uFFFE', 1, 'U+FFFE'],
    ['U+FFFF', 'x\uFFFF', 1, 'U+FFFF'],
    ['a high surrogate at the end', 'x\uD800', 1, 'U+D800'],
    ['a high surrogate before a letter', '\uDBFFx', 0, 'U+DBFF'],
    ['two high surrogates', '\uD83D\uD83D\uDE00', 0, 'U+D83D'],
    ['a lone low surrogate', '\uDC00', 0, 'U+DC00'],
    ['a low surrogate after a pair', '\uD83D\uDE00\uDE00', 2, 'U+DE00'],
    ['a pair the wrong way round', '\uDE00\uD83D', 0, 'U+DE00'],
    ['the first of several', 'ab\u0002\u0001', 2, 'U+0002'],
  ])('finds %s', (_name, prompt, index, name) => {
    expect(firstNonXmlCharacter(prompt)).toStrictEqual({ index, name })
  })
})

describe('the changes this build writes', () => {
  it('are exactly the v1 create, delete, dispatch and fork', () => {
    expect(forkChange(['loop_a', 'loop_b'])).toStrictEqual({ version: 1, operation: 'fork', ids: ['loop_a', 'loop_b'] })
    expect(createChange(loopA)).toStrictEqual({ version: 1, operation: 'create', loop: loopA })
    expect(deleteChange('loop_a')).toStrictEqual({ version: 1, operation: 'delete', id: 'loop_a' })
    expect(dispatchChange('loop_a', NOW)).toStrictEqual({
      version: 1,
      operation: 'dispatch',
      id: 'loop_a',
      next_at: NOW,
    })
  })
})

/** Every malformed payload, with the defect the strict decoding names. */
const CORRUPT_RECORDS: [unknown, string][] = [
  [null, 'payload is not an object'],
  [[], 'payload is not an object'],
  ['loop_a', 'payload is not an object'],
  [7, 'payload is not an object'],
  [{ operation: 'delete', id: 'loop_a' }, 'unsupported version undefined'],
  [{ version: 2, operation: 'delete', id: 'loop_a' }, 'unsupported version 2'],
  [{ version: '1', operation: 'delete', id: 'loop_a' }, 'unsupported version "1"'],
  [{ version: 1, operation: 'pause', id: 'loop_a' }, 'unknown operation "pause"'],
  [{ version: 1, operation: 'Create', loop: loopA }, 'unknown operation "Create"'],
  [{ version: 1, id: 'loop_a' }, 'unknown operation undefined'],
  [{ version: 1, operation: 'delete', id: 'loop_a', extra: 1 }, 'unexpected field "extra" on delete'],
  [{ version: 1, extra: 1, operation: 'delete', id: 'loop_a' }, 'unexpected field "extra" on delete'],
  [{ version: 1, operation: 'delete' }, 'missing field "id" on delete'],
  [{ version: 1, operation: 'delete', next_at: 5 }, 'unexpected field "next_at" on delete'],
  [{ version: 1, operation: 'dispatch', id: 'loop_a' }, 'missing field "next_at" on dispatch'],
  [{ version: 1, operation: 'dispatch', next_at: 5 }, 'missing field "id" on dispatch'],
  [{ version: 1, operation: 'dispatch', id: 'loop_a', next_at: 5, loop: loopA }, 'unexpected field "loop" on dispatch'],
  [{ version: 1, operation: 'create' }, 'missing field "loop" on create'],
  [{ ...createChange(loopA), extra: 1 }, 'unexpected field "extra" on create'],
  [{ version: 1, operation: 'update', loop: loopA, id: 'loop_a' }, 'unexpected field "id" on update'],
  [{ version: 1, operation: 'update' }, 'missing field "loop" on update'],
  [{ version: 1, operation: 'dispatch', id: 'loop_a', next_at: 1.5 }, 'invalid dispatch next_at'],
  [{ version: 1, operation: 'dispatch', id: 'loop_a', next_at: -1 }, 'invalid dispatch next_at'],
  [{ version: 1, operation: 'dispatch', id: 'loop_a', next_at: '5' }, 'invalid dispatch next_at'],
  [{ version: 1, operation: 'dispatch', id: 'loop_a', next_at: null }, 'invalid dispatch next_at'],
  [
    { version: 1, operation: 'dispatch', id: 'loop_a', next_at: Number.MAX_SAFE_INTEGER + 1 },
    'invalid dispatch next_at',
  ],
  [{ version: 1, operation: 'delete', id: 'loop_a b' }, 'invalid id'],
  [{ version: 1, operation: 'delete', id: 'x' }, 'invalid id'],
  [{ version: 1, operation: 'delete', id: 'loop_' }, 'invalid id'],
  [{ version: 1, operation: 'delete', id: 9 }, 'invalid id'],
  [{ version: 1, operation: 'dispatch', id: 'loop_', next_at: 5 }, 'invalid id'],
  // The id is read before the next_at.
  [{ version: 1, operation: 'dispatch', id: 9, next_at: -1 }, 'invalid id'],
  [{ version: 1, operation: 'create', loop: 'x' }, 'loop is not an object'],
  [{ version: 1, operation: 'create', loop: null }, 'loop is not an object'],
  [{ version: 1, operation: 'create', loop: [loopA] }, 'loop is not an object'],
  [{ version: 1, operation: 'create', loop: { ...loopA, colour: 'red' } }, 'unexpected field "colour" on loop'],
  [
    {
      version: 1,
      operation: 'create',
      loop: { id: 'bad id', colour: 'red', prompt: '', time_in_seconds: 0, next_at: -1 },
    },
    'unexpected field "colour" on loop',
  ],
  [update({ ...loopA, state: 'overdue' }), 'unexpected field "state" on loop'],
  [{ version: 1, operation: 'create', loop: { ...loopA, id: 'loop_' } }, 'invalid id'],
  [{ version: 1, operation: 'create', loop: { ...loopA, id: 9 } }, 'invalid id'],
  [{ version: 1, operation: 'create', loop: { prompt: 'p', time_in_seconds: 1, next_at: 0 } }, 'invalid id'],
  // The id is read before the prompt.
  [{ version: 1, operation: 'create', loop: { ...loopA, id: 'bad id', prompt: '' } }, 'invalid id'],
  [{ version: 1, operation: 'create', loop: { ...loopA, prompt: ' padded' } }, 'invalid prompt for loop_a'],
  [{ version: 1, operation: 'create', loop: { ...loopA, prompt: 'padded\n' } }, 'invalid prompt for loop_a'],
  [{ version: 1, operation: 'create', loop: { ...loopA, prompt: '\u3000wide \u00a0' } }, 'invalid prompt for loop_a'],
  [{ version: 1, operation: 'create', loop: { ...loopA, prompt: '' } }, 'invalid prompt for loop_a'],
  [{ version: 1, operation: 'create', loop: { ...loopA, prompt: 5 } }, 'invalid prompt for loop_a'],
  [{ version: 1, operation: 'create', loop: { ...loopA, prompt: 'ring\u0007' } }, 'invalid prompt for loop_a'],
  [{ version: 1, operation: 'create', loop: { ...loopA, prompt: 'a\u000Bb' } }, 'invalid prompt for loop_a'],
  [{ version: 1, operation: 'create', loop: { ...loopA, prompt: 'half \uD83D pair' } }, 'invalid prompt for loop_a'],
  [{ version: 1, operation: 'create', loop: { ...loopA, prompt: 'non\uFFFEchar' } }, 'invalid prompt for loop_a'],
  [
    { version: 1, operation: 'create', loop: { id: 'loop_a', time_in_seconds: 1, next_at: 0 } },
    'invalid prompt for loop_a',
  ],
  [
    { version: 1, operation: 'create', loop: { id: 'loop_a', prompt: 'p', next_at: 0 } },
    'invalid time_in_seconds for loop_a',
  ],
  [{ version: 1, operation: 'create', loop: { ...loopA, time_in_seconds: 0 } }, 'invalid time_in_seconds for loop_a'],
  [{ version: 1, operation: 'create', loop: { ...loopA, time_in_seconds: -1 } }, 'invalid time_in_seconds for loop_a'],
  [{ version: 1, operation: 'create', loop: { ...loopA, time_in_seconds: 1.5 } }, 'invalid time_in_seconds for loop_a'],
  [{ version: 1, operation: 'create', loop: { ...loopA, time_in_seconds: '1' } }, 'invalid time_in_seconds for loop_a'],
  [
    { version: 1, operation: 'create', loop: { ...loopA, time_in_seconds: Number.MAX_SAFE_INTEGER + 1 } },
    'invalid time_in_seconds for loop_a',
  ],
  [
    { version: 1, operation: 'create', loop: { id: 'loop_a', prompt: 'p', time_in_seconds: 1 } },
    'invalid next_at for loop_a',
  ],
  [{ version: 1, operation: 'create', loop: { ...loopA, next_at: '1' } }, 'invalid next_at for loop_a'],
  [{ version: 1, operation: 'create', loop: { ...loopA, next_at: -1 } }, 'invalid next_at for loop_a'],
  [{ version: 1, operation: 'create', loop: { ...loopA, next_at: 1.5 } }, 'invalid next_at for loop_a'],
  [{ version: 1, operation: 'create', loop: { ...loopA, next_at: null } }, 'invalid next_at for loop_a'],
  [
    { version: 1, operation: 'create', loop: { ...loopA, next_at: Number.MAX_SAFE_INTEGER + 1 } },
    'invalid next_at for loop_a',
  ],
  [{ version: 1, operation: 'create', loop: { ...loopA, title: 5 } }, 'invalid legacy title for loop_a'],
  [update({ ...loopA, title: 5 }), 'invalid legacy title for loop_a'],
  [update({ ...loopA, title: null }), 'invalid legacy title for loop_a'],
  [update({ ...loopA, allow_steer: 'yes' }), 'invalid legacy allow_steer for loop_a'],
  [{ version: 1, operation: 'create', loop: { ...loopA, allow_steer: 1 } }, 'invalid legacy allow_steer for loop_a'],
]

describe('decoding', () => {
  it('decodes the three v1 operations and the legacy update exactly', () => {
    expect(decodeLoopChange(createChange(loopA))).toStrictEqual({ version: 1, operation: 'create', loop: loopA })
    expect(decodeLoopChange(deleteChange('loop_a'))).toStrictEqual({ version: 1, operation: 'delete', id: 'loop_a' })
    expect(decodeLoopChange(dispatchChange('loop_a', NOW))).toStrictEqual({
      version: 1,
      operation: 'dispatch',
      id: 'loop_a',
      next_at: NOW,
    })
    expect(decodeLoopChange(update(loopB))).toStrictEqual({ version: 1, operation: 'update', loop: loopB })
  })

  it('reads the fields of a hand-written record in any order', () => {
    const { id, prompt, time_in_seconds, next_at } = loopA
    const create = { loop: { next_at, time_in_seconds, prompt, id }, operation: 'create', version: 1 }
    const dispatch = { next_at: NOW, id: 'loop_a', version: 1, operation: 'dispatch' }
    expect([decodeLoopChange(create), decodeLoopChange(dispatch)]).toEqual([
      createChange(loopA),
      dispatchChange('loop_a', NOW),
    ])
  })

  it('strips the previous build title and allow_steer from create and update', () => {
    const legacy = { ...loopA, title: 'Build', allow_steer: false }
    expect(decodeLoopChange({ version: 1, operation: 'create', loop: legacy })).toStrictEqual(createChange(loopA))
    expect(decodeLoopChange(update(legacy))).toStrictEqual({ version: 1, operation: 'update', loop: loopA })
    expect(decodeLoopChange(update({ ...loopA, title: '', allow_steer: true }))).toStrictEqual({
      version: 1,
      operation: 'update',
      loop: loopA,
    })
  })

  it.each([
    ['DEL', 'a\u007Fb'],
    ['C1 controls', 'x\u0080y\u0085z\u009F'],
    ['a CR', 'lone\rreturn'],
    ['CRLF', 'first\r\nsecond'],
    ['a tab inside', 'a\tb'],
    ['a zero-width space alone', '\u200B'],
    ['a paired surrogate', '\uD83D\uDE00'],
    ['a prompt longer than any limit', 'x'.repeat(100_000)],
  ])('reads a stored prompt with %s', (_name, prompt) => {
    expect(decodeLoopChange(createChange({ ...loopA, prompt }))).toStrictEqual(createChange({ ...loopA, prompt }))
  })

  it('reads the extremes a log may hold: next_at 0 and the largest safe integers', () => {
    const far = { ...loopA, time_in_seconds: Number.MAX_SAFE_INTEGER, next_at: Number.MAX_SAFE_INTEGER }
    const early = { ...loopA, next_at: 0 }
    expect(decodeLoopChange(createChange(far))).toStrictEqual(createChange(far))
    expect(decodeLoopChange(createChange(early))).toStrictEqual(createChange(early))
    expect(decodeLoopChange(dispatchChange('loop_a', 0))).toStrictEqual(dispatchChange('loop_a', 0))
    expect(decodeLoopChange(dispatchChange('loop_a', Number.MAX_SAFE_INTEGER))).toStrictEqual(
      dispatchChange('loop_a', Number.MAX_SAFE_INTEGER),
    )
  })

  it('returns a new value and leaves the stored one as it was', () => {
    const stored = deepFreeze(update({ ...loopA, title: 'Build' }))
    const decoded = decodeLoopChange(stored)
    expect(decoded).not.toBe(stored)
    expect(stored).toStrictEqual(update({ ...loopA, title: 'Build' }))
  })

  it.each(CORRUPT_RECORDS)('fails closed on %j', (data, detail) => {
    expect(caughtCorrupt(() => decodeLoopChange(data)).message).toBe(diagnostic(detail))
  })
})

describe('the fold', () => {
  it('starts empty, frozen and plain', () => {
    expect(EMPTY_LOOP_FOLD).toStrictEqual({ loops: [], lastIdNumber: 0 })
    expect([Object.isFrozen(EMPTY_LOOP_FOLD), Object.isFrozen(EMPTY_LOOP_FOLD.loops)]).toEqual([true, true])
    expect(foldLoopEvents([])).toBe(EMPTY_LOOP_FOLD)
    expect(foldLoopEvents([{ type: 'turn/start', data: {} }])).toBe(EMPTY_LOOP_FOLD)
  })

  it('applies create, legacy update, dispatch and delete in order and ignores other events', () => {
    const fold = foldLoopEvents([
      { type: 'user/message', data: { anything: true } },
      event(createChange(loopA)),
      event(createChange(loopB)),
      // A corrupt payload under another type is not read.
      { type: 'loop/other', data: { version: 9 } },
      event(update({ ...loopA, prompt: 'check A2', title: 'old' })),
      event(dispatchChange('loop_b', NOW + 60_500)),
      event(deleteChange('loop_a')),
    ])
    expect(fold).toStrictEqual({ loops: [{ ...loopB, next_at: NOW + 60_500 }], lastIdNumber: 0 })
  })

  it('keeps creation order across updates and dispatches and reads legacy far-future records', () => {
    const far = { ...loopA, id: 'loop_far', time_in_seconds: 8_700_000_000_000, next_at: Number.MAX_SAFE_INTEGER }
    const fold = foldOf(
      createChange(loopA),
      createChange(far),
      createChange(loopB),
      dispatchChange('loop_a', NOW + 9000),
      update({ ...far, prompt: 'far away' }),
    )
    expect(fold).toStrictEqual({
      loops: [{ ...loopA, next_at: NOW + 9000 }, { ...far, prompt: 'far away' }, loopB],
      lastIdNumber: 0,
    })
  })

  it('accepts a create of an id deleted earlier as a new loop', () => {
    const again = { ...loopA, prompt: 'again', time_in_seconds: 5, next_at: NOW + 5000 }
    expect(foldOf(createChange(loopA), deleteChange('loop_a'), createChange(again))).toStrictEqual({
      loops: [again],
      lastIdNumber: 0,
    })
    // It takes the last place, after loops created before it.
    expect(
      foldOf(createChange(loopA), createChange(loopB), deleteChange('loop_a'), createChange(again)).loops,
    ).toStrictEqual([loopB, again])
  })

  it('starts a new loop under an id deleted earlier, as any create of an inactive id', () => {
    const again = { ...loopA, prompt: 'again', next_at: NOW + 9_000 }
    expect(foldOf(createChange(loopA), deleteChange('loop_a'), createChange(again))).toStrictEqual({
      loops: [again],
      lastIdNumber: 0,
    })
  })

  it("keeps a fold the size of its active loops after a runaway's hundred thousand creates and deletes", () => {
    // The literal rule (no id twice, ever) would carry every id used in every fold, the dock's included.
    const counted = (number: number): LoopRecord => ({ ...loopA, id: `loop_${number.toString(16).padStart(8, '0')}` })
    let fold = foldLoopChange(EMPTY_LOOP_FOLD, createChange(counted(0)))
    for (let number = 1; number <= 100_000; number += 1) {
      fold = foldLoopChange(fold, createChange(counted(number)))
      fold = foldLoopChange(fold, deleteChange(counted(number).id))
    }
    expect(fold).toStrictEqual({ loops: [counted(0)], lastIdNumber: 100_000 })
  })

  it.each([
    [[createChange(loopA), createChange(loopA)], 'create of active loop loop_a'],
    [[createChange(loopA), createChange({ ...loopB, id: 'loop_a' })], 'create of active loop loop_a'],
    [
      [createChange(loopA), deleteChange('loop_a'), createChange(loopA), createChange(loopA)],
      'create of active loop loop_a',
    ],
    [[deleteChange('loop_a')], 'delete targets inactive loop loop_a'],
    [[dispatchChange('loop_a', NOW)], 'dispatch targets inactive loop loop_a'],
    [[update(loopA)], 'update targets inactive loop loop_a'],
    [[createChange(loopB), update(loopA)], 'update targets inactive loop loop_a'],
    [[createChange(loopA), deleteChange('loop_a'), deleteChange('loop_a')], 'delete targets inactive loop loop_a'],
    [
      [createChange(loopA), deleteChange('loop_a'), dispatchChange('loop_a', NOW)],
      'dispatch targets inactive loop loop_a',
    ],
    [[createChange(loopA), deleteChange('loop_a'), update(loopA)], 'update targets inactive loop loop_a'],
  ])('fails closed on an invalid transition %#', (changes, detail) => {
    expect(foldOf(...changes)).toStrictEqual({ loops: [], lastIdNumber: 0, corrupt: diagnostic(detail) })
  })

  it.each(CORRUPT_RECORDS)('fails closed on the record %j', (data, detail) => {
    expect(foldOf(createChange(loopA), data)).toStrictEqual({ loops: [], lastIdNumber: 0, corrupt: diagnostic(detail) })
  })

  it('keeps the highest id number through a corrupt record, and stays corrupt for every later change', () => {
    const counted = { ...loopA, id: 'loop_0000000a' }
    const corrupt = foldOf(createChange(counted), { version: 9 })
    expect(corrupt).toStrictEqual({ loops: [], lastIdNumber: 10, corrupt: diagnostic('unsupported version 9') })
    for (const data of [createChange(loopB), deleteChange('loop_0000000a'), { version: 8 }, null])
      expect(foldLoopChange(corrupt, data)).toBe(corrupt)
    // The first record that failed is the one named, however many follow.
    expect(
      foldOf(createChange(counted), { version: 9 }, createChange({ ...loopB, id: 'loop_000000ff' }), { version: 8 }),
    ).toStrictEqual(corrupt)
  })

  it("reads a fork's change: the inherited loops it names leave a whole-log fold, and a fold from the seed finds none", () => {
    const events = [
      event(createChange(loopA)),
      event(createChange(loopB)),
      { type: 'session/end-seed', data: {} },
      event(forkChange(['loop_a', 'loop_b'])),
      event(createChange({ ...loopA, id: 'loop_own' })),
    ]
    const own = { loops: [{ ...loopA, id: 'loop_own' }], lastIdNumber: 0 }
    expect(foldLoopEvents(events)).toStrictEqual(own)
    expect(foldLoopEvents(events, 3)).toStrictEqual(own)
    // What a fork's change names: the loops a whole-log fold shows that the fork's own does not.
    expect(inheritedLoopIds(events.slice(0, 3), foldLoopEvents(events.slice(0, 3), 3))).toEqual(['loop_a', 'loop_b'])
    expect(inheritedLoopIds(events, foldLoopEvents(events, 3))).toEqual([])
    // A whole log that does not read has none to name.
    expect(inheritedLoopIds([event(deleteChange('loop_a'))], EMPTY_LOOP_FOLD)).toEqual([])
    const decoded = decodeLoopChange({ version: 1, operation: 'fork', ids: ['loop_a'] })
    expect(decoded).toStrictEqual({ version: 1, operation: 'fork', ids: ['loop_a'] })
  })

  it.each([
    [{ version: 1, operation: 'fork' }, 'missing field "ids" on fork'],
    [{ version: 1, operation: 'fork', ids: [], extra: 1 }, 'unexpected field "extra" on fork'],
    [{ version: 1, operation: 'fork', ids: 'loop_a' }, 'invalid fork ids'],
    [{ version: 1, operation: 'fork', ids: [] }, 'invalid fork ids'],
    [{ version: 1, operation: 'fork', ids: ['loop_a', 'nope'] }, 'invalid fork ids'],
  ])('refuses the fork change %j: %s', (data, detail) => {
    expect(foldLoopChange(EMPTY_LOOP_FOLD, data)).toStrictEqual({
      loops: [],
      lastIdNumber: 0,
      corrupt: diagnostic(detail),
    })
  })

  it('folds from the seed boundary: a fork does not read what it inherited', () => {
    const events = [
      event(createChange(loopA)),
      event(createChange(loopB)),
      { type: 'turn/start', data: {} },
      event(deleteChange('loop_b')),
    ]
    expect(foldLoopEvents(events, 0)).toStrictEqual({ loops: [loopA], lastIdNumber: 0 })
    expect(foldLoopEvents(events, 1)).toStrictEqual({ loops: [], lastIdNumber: 0 })
    expect(foldLoopEvents(events, 2)).toStrictEqual({
      loops: [],
      lastIdNumber: 0,
      corrupt: diagnostic('delete targets inactive loop loop_b'),
    })
    expect(foldLoopEvents(events, 4)).toBe(EMPTY_LOOP_FOLD)
    expect(foldLoopEvents(events, 99)).toBe(EMPTY_LOOP_FOLD)
  })

  it.each([
    ['loop_00000000', 0],
    ['loop_00000001', 1],
    ['loop_0000000a', 10],
    ['loop_ffffffff', 0xffff_ffff],
    ['loop_100000000', 0x1_0000_0000],
    ['loop_0000000000001', 1],
    ['loop_fffffffffffff', 16 ** 13 - 1],
    // Not counted: not lowercase hex, too few or too many digits, or another form.
    ['loop_0000000A', 0],
    ['loop_0000000g', 0],
    ['loop_1234567', 0],
    ['loop_12345678901234', 0],
    ['loop_a', 0],
    ['loop_0000000a_', 0],
    ['loop_-0000000a', 0],
  ])('counts the id %s as %d', (id, number) => {
    expect(foldOf(createChange({ ...loopA, id }))).toStrictEqual({ loops: [{ ...loopA, id }], lastIdNumber: number })
  })

  it('keeps the highest id number: a lower create, a delete, a dispatch or an update never lowers it', () => {
    const high = { ...loopA, id: 'loop_000000ff' }
    const low = { ...loopB, id: 'loop_0000000a' }
    const steps = [
      createChange(high),
      createChange(low),
      dispatchChange('loop_000000ff', NOW),
      update({ ...low, prompt: 'low' }),
      deleteChange('loop_000000ff'),
      deleteChange('loop_0000000a'),
    ]
    const folds = steps.map((_, count) => foldOf(...steps.slice(0, count + 1)).lastIdNumber)
    expect(folds).toEqual([255, 255, 255, 255, 255, 255])
    expect(foldOf(...steps)).toStrictEqual({ loops: [], lastIdNumber: 255 })
  })

  it('applies a decoded change to a new fold and leaves the one it was given as it was', () => {
    const before = deepFreeze(foldOf(createChange(loopA), createChange(loopB)))
    const snapshot = structuredClone(before)
    const changes: StoredLoopChange[] = [
      createChange({ ...loopA, id: 'loop_c' }),
      { version: 1, operation: 'update', loop: { ...loopA, prompt: 'A2' } },
      dispatchChange('loop_b', NOW + 9000),
      deleteChange('loop_a'),
    ]
    const after = changes.map((change) => applyLoopChange(before, deepFreeze(change)))
    expect(after).toStrictEqual([
      { loops: [loopA, loopB, { ...loopA, id: 'loop_c' }], lastIdNumber: 0 },
      { loops: [{ ...loopA, prompt: 'A2' }, loopB], lastIdNumber: 0 },
      { loops: [loopA, { ...loopB, next_at: NOW + 9000 }], lastIdNumber: 0 },
      { loops: [loopB], lastIdNumber: 0 },
    ])
    for (const next of after) {
      expect(next).not.toBe(before)
      expect(next.loops).not.toBe(before.loops)
    }
    expect(before).toStrictEqual(snapshot)
  })

  it('throws the diagnostic from applyLoopChange, leaving the fold as it was', () => {
    const before = deepFreeze(foldOf(createChange(loopA)))
    const snapshot = structuredClone(before)
    const refused: [StoredLoopChange, string][] = [
      [dispatchChange('loop_zz', NOW), 'dispatch targets inactive loop loop_zz'],
      [deleteChange('loop_zz'), 'delete targets inactive loop loop_zz'],
      [{ version: 1, operation: 'update', loop: { ...loopB, id: 'loop_zz' } }, 'update targets inactive loop loop_zz'],
      [createChange(loopA), 'create of active loop loop_a'],
    ]
    for (const [change, detail] of refused) {
      expect(caughtCorrupt(() => applyLoopChange(before, change)).message).toBe(diagnostic(detail))
    }
    expect(before).toStrictEqual(snapshot)
  })

  it('folds a frozen log, valid or corrupt, without writing to it', () => {
    const events = deepFreeze([
      event(createChange({ ...loopA, id: 'loop_0000000a', title: 'legacy' } as LoopRecord)),
      event(update({ ...loopA, id: 'loop_0000000a', allow_steer: true })),
      event(dispatchChange('loop_0000000a', NOW + 1)),
      event(createChange(loopB)),
      event(deleteChange('loop_b')),
    ])
    const snapshot = structuredClone(events)
    expect(foldLoopEvents(events)).toStrictEqual({
      loops: [{ ...loopA, id: 'loop_0000000a', next_at: NOW + 1 }],
      lastIdNumber: 10,
    })
    const corrupt = deepFreeze([...events, event(deleteChange('loop_b'))])
    expect(foldLoopEvents(corrupt)).toStrictEqual({
      loops: [],
      lastIdNumber: 10,
      corrupt: diagnostic('delete targets inactive loop loop_b'),
    })
    expect(events).toStrictEqual(snapshot)
  })
})

describe('next loop ids', () => {
  it('start past a point drawn from the session id, so two sessions do not share them', () => {
    // The first 8 hex digits of sha256('ses-a') are 8042867c, of sha256('ses-b') f54924ed.
    expect(nextLoopId(EMPTY_LOOP_FOLD, 'ses-a')).toBe('loop_8042867d')
    expect(nextLoopId(EMPTY_LOOP_FOLD, 'ses-b')).toBe('loop_f54924ee')
    // Padded to 8 digits: sha256('ses-56') starts 058a9f34.
    expect(nextLoopId(EMPTY_LOOP_FOLD, 'ses-56')).toBe('loop_058a9f35')
    // The same session draws the same start.
    expect(nextLoopId(EMPTY_LOOP_FOLD, 'ses-a')).toBe('loop_8042867d')
  })

  it('count up, one past the highest the session used', () => {
    const ids: string[] = []
    let fold: LoopFold = EMPTY_LOOP_FOLD
    for (let count = 0; count < 3; count += 1) {
      const id = nextLoopId(fold, 'ses-a')!
      ids.push(id)
      fold = foldLoopChange(fold, createChange({ ...loopA, id }))
    }
    expect(ids).toEqual(['loop_8042867d', 'loop_8042867e', 'loop_8042867f'])
    expect(fold).toStrictEqual({ loops: ids.map((id) => ({ ...loopA, id })), lastIdNumber: 0x8042867f })
  })

  it('never reuse an id of the log, deleted ones included', () => {
    const first = nextLoopId(EMPTY_LOOP_FOLD, 'ses-a')!
    const deleted = foldOf(createChange({ ...loopA, id: first }), deleteChange(first))
    expect(deleted).toStrictEqual({ loops: [], lastIdNumber: 0x8042867d })
    expect(nextLoopId(deleted, 'ses-a')).toBe('loop_8042867e')
  })

  it("count up past an earlier build's random id above the start, and ignore those below it or of another form", () => {
    expect(nextLoopId(foldOf(createChange({ ...loopA, id: 'loop_c0ffee00' })), 'ses-a')).toBe('loop_c0ffee01')
    expect(nextLoopId(foldOf(createChange({ ...loopA, id: 'loop_00000001' })), 'ses-a')).toBe('loop_8042867d')
    expect(nextLoopId(foldOf(createChange({ ...loopA, id: 'loop_zzzz' })), 'ses-a')).toBe('loop_8042867d')
    // Past 8 digits the id grows.
    expect(nextLoopId(foldOf(createChange({ ...loopA, id: 'loop_ffffffff' })), 'ses-a')).toBe('loop_100000000')
  })

  it('give out the last counted id, then none', () => {
    const last = nextLoopId(foldOf(createChange({ ...loopA, id: 'loop_ffffffffffffe' })), 'ses-a')!
    expect(last).toBe('loop_fffffffffffff')
    expect(isLoopId(last)).toBe(true)
    const full = foldOf(createChange({ ...loopA, id: last }))
    expect(full.lastIdNumber).toBe(16 ** 13 - 1)
    expect(nextLoopId(full, 'ses-a')).toBeUndefined()
  })
})

describe('folding generated logs', () => {
  /** A few ids: plain, counted (low, 8 digits, 13 digits) and invalid ones. */
  const ids = fc.constantFrom('loop_a', 'loop_b', 'loop_0000000a', 'loop_ffffffff', 'loop_fffffffffffff')
  const validRecord = fc.record({
    id: ids,
    prompt: fc.constantFrom('check', 'x\u0085y', '\u200B', 'a\r\nb', 'tab\there'),
    time_in_seconds: fc.oneof(fc.integer({ min: 1, max: 86_400 }), fc.constant(Number.MAX_SAFE_INTEGER)),
    next_at: fc.oneof(fc.nat(), fc.constant(Number.MAX_SAFE_INTEGER)),
  })
  /** A record with any of its fields missing, wrong or legacy. */
  const wildRecord = fc.record(
    {
      id: fc.constantFrom('loop_a', 'loop_0000000a', 'loop_', 'bad id', 7),
      prompt: fc.constantFrom('check', ' padded', '', 'a\u0007', '\uD800', 5),
      time_in_seconds: fc.constantFrom(1, 60, 0, -1, 1.5, '60', Number.MAX_SAFE_INTEGER + 1),
      next_at: fc.constantFrom(0, NOW, -1, 1.5, '5', Number.MAX_SAFE_INTEGER + 1),
      title: fc.constantFrom('Build', 5),
      allow_steer: fc.constantFrom(true, 'yes'),
      colour: fc.constant('red'),
    },
    { requiredKeys: [] },
  )
  /** One step of a log that is valid by construction, unless `pick` says to target a wrong id. */
  const step = fc.record({
    operation: fc.constantFrom('create', 'create', 'update', 'dispatch', 'delete'),
    pick: fc.nat({ max: 99 }),
    loop: validRecord,
    nextAt: fc.nat(),
  })
  type Step = typeof step extends fc.Arbitrary<infer T> ? T : never
  const POOL = ['loop_a', 'loop_b', 'loop_0000000a', 'loop_ffffffff', 'loop_fffffffffffff', 'loop_c', 'loop_d']
  /** The changes of a list of steps: each targets an id that is (or, about one time in thirty, is not) right for it. */
  function changesOf(entries: readonly (Step | FoldableEvent)[]): FoldableEvent[] {
    const active: string[] = []
    return entries.map((entry) => {
      if ('type' in entry) return entry
      const { operation, pick, loop, nextAt } = entry
      const wrong = pick % 40 === 0
      // Without an active loop, a right step can only create one.
      if (operation === 'create' || (active.length === 0 && !wrong)) {
        const free = POOL.filter((id) => !active.includes(id))
        const id = wrong || free.length === 0 ? POOL[pick % POOL.length]! : free[pick % free.length]!
        if (!active.includes(id)) active.push(id)
        return event(createChange({ ...loop, id }))
      }
      const id = wrong ? POOL[pick % POOL.length]! : active[pick % active.length]!
      if (operation === 'delete') {
        const at = active.indexOf(id)
        if (at >= 0) active.splice(at, 1)
        return event(deleteChange(id))
      }
      return event(operation === 'update' ? update({ ...loop, id, title: 'old' }) : dispatchChange(id, nextAt))
    })
  }
  const invalid = fc.oneof(
    fc.constantFrom(...CORRUPT_RECORDS.map(([data]) => data)),
    wildRecord.map((loop) => ({ version: 1, operation: 'create', loop })),
    fc.record(
      {
        version: fc.constantFrom(1, 2, '1'),
        operation: fc.constantFrom('create', 'update', 'delete', 'dispatch', 'pause'),
        id: fc.oneof(ids, fc.constant(9)),
        next_at: fc.constantFrom(0, -1, 1.5),
        loop: fc.oneof(validRecord, wildRecord),
        extra: fc.constant(1),
      },
      { requiredKeys: [] },
    ),
    fc.jsonValue(),
  )
  const log: fc.Arbitrary<FoldableEvent[]> = fc
    .array(
      fc.oneof(
        { weight: 50, arbitrary: step },
        { weight: 1, arbitrary: invalid.map(event) },
        {
          weight: 2,
          arbitrary: fc.record({
            type: fc.constantFrom('user/message', 'turn/start', 'loop/other'),
            data: fc.jsonValue(),
          }),
        },
      ),
      { maxLength: 40 },
    )
    .map(changesOf)

  it('folds a whole log as one change at a time, never throws, writes nothing and stays plain JSON', () => {
    fc.assert(
      fc.property(log, fc.nat({ max: 45 }), (generated, from) => {
        const events = deepFreeze(generated)
        const folds: LoopFold[] = [EMPTY_LOOP_FOLD]
        for (const { type, data } of events.slice(from))
          if (type === LOOP_CHANGE_EVENT) folds.push(foldLoopChange(folds.at(-1)!, data))
        const whole = foldLoopEvents(events, from)
        expect(whole).toStrictEqual(folds.at(-1))
        for (const [index, fold] of folds.entries()) {
          expect(JSON.parse(JSON.stringify(fold))).toStrictEqual(fold)
          // Active ids are distinct; a corrupt fold has no loops and stays the same value.
          expect(new Set(fold.loops.map((loop) => loop.id)).size).toBe(fold.loops.length)
          if (fold.corrupt !== undefined) {
            expect(fold.loops).toEqual([])
            expect(folds[index + 1] ?? fold).toBe(fold)
          }
          // The id number never goes down.
          if (index > 0) expect(fold.lastIdNumber).toBeGreaterThanOrEqual(folds[index - 1]!.lastIdNumber)
        }
      }),
      { numRuns: 500 },
    )
  })
})

/** Pure loop domain (src/domain.ts): validation, ids, decoding, the fold, views. */
import { describe, expect, it } from 'vitest'
import {
  activeLoops,
  allocateLoopId,
  assertRoomForLoop,
  isLoopId,
  applyLoopChange,
  applyStoredChange,
  applyWrittenChange,
  createChange,
  createLoopRecord,
  decodeLoopChange,
  deleteChange,
  dispatchChange,
  foldLoopEvents,
  requireActiveLoop,
  toLoopView,
  validateCreateInput,
  validateDeleteInput,
  validateListInput,
  emptyLoopFold,
  LoopIdSet,
  UsedIdLog,
  LoopTable,
  type TrackedLoopFold,
} from '../src/domain.ts'
import type { LoopRecord } from '../src/types.ts'
import { NOW, caught, event, foldOf, loopA, loopB } from './support/loop-fixtures.ts'

const LIMITS = { maxPromptLength: 4000 }

describe('create validation', () => {
  it('trims the prompt, normalizes CRLF and keeps the interval', () => {
    expect(
      validateCreateInput({ prompt: '  Summarize failures \r\n  then report\n', time_in_seconds: 30 }, LIMITS, NOW),
    ).toEqual({
      prompt: 'Summarize failures \n  then report',
      time_in_seconds: 30,
    })
  })

  it('first next_at is now plus the interval in milliseconds', () => {
    expect(createLoopRecord({ prompt: 'p', time_in_seconds: 30 }, 'loop_x', NOW)).toEqual({
      id: 'loop_x',
      prompt: 'p',
      time_in_seconds: 30,
      next_at: NOW + 30_000,
    })
  })

  const invisible =
    'prompt must be a string with visible content (whitespace and invisible characters alone do not count).'
  /** The refusal of a character outside printable text, tabs and line breaks. */
  const control = (codePoint: string, position: number) =>
    `prompt contains the control or non-text character U+${codePoint} at position ${position}; only printable text, tabs and line breaks are allowed.`

  it.each([
    [null, 'invalid_arguments', 'loop_create takes an object { prompt, time_in_seconds }.'],
    [[], 'invalid_arguments', 'loop_create takes an object { prompt, time_in_seconds }.'],
    [
      { prompt: 'p', time_in_seconds: 1, title: 't' },
      'invalid_arguments',
      'loop_create does not accept "title"; it takes only prompt and time_in_seconds.',
    ],
    [
      { prompt: 'p', time_in_seconds: 1, allow_steer: true },
      'invalid_arguments',
      'loop_create does not accept "allow_steer"; it takes only prompt and time_in_seconds.',
    ],
    [{ prompt: '   ', time_in_seconds: 1 }, 'invalid_prompt', invisible],
    [{ prompt: '\u200B\u200B\u2060\uFEFF', time_in_seconds: 1 }, 'invalid_prompt', invisible],
    [{ prompt: 3, time_in_seconds: 1 }, 'invalid_prompt', invisible],
    [{ time_in_seconds: 1 }, 'invalid_prompt', invisible],
    [{ prompt: 'ring\u0007', time_in_seconds: 1 }, 'invalid_prompt', control('0007', 5)],
    [{ prompt: 'a\u0000b', time_in_seconds: 1 }, 'invalid_prompt', control('0000', 2)],
    [{ prompt: '\u001b[31mred', time_in_seconds: 1 }, 'invalid_prompt', control('001B', 1)],
    [{ prompt: 'lone\rreturn', time_in_seconds: 1 }, 'invalid_prompt', control('000D', 5)],
    [{ prompt: 'x\u0085y', time_in_seconds: 1 }, 'invalid_prompt', control('0085', 2)],
    [{ prompt: 'half \uD83D pair', time_in_seconds: 1 }, 'invalid_prompt', control('D83D', 6)],
    [{ prompt: 'tail \uDE00', time_in_seconds: 1 }, 'invalid_prompt', control('DE00', 6)],
    [{ prompt: 'non\uFFFEchar', time_in_seconds: 1 }, 'invalid_prompt', control('FFFE', 4)],
  ])('rejects %j with %s', (args, code, message) => {
    const error = caught(() => validateCreateInput(args, LIMITS, NOW))
    expect([error.code, error.message]).toEqual([code, message])
  })

  it('accepts tabs, line breaks, paired surrogates and text around zero-width characters', () => {
    expect(
      validateCreateInput({ prompt: 'a\tb\nc \uD83D\uDE00 \u200Bd', time_in_seconds: 1 }, LIMITS, NOW).prompt,
    ).toBe('a\tb\nc \uD83D\uDE00 \u200Bd')
  })

  it('refuses a prompt longer than the configured limit, naming it and its setting', () => {
    expect(
      validateCreateInput({ prompt: 'x'.repeat(10), time_in_seconds: 1 }, { maxPromptLength: 10 }, NOW).prompt,
    ).toHaveLength(10)
    const error = caught(() =>
      validateCreateInput({ prompt: ` ${'x'.repeat(11)} `, time_in_seconds: 1 }, { maxPromptLength: 10 }, NOW),
    )
    expect([error.code, error.message]).toEqual([
      'prompt_too_long',
      'prompt is 11 characters; the limit is 10 (plugin setting maxPromptLength). Shorten it, or point to a file the agent can read.',
    ])
  })

  it.each([0, -5, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '30', Number.MAX_SAFE_INTEGER + 1, undefined])(
    'rejects time_in_seconds %s',
    (seconds) => {
      const error = caught(() => validateCreateInput({ prompt: 'p', time_in_seconds: seconds }, LIMITS, NOW))
      expect([error.code, error.message]).toEqual([
        'invalid_interval',
        'time_in_seconds must be a positive whole number of seconds, for example 30.',
      ])
    },
  )

  it('accepts every positive safe integer whose first occurrence is still a date, and says why a longer one is refused', () => {
    // The last date a timestamp holds is 8.64e15 ms.
    const longest = Math.floor((8.64e15 - NOW) / 1000)
    expect(validateCreateInput({ prompt: 'p', time_in_seconds: 1 }, LIMITS, NOW).time_in_seconds).toBe(1)
    expect(validateCreateInput({ prompt: 'p', time_in_seconds: 31_536_001 }, LIMITS, NOW).time_in_seconds).toBe(
      31_536_001,
    )
    expect(validateCreateInput({ prompt: 'p', time_in_seconds: longest }, LIMITS, NOW).time_in_seconds).toBe(longest)
    expect(createLoopRecord({ prompt: 'p', time_in_seconds: longest }, 'loop_x', NOW).next_at).toBeLessThanOrEqual(
      8.64e15,
    )
    for (const seconds of [longest + 1, Number.MAX_SAFE_INTEGER]) {
      const error = caught(() => validateCreateInput({ prompt: 'p', time_in_seconds: seconds }, LIMITS, NOW))
      expect([error.code, error.message]).toEqual([
        'invalid_interval',
        `time_in_seconds is ${seconds}, so the first heartbeat would fall after +275760-09-13T00:00:00.000Z, the last date a timestamp can hold; the longest interval accepted now is ${longest} seconds.`,
      ])
    }
  })

  it('refuses a create beyond the per-session limit, naming it and its setting', () => {
    const state = foldOf(createChange(loopA), createChange(loopB))
    expect(() => assertRoomForLoop(state, 3)).not.toThrow()
    const error = caught(() => assertRoomForLoop(state, 2))
    expect([error.code, error.message]).toEqual([
      'too_many_loops',
      'This session already has 2 active loops; the limit is 2 (plugin setting maxLoopsPerSession). Delete one with loop_delete (or /loop delete <id>) first.',
    ])
  })
})

const ID_RULE =
  'id must be a loop id such as loop_1a2b3c4d (loop_ then letters, digits, _ or -); run loop_list to see them.'

describe('delete and list validation', () => {
  it('returns the id', () => {
    expect(validateDeleteInput({ id: 'loop_a' })).toBe('loop_a')
  })

  it.each([
    [undefined, 'invalid_arguments', 'loop_delete takes an object { id }.'],
    [{ id: 'loop_a', force: true }, 'invalid_arguments', 'loop_delete does not accept "force"; it takes only id.'],
    [{ id: '' }, 'invalid_id', ID_RULE],
    [{ id: '  ' }, 'invalid_id', ID_RULE],
    [{ id: 7 }, 'invalid_id', ID_RULE],
    [{ id: 'loop_a b' }, 'invalid_id', ID_RULE],
    [{ id: 'loop_' }, 'invalid_id', ID_RULE],
    [{ id: 'task_1' }, 'invalid_id', ID_RULE],
  ])('delete rejects %j', (args, code, message) => {
    const error = caught(() => validateDeleteInput(args))
    expect([error.code, error.message]).toEqual([code, message])
  })

  it('list accepts only an empty object', () => {
    expect(() => validateListInput({})).not.toThrow()
    expect(caught(() => validateListInput({ session_id: 's' })).message).toBe(
      'loop_list does not accept "session_id"; it takes no arguments.',
    )
    expect(caught(() => validateListInput('x')).message).toBe('loop_list takes an empty object {}.')
  })

  it('requireActiveLoop finds active ids and names unknown ones', () => {
    const state = foldOf(createChange(loopA))
    expect(requireActiveLoop(state, 'loop_a')).toEqual(loopA)
    expect(caught(() => requireActiveLoop(state, 'toString')).code).toBe('loop_not_found')
    const error = caught(() => requireActiveLoop(state, 'loop_zz'))
    expect(error.code).toBe('loop_not_found')
    expect(error.message).toBe(
      'No active loop "loop_zz" in this session; run loop_list (or /loop list) to see its loops.',
    )
  })
})

describe('ids', () => {
  it('follow one rule: loop_ and 1-64 letters, digits, _ or -', () => {
    expect(['loop_1a2b3c4d', 'loop_a', 'loop_A-b_9', 'loop_AZaz09_-', `loop_${'x'.repeat(64)}`].map(isLoopId)).toEqual([
      true,
      true,
      true,
      true,
      true,
    ])
    const refused = ['loop_', 'loop_a b', 'loop_a\n', `loop_${'x'.repeat(65)}`, 'loop_<x>', 'Loop_a', 'loopa', 'loo']
    // Each neighbour of an accepted range: '/' ':' '@' '[' '^' '`' '{' ',' '.' and DEL, a CR, an accented letter.
    const neighbours = ['/', ':', '@', '[', '^', '`', '{', ',', '.', '\u007f', '\r', 'é'].map(
      (character) => `loop_a${character}`,
    )
    expect([...refused, ...neighbours, 7, undefined].map(isLoopId)).toEqual(
      [...refused, ...neighbours, 7, undefined].map(() => false),
    )
  })

  it('are prefixed and skip every id the session used, deleted ones included', () => {
    const used = foldOf(createChange({ ...loopA, id: 'loop_00' }), deleteChange('loop_00'))
    const candidates = ['00', '00', '01']
    expect(allocateLoopId(used, () => candidates.shift()!)).toBe('loop_01')
    expect(candidates).toEqual([])
  })
})

/** Every malformed payload, with the defect the strict decoding names. */
const CORRUPT_RECORDS: [unknown, string][] = [
  [null, 'payload is not an object'],
  [{ version: 2, operation: 'delete', id: 'loop_a' }, 'unsupported version 2'],
  [{ version: 1, operation: 'pause', id: 'loop_a' }, 'unknown operation "pause"'],
  [{ version: 1, operation: 'delete', id: 'loop_a', extra: 1 }, 'unexpected field "extra" on delete'],
  [{ version: 1, extra: 1, operation: 'delete', id: 'loop_a' }, 'unexpected field "extra" on delete'],
  [{ version: 1, operation: 'delete' }, 'missing field "id" on delete'],
  [{ version: 1, operation: 'dispatch', id: 'loop_a' }, 'missing field "next_at" on dispatch'],
  [{ version: 1, operation: 'dispatch', id: 'loop_a', next_at: 1.5 }, 'invalid dispatch next_at'],
  [{ version: 1, operation: 'dispatch', id: 'loop_a', next_at: -1 }, 'invalid dispatch next_at'],
  [{ version: 1, operation: 'delete', id: 'loop_a b' }, 'invalid id'],
  [{ version: 1, operation: 'delete', id: 'x' }, 'invalid id'],
  [{ version: 1, operation: 'delete', id: 'loop_' }, 'invalid id'],
  [{ version: 1, operation: 'dispatch', id: 'loop_', next_at: 5 }, 'invalid id'],
  [{ version: 1, operation: 'create', loop: 'x' }, 'loop is not an object'],
  [{ version: 1, operation: 'create', loop: { ...loopA, colour: 'red' } }, 'unexpected field "colour"'],
  [
    {
      version: 1,
      operation: 'create',
      loop: { id: 'loop_a', colour: 'red', prompt: 'p', time_in_seconds: 1, next_at: 0 },
    },
    'unexpected field "colour"',
  ],
  [
    { version: 1, operation: 'create', loop: { id: 'loop_a', prompt: 'p', next_at: 0 } },
    'invalid time_in_seconds for loop_a',
  ],
  [{ version: 1, operation: 'create', loop: { ...loopA, id: 'loop_' } }, 'invalid id'],
  [{ version: 1, operation: 'create', loop: { ...loopA, id: 9 } }, 'invalid id'],
  [{ version: 1, operation: 'create', loop: { ...loopA, prompt: ' padded' } }, 'invalid prompt for loop_a'],
  [{ version: 1, operation: 'create', loop: { ...loopA, prompt: 'padded\n' } }, 'invalid prompt for loop_a'],
  [{ version: 1, operation: 'create', loop: { ...loopA, prompt: '\u3000wide \u00a0' } }, 'invalid prompt for loop_a'],
  [{ version: 1, operation: 'create', loop: { ...loopA, prompt: '' } }, 'invalid prompt for loop_a'],
  [{ version: 1, operation: 'create', loop: { ...loopA, time_in_seconds: 0 } }, 'invalid time_in_seconds for loop_a'],
  [{ version: 1, operation: 'create', loop: { ...loopA, next_at: '1' } }, 'invalid next_at for loop_a'],
  [
    { version: 1, operation: 'create', loop: { id: 'loop_a', prompt: 'p', time_in_seconds: 1 } },
    'invalid next_at for loop_a',
  ],
  [{ version: 1, operation: 'create', loop: null }, 'loop is not an object'],
  [{ version: 1, operation: 'create', loop: { ...loopA, next_at: -1 } }, 'invalid next_at for loop_a'],
  [{ version: 1, operation: 'update', loop: { ...loopA, title: 5 } }, 'invalid legacy title for loop_a'],
  [
    { version: 1, operation: 'update', loop: { ...loopA, allow_steer: 'yes' } },
    'invalid legacy allow_steer for loop_a',
  ],
]

describe('decoding', () => {
  it('decodes the three v1 operations exactly', () => {
    expect(decodeLoopChange(createChange(loopA))).toEqual({ version: 1, operation: 'create', loop: loopA })
    expect(decodeLoopChange(deleteChange('loop_a'))).toEqual({ version: 1, operation: 'delete', id: 'loop_a' })
    expect(decodeLoopChange(dispatchChange('loop_a', NOW))).toEqual({
      version: 1,
      operation: 'dispatch',
      id: 'loop_a',
      next_at: NOW,
    })
  })

  it('returns a valid change itself, not a copy (the host deep-freezes logged events)', () => {
    const create = createChange(loopA)
    const dispatch = dispatchChange('loop_a', NOW)
    const remove = deleteChange('loop_a')
    expect(decodeLoopChange(create)).toBe(create)
    expect(decodeLoopChange(dispatch)).toBe(dispatch)
    expect(decodeLoopChange(remove)).toBe(remove)
    const legacy = { version: 1, operation: 'create', loop: { ...loopA, title: 'Build' } }
    expect(decodeLoopChange(legacy)).not.toBe(legacy)
  })

  it('reads the fields of a hand-written record in any order', () => {
    const { id, prompt, time_in_seconds, next_at } = loopA
    const create = { loop: { next_at, time_in_seconds, prompt, id }, operation: 'create', version: 1 }
    const dispatch = { next_at: NOW, id: 'loop_a', version: 1, operation: 'dispatch' }
    expect([decodeLoopChange(create), decodeLoopChange(dispatch)]).toEqual([create, dispatch])
  })

  it('strips the previous build title and allow_steer from create and update', () => {
    const legacy = { ...loopA, title: 'Build', allow_steer: false }
    expect(decodeLoopChange({ version: 1, operation: 'create', loop: legacy })).toEqual({
      version: 1,
      operation: 'create',
      loop: loopA,
    })
    expect(decodeLoopChange({ version: 1, operation: 'update', loop: legacy })).toEqual({
      version: 1,
      operation: 'update',
      loop: loopA,
    })
  })

  it.each(CORRUPT_RECORDS)('fails closed on %j', (data, detail) => {
    const error = caught(() => decodeLoopChange(data))
    expect(error.code).toBe('corrupt_loop_log')
    expect(error.message).toBe(`corrupt loop/change record: ${detail}`)
  })
})

describe('fold', () => {
  it('applies create, legacy update, dispatch and delete in order and ignores other events', () => {
    const state = foldLoopEvents(emptyLoopFold(), [
      { type: 'user/message', data: { anything: true } },
      event(createChange(loopA)),
      event(createChange(loopB)),
      event({ version: 1, operation: 'update', loop: { ...loopA, prompt: 'check A2', title: 'old' } }),
      event(dispatchChange('loop_b', NOW + 60_500)),
      event(deleteChange('loop_a')),
    ])
    expect(activeLoops(state)).toEqual([{ ...loopB, next_at: NOW + 60_500 }])
    expect([state.usedIds.size, state.usedIds.has('loop_a'), state.usedIds.has('loop_b')]).toEqual([2, true, true])
  })

  it('keeps creation order across dispatches and reads legacy far-future records', () => {
    const far = { ...loopA, id: 'loop_far', time_in_seconds: 8_700_000_000_000, next_at: Number.MAX_SAFE_INTEGER }
    const state = foldOf(
      createChange(loopA),
      createChange(far),
      createChange(loopB),
      dispatchChange('loop_a', NOW + 9000),
    )
    expect(activeLoops(state).map((loop) => loop.id)).toEqual(['loop_a', 'loop_far', 'loop_b'])
  })

  it('leaves the state untouched when it refuses a change', () => {
    const state = foldOf(createChange(loopA))
    const snapshot = structuredClone(state)
    expect(() => applyLoopChange(state, { version: 1, operation: 'dispatch', id: 'loop_zz', next_at: NOW })).toThrow()
    expect(() => applyLoopChange(state, { version: 1, operation: 'create', loop: loopA })).toThrow()
    expect(state).toEqual(snapshot)
    expect(activeLoops(emptyLoopFold())).toEqual([])
    expect(emptyLoopFold().usedIds.size).toBe(0)
    expect(emptyLoopFold()).not.toBe(emptyLoopFold())
  })

  it.each([
    [[createChange(loopA), createChange(loopA)], 'loop id loop_a was reused'],
    [[createChange(loopA), createChange({ ...loopB, id: 'loop_a' })], 'loop id loop_a was reused'],
    [[createChange(loopA), deleteChange('loop_a'), createChange(loopA)], 'loop id loop_a was reused'],
    [[deleteChange('loop_a')], 'delete targets inactive loop loop_a'],
    [[dispatchChange('loop_a', NOW)], 'dispatch targets inactive loop loop_a'],
    [[{ version: 1, operation: 'update', loop: loopA }], 'update targets inactive loop loop_a'],
    [
      [createChange(loopA), deleteChange('loop_a'), dispatchChange('loop_a', NOW)],
      'dispatch targets inactive loop loop_a',
    ],
  ])('fails closed on an invalid transition %#', (changes, detail) => {
    const error = caught(() => foldOf(...changes))
    expect(error.message).toBe(`corrupt loop/change record: ${detail}`)
  })
})

describe('the written form, applied by one flat check', () => {
  /** The fold after a change, or the defect it names, through the given path. */
  const outcome = (
    path: (state: TrackedLoopFold, data: unknown) => void,
    fold: () => TrackedLoopFold,
    data: unknown,
  ) => {
    const state = fold()
    try {
      path(state, data)
    } catch (error) {
      return { error: (error as Error).message, loops: activeLoops(state), used: state.usedIds.size }
    }
    return { loops: activeLoops(state), used: state.usedIds.size }
  }
  const strict = (state: TrackedLoopFold, data: unknown) => applyLoopChange(state, decodeLoopChange(data))
  const withA = () => foldOf(createChange(loopA))
  const afterDelete = () => foldOf(createChange(loopA), deleteChange('loop_a'))
  const { id, prompt, time_in_seconds, next_at } = loopA

  it.each([
    ['a create', withA, createChange(loopB), true],
    ['a delete', withA, deleteChange('loop_a'), true],
    ['a dispatch', withA, dispatchChange('loop_a', NOW + 9000), true],
    ['a create of an active id', withA, createChange(loopA), false],
    ['a create of a deleted id', afterDelete, createChange(loopA), false],
    ['a delete of an inactive id', afterDelete, deleteChange('loop_a'), false],
    ['a dispatch of an inactive id', afterDelete, dispatchChange('loop_a', NOW), false],
    ['a create whose keys are in another order', afterDelete, { loop: loopB, version: 1, operation: 'create' }, false],
    [
      'a record whose keys are in another order',
      () => foldOf(),
      createChange({ next_at, time_in_seconds, prompt, id } as LoopRecord),
      false,
    ],
    ['a dispatch whose keys are in another order', withA, { version: 1, operation: 'dispatch', next_at, id }, false],
    ['a legacy record', () => foldOf(), createChange({ ...loopA, title: 'Build' } as LoopRecord), false],
    ['a legacy update', withA, { version: 1, operation: 'update', loop: { ...loopA, prompt: 'A2' } }, false],
    ['a create without its record', () => foldOf(), { version: 1, operation: 'create' }, false],
    ['a create with a field more', () => foldOf(), { ...createChange(loopA), extra: 1 }, false],
    ['a delete of a number', withA, { version: 1, operation: 'delete', id: 9 }, false],
    ['a dispatch of a number', withA, { version: 1, operation: 'dispatch', id: 9, next_at }, false],
    ['a payload that is a string', withA, 'loop_a', false],
  ])('%s: the flat check applies it (%#) exactly as the strict path does', (_name, fold, data, applies) => {
    const state = fold()
    expect(applyWrittenChange(state, data)).toBe(applies)
    if (!applies) expect([activeLoops(state), state.usedIds.size]).toEqual([activeLoops(fold()), fold().usedIds.size])
    expect(outcome(applyStoredChange, fold, data)).toEqual(outcome(strict, fold, data))
  })

  it.each(CORRUPT_RECORDS)('leaves %j to the strict path, which names it', (data, detail) => {
    // Both with loop_a active and without, so no check is spared by the other.
    for (const fold of [withA, afterDelete, () => foldOf()]) {
      expect(applyWrittenChange(fold(), data)).toBe(false)
      expect(outcome(applyStoredChange, fold, data)).toEqual({
        error: `corrupt loop/change record: ${detail}`,
        ...outcome(() => {}, fold, data),
      })
    }
  })

  it('records a deleted id created again into a log of used ids, which then makes no set', () => {
    const state = { active: new LoopTable(), usedIds: new UsedIdLog() }
    for (const change of [createChange(loopA), deleteChange('loop_a'), createChange(loopA)])
      expect(applyWrittenChange(state, change)).toBe(true)
    expect([activeLoops(state), state.usedIds.toSet()]).toEqual([[loopA], undefined])
  })
})

describe('the table of active loops', () => {
  const record = (index: number): LoopRecord => ({ ...loopA, id: `loop_${index}`, prompt: `p${index}` })
  const ids = (table: LoopTable) => table.records.map((loop) => loop.id)

  it.each([
    ['a few loops, found by scanning', 5],
    ['more than 32 loops, found through the index', 40],
  ])('adds in order, finds, replaces in place and removes, the later ones moving up: %s', (_name, count) => {
    const table = new LoopTable()
    for (let index = 0; index < count; index += 1) table.add(record(index))
    expect(table.size).toBe(count)
    expect(table.get('loop_2')).toEqual(record(2))
    expect(table.get('loop_missing')).toBeUndefined()
    table.replace({ ...record(1), next_at: 1 })
    expect(table.records[1]).toEqual({ ...record(1), next_at: 1 })
    table.remove('loop_1')
    expect(ids(table).slice(0, 3)).toEqual(['loop_0', 'loop_2', 'loop_3'])
    expect([table.size, table.get('loop_1'), table.get(`loop_${count - 1}`)]).toEqual([
      count - 1,
      undefined,
      record(count - 1),
    ])
  })

  it('keeps finding every loop while it shrinks from past the index limit to a few', () => {
    const table = new LoopTable()
    for (let index = 0; index < 40; index += 1) table.add(record(index))
    for (let index = 0; index < 37; index += 1) {
      table.remove(`loop_${index}`)
      for (let later = index + 1; later < 40; later += 1) expect(table.get(`loop_${later}`)).toEqual(record(later))
    }
    expect(ids(table)).toEqual(['loop_37', 'loop_38', 'loop_39'])
  })

  it('takes over a stored array, large or small, and copies into an array of its own', () => {
    const stored = Array.from({ length: 40 }, (_, index) => record(index))
    const table = new LoopTable(stored)
    expect(table.records).toBe(stored)
    expect(table.get('loop_39')).toEqual(record(39))
    const copy = table.copy()
    copy.remove('loop_0')
    expect([table.size, copy.size, table.get('loop_0')]).toEqual([40, 39, record(0)])
    expect(new LoopTable([record(7)]).get('loop_7')).toEqual(record(7))
  })
})

describe('the used ids', () => {
  const generated = Array.from(
    { length: 1000 },
    (_, index) => `loop_${((index * 2_654_435_761) >>> 0).toString(16).padStart(8, '0')}`,
  )

  it.each([
    ['generated ids (loop_ and 8 lowercase hex digits)', generated],
    ['the number 0 among them', ['loop_00000000', 'loop_ffffffff', 'loop_00000001']],
    [
      'generated ids alike in their low bits',
      Array.from({ length: 2000 }, (_, index) => `loop_${((index << 16) >>> 0).toString(16).padStart(8, '0')}`),
    ],
    [
      'every other id, kept as strings',
      ['loop_a', 'loop_0000000A', 'loop_0000000g', 'loop_000000001', 'loop_0000001', 'loop-00000001', 'LOOP_00000001'],
    ],
  ])('adds each id once and holds exactly what it added: %s', (_name, added) => {
    const set = new LoopIdSet()
    expect(added.map((id) => set.add(id))).toEqual(added.map(() => true))
    expect(added.map((id) => set.add(id))).toEqual(added.map(() => false))
    expect(set.size).toBe(added.length)
    expect(added.every((id) => set.has(id))).toBe(true)
    expect(['loop_12345678', 'loop_b', 'loop_0000000B'].some((id) => set.has(id))).toBe(false)
  })

  it('holds the ids of a log made into a set, and those added after, and copies share only the log', () => {
    const log = new UsedIdLog()
    // The number 0 is among the generated ones: a base keeps it as any other.
    expect(generated[0]).toBe('loop_00000000')
    for (const id of [...generated, 'loop_a']) log.add(id)
    const set = log.toSet()!
    expect(set.size).toBe(1001)
    expect([...generated, 'loop_a'].every((id) => set.has(id))).toBe(true)
    expect([...generated, 'loop_a'].some((id) => set.add(id))).toBe(false)
    expect(['loop_12345678', 'loop_00000001', 'loop_b'].some((id) => set.has(id))).toBe(false)
    const copy = set.copy()
    expect(['loop_12345678', 'loop_00000001', 'loop_b'].map((id) => copy.add(id))).toEqual([true, true, true])
    expect([set.size, copy.size, set.has('loop_12345678'), set.has('loop_b')]).toEqual([1001, 1004, false, false])
    // A log goes on after a set was made of it; the set does not.
    log.add('loop_12345678')
    expect([log.toSet()!.size, set.has('loop_12345678')]).toEqual([1002, false])
  })

  it.each([
    ['a generated id', ['loop_0000abcd', 'loop_00000001', 'loop_0000abcd']],
    ['the number 0', ['loop_00000000', 'loop_00000000']],
    ['any other id', ['loop_a', 'loop_00000001', 'loop_a']],
  ])('makes no set of a log that recorded %s twice', (_name, recorded) => {
    const log = new UsedIdLog()
    for (const id of recorded) log.add(id)
    expect(log.toSet()).toBeUndefined()
  })

  it('copies into a set of its own', () => {
    const set = new LoopIdSet()
    for (const id of ['loop_00000000', 'loop_00000001', 'loop_a']) set.add(id)
    const copy = set.copy()
    for (const id of ['loop_00000002', 'loop_b']) copy.add(id)
    expect([set.size, copy.size, set.has('loop_00000002'), set.has('loop_b')]).toEqual([3, 5, false, false])
    expect(['loop_00000000', 'loop_00000001', 'loop_a'].every((id) => copy.has(id))).toBe(true)
  })
})

describe('views', () => {
  it('derives scheduled and overdue views', () => {
    expect(toLoopView(loopA, NOW)).toEqual({ ...loopA, state: 'scheduled', delivery_mode: 'session-local' })
    expect(toLoopView(loopA, NOW + 1000)).toEqual({ ...loopA, state: 'overdue', delivery_mode: 'session-local' })
  })
})

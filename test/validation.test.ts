/** The tools' argument rules (src/validation.ts): what loop_create, loop_list and loop_delete accept, and the exact refusals. */
import { describe, expect, it } from 'vitest'
import { createChange, deleteChange } from '../src/fold.ts'
import {
  assertIntervalFits,
  assertRoomForLoop,
  noLoopIdLeft,
  requireActiveLoop,
  validateCreateInput,
  validateDeleteInput,
  validateListInput,
} from '../src/validation.ts'
import { NOW } from './support/epoch.ts'
import { caught, foldOf, loopA, loopB } from './support/loop-fixtures.ts'

const MAX_PROMPT = 4000
/** The longest interval a loop created at NOW may have: (8.64e15 - NOW) / 1000, rounded down. */
const LONGEST = 8_638_204_003_200

/** The refusal of a prompt without content. */
const EMPTY = 'prompt must be a string with non-whitespace content.'
/** The refusal of a character XML 1.0 cannot carry. */
const control = (codePoint: string, position: number) =>
  `prompt contains the control or non-text character U+${codePoint} at position ${position}; only text, tabs and line breaks are allowed.`
/** The refusal of an interval past the last date. */
const tooLong = (seconds: number) =>
  `time_in_seconds is ${seconds}, so the first heartbeat would fall after +275760-09-13T00:00:00.000Z, the last date a timestamp can hold; the longest interval accepted now is ${LONGEST} seconds.`

describe('create validation', () => {
  it('trims the prompt, keeps CRLF inside it as is, and keeps the interval', () => {
    expect(
      validateCreateInput({ prompt: '  Summarize failures \r\n  then report\n', time_in_seconds: 30 }, MAX_PROMPT, NOW),
    ).toEqual({ prompt: 'Summarize failures \r\n  then report', time_in_seconds: 30 })
  })

  it('reads its arguments in any key order and returns a new object with only the two fields', () => {
    const args = Object.freeze({ time_in_seconds: 5, prompt: 'p' })
    const input = validateCreateInput(args, MAX_PROMPT, NOW)
    expect(input).toStrictEqual({ prompt: 'p', time_in_seconds: 5 })
    expect(input).not.toBe(args)
  })

  it.each([
    [null, 'invalid_arguments', 'loop_create takes an object { prompt, time_in_seconds }.'],
    [[], 'invalid_arguments', 'loop_create takes an object { prompt, time_in_seconds }.'],
    ['p', 'invalid_arguments', 'loop_create takes an object { prompt, time_in_seconds }.'],
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
    // The key check comes first: a bad prompt beside an unknown key names the key.
    [
      { prompt: 3, colour: 'red', time_in_seconds: 0 },
      'invalid_arguments',
      'loop_create does not accept "colour"; it takes only prompt and time_in_seconds.',
    ],
    [{ prompt: '', time_in_seconds: 1 }, 'invalid_prompt', EMPTY],
    [{ prompt: '   ', time_in_seconds: 1 }, 'invalid_prompt', EMPTY],
    [{ prompt: ' \r\n\t\u000B\u000C\u00A0\u3000\uFEFF\u2028 ', time_in_seconds: 1 }, 'invalid_prompt', EMPTY],
    [{ prompt: 3, time_in_seconds: 1 }, 'invalid_prompt', EMPTY],
    [{ prompt: null, time_in_seconds: 1 }, 'invalid_prompt', EMPTY],
    [{ prompt: ['p'], time_in_seconds: 1 }, 'invalid_prompt', EMPTY],
    [{ time_in_seconds: 1 }, 'invalid_prompt', EMPTY],
    // The prompt is checked before the interval.
    [{ prompt: ' ', time_in_seconds: 0 }, 'invalid_prompt', EMPTY],
    [{ prompt: 'ring\u0007', time_in_seconds: 1 }, 'invalid_prompt', control('0007', 5)],
    // Positions count in the trimmed prompt, from 1.
    [{ prompt: '   ring\u0007', time_in_seconds: 1 }, 'invalid_prompt', control('0007', 5)],
    [{ prompt: 'a\u0000b', time_in_seconds: 1 }, 'invalid_prompt', control('0000', 2)],
    [{ prompt: '\u001b[31mred', time_in_seconds: 1 }, 'invalid_prompt', control('001B', 1)],
    [{ prompt: 'a\u000Bb', time_in_seconds: 1 }, 'invalid_prompt', control('000B', 2)],
    [{ prompt: 'a\u000Cb', time_in_seconds: 1 }, 'invalid_prompt', control('000C', 2)],
    [{ prompt: 'a\u001Fb', time_in_seconds: 1 }, 'invalid_prompt', control('001F', 2)],
    [{ prompt: 'half \uD83D pair', time_in_seconds: 1 }, 'invalid_prompt', control('D83D', 6)],
    [{ prompt: 'tail \uDE00', time_in_seconds: 1 }, 'invalid_prompt', control('DE00', 6)],
    [{ prompt: 'swapped \uDE00\uD83D pair', time_in_seconds: 1 }, 'invalid_prompt', control('DE00', 9)],
    [{ prompt: 'non\uFFFEchar', time_in_seconds: 1 }, 'invalid_prompt', control('FFFE', 4)],
    [{ prompt: 'non\uFFFFchar', time_in_seconds: 1 }, 'invalid_prompt', control('FFFF', 4)],
    // The character rule comes before the length rule.
    [{ prompt: `${'x'.repeat(MAX_PROMPT)}\u0001`, time_in_seconds: 1 }, 'invalid_prompt', control('0001', 4001)],
  ])('rejects %j with %s', (args, code, message) => {
    const error = caught(() => validateCreateInput(args, MAX_PROMPT, NOW))
    expect([error.code, error.message]).toEqual([code, message])
  })

  it.each([
    ['tabs, line breaks and a paired surrogate', 'a\tb\nc \uD83D\uDE00 d', 'a\tb\nc \uD83D\uDE00 d'],
    ['a lone CR', 'lone\rreturn', 'lone\rreturn'],
    ['CRLF inside, trimmed around', '\r\nfirst\r\nsecond\r\n', 'first\r\nsecond'],
    ['DEL', 'a\u007Fb', 'a\u007Fb'],
    ['C1 controls', 'x\u0080y\u0085z\u009F', 'x\u0080y\u0085z\u009F'],
    ['a zero-width space alone (not whitespace to trim)', '\u200B', '\u200B'],
    ['zero-width characters with text', ' \u200Bd\u2060 ', '\u200Bd\u2060'],
    ['a trailing VT and FF (whitespace to trim)', 'p\u000B\u000C', 'p'],
    ['U+FFFD and U+FFFC', '\uFFFD\uFFFC', '\uFFFD\uFFFC'],
    ['the highest code point', '\uDBFF\uDFFF', '\uDBFF\uDFFF'],
  ])('accepts %s', (_name, prompt, stored) => {
    expect(validateCreateInput({ prompt, time_in_seconds: 1 }, MAX_PROMPT, NOW)).toEqual({
      prompt: stored,
      time_in_seconds: 1,
    })
  })

  it('refuses a prompt longer than the configured limit in UTF-16 code units, naming it and its setting', () => {
    expect(validateCreateInput({ prompt: 'x'.repeat(10), time_in_seconds: 1 }, 10, NOW).prompt).toBe('x'.repeat(10))
    // Measured after trimming.
    expect(validateCreateInput({ prompt: ` ${'x'.repeat(10)}\n`, time_in_seconds: 1 }, 10, NOW).prompt).toBe(
      'x'.repeat(10),
    )
    const error = caught(() => validateCreateInput({ prompt: ` ${'x'.repeat(11)} `, time_in_seconds: 1 }, 10, NOW))
    expect([error.code, error.message]).toEqual([
      'prompt_too_long',
      'prompt is 11 characters (UTF-16 code units); the limit is 10 (plugin setting maxPromptLength). Shorten it, or point to a file the agent can read.',
    ])
    // Three emoji are six code units.
    const emoji = '\uD83D\uDE00'.repeat(3)
    expect(validateCreateInput({ prompt: emoji, time_in_seconds: 1 }, 6, NOW).prompt).toBe(emoji)
    const surrogates = caught(() => validateCreateInput({ prompt: emoji, time_in_seconds: 1 }, 5, NOW))
    expect([surrogates.code, surrogates.message]).toEqual([
      'prompt_too_long',
      'prompt is 6 characters (UTF-16 code units); the limit is 5 (plugin setting maxPromptLength). Shorten it, or point to a file the agent can read.',
    ])
  })

  it.each([0, -5, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '30', Number.MAX_SAFE_INTEGER + 1, undefined, null])(
    'rejects time_in_seconds %s',
    (seconds) => {
      const error = caught(() => validateCreateInput({ prompt: 'p', time_in_seconds: seconds }, MAX_PROMPT, NOW))
      expect([error.code, error.message]).toEqual([
        'invalid_interval',
        'time_in_seconds must be a positive whole number of seconds, for example 30.',
      ])
    },
  )

  it('accepts every positive safe integer whose first occurrence is still a date, and says why a longer one is refused', () => {
    for (const seconds of [1, 31_536_001, LONGEST]) {
      expect(validateCreateInput({ prompt: 'p', time_in_seconds: seconds }, MAX_PROMPT, NOW)).toEqual({
        prompt: 'p',
        time_in_seconds: seconds,
      })
    }
    expect(NOW + LONGEST * 1000).toBe(8.64e15)
    for (const seconds of [LONGEST + 1, Number.MAX_SAFE_INTEGER]) {
      const error = caught(() => validateCreateInput({ prompt: 'p', time_in_seconds: seconds }, MAX_PROMPT, NOW))
      expect([error.code, error.message]).toEqual(['invalid_interval', tooLong(seconds)])
    }
  })

  it('checks an interval on its own against the creation time', () => {
    expect(assertIntervalFits(LONGEST, NOW)).toBeUndefined()
    const error = caught(() => assertIntervalFits(LONGEST + 1, NOW))
    expect([error.code, error.message]).toEqual(['invalid_interval', tooLong(LONGEST + 1)])
    // At the last date itself nothing fits, and the message says so.
    const late = caught(() => assertIntervalFits(1, 8.64e15))
    expect(late.message).toBe(
      'time_in_seconds is 1, so the first heartbeat would fall after +275760-09-13T00:00:00.000Z, the last date a timestamp can hold; the longest interval accepted now is 0 seconds.',
    )
  })

  it('refuses a create in a session that has used every loop id', () => {
    const error = caught(() => noLoopIdLeft())
    expect([error.code, error.message]).toEqual([
      'too_many_loops',
      'This session has used every loop id; create loops in a new session.',
    ])
  })

  it('refuses a create beyond the per-session limit, naming it and its setting', () => {
    const two = foldOf(createChange(loopA), createChange(loopB))
    expect(assertRoomForLoop(two, 3)).toBeUndefined()
    const error = caught(() => assertRoomForLoop(two, 2))
    expect([error.code, error.message]).toEqual([
      'too_many_loops',
      'This session already has 2 active loops; the limit is 2 (plugin setting maxLoopsPerSession). Delete one with loop_delete (or /loop delete <id>) first.',
    ])
    const one = caught(() => assertRoomForLoop(foldOf(createChange(loopA)), 1))
    expect([one.code, one.message]).toEqual([
      'too_many_loops',
      'This session already has 1 active loop; the limit is 1 (plugin setting maxLoopsPerSession). Delete one with loop_delete (or /loop delete <id>) first.',
    ])
    // Past the limit (a lowered setting): refused all the same.
    expect(caught(() => assertRoomForLoop(two, 1)).message).toBe(
      'This session already has 2 active loops; the limit is 1 (plugin setting maxLoopsPerSession). Delete one with loop_delete (or /loop delete <id>) first.',
    )
  })
})

const ID_RULE =
  'id must be a loop id such as loop_3fa9c2d1 (loop_ then letters, digits, _ or -); run loop_list to see them.'

describe('delete and list validation', () => {
  it('returns the id', () => {
    expect(validateDeleteInput({ id: 'loop_a' })).toBe('loop_a')
    expect(validateDeleteInput({ id: 'loop_3fa9c2d1' })).toBe('loop_3fa9c2d1')
    expect(validateDeleteInput({ id: `loop_${'A-_9'.repeat(16)}` })).toBe(`loop_${'A-_9'.repeat(16)}`)
  })

  it.each([
    [undefined, 'invalid_arguments', 'loop_delete takes an object { id }.'],
    [['loop_a'], 'invalid_arguments', 'loop_delete takes an object { id }.'],
    [{ id: 'loop_a', force: true }, 'invalid_arguments', 'loop_delete does not accept "force"; it takes only id.'],
    [{ id: 7, force: true }, 'invalid_arguments', 'loop_delete does not accept "force"; it takes only id.'],
    [{}, 'invalid_id', ID_RULE],
    [{ id: '' }, 'invalid_id', ID_RULE],
    [{ id: '  ' }, 'invalid_id', ID_RULE],
    [{ id: 7 }, 'invalid_id', ID_RULE],
    [{ id: 'loop_a b' }, 'invalid_id', ID_RULE],
    [{ id: ' loop_a' }, 'invalid_id', ID_RULE],
    [{ id: 'loop_' }, 'invalid_id', ID_RULE],
    [{ id: `loop_${'x'.repeat(65)}` }, 'invalid_id', ID_RULE],
    [{ id: 'task_1' }, 'invalid_id', ID_RULE],
  ])('delete rejects %j', (args, code, message) => {
    const error = caught(() => validateDeleteInput(args))
    expect([error.code, error.message]).toEqual([code, message])
  })

  it('list accepts only an empty object', () => {
    expect(validateListInput({})).toBeUndefined()
    const extra = caught(() => validateListInput({ session_id: 's' }))
    expect([extra.code, extra.message]).toEqual([
      'invalid_arguments',
      'loop_list does not accept "session_id"; it takes no arguments.',
    ])
    for (const args of ['x', null, undefined, []]) {
      const error = caught(() => validateListInput(args))
      expect([error.code, error.message]).toEqual(['invalid_arguments', 'loop_list takes an empty object {}.'])
    }
  })

  it('requireActiveLoop finds active ids and names unknown ones', () => {
    const fold = foldOf(createChange(loopA), createChange(loopB))
    expect(requireActiveLoop(fold, 'loop_a')).toBe(fold.loops[0])
    expect(requireActiveLoop(fold, 'loop_b')).toEqual(loopB)
    for (const id of ['toString', '__proto__', 'loop_zz']) {
      const error = caught(() => requireActiveLoop(fold, id))
      expect([error.code, error.message]).toEqual([
        'loop_not_found',
        `No active loop "${id}" in this session; run loop_list (or /loop list) to see its loops.`,
      ])
    }
    // A deleted loop is not active.
    const deleted = foldOf(createChange(loopA), deleteChange('loop_a'))
    expect(caught(() => requireActiveLoop(deleted, 'loop_a')).code).toBe('loop_not_found')
  })
})

/**
 * fast-check generators for hostile `loop` input: prompts mixing ordinary text,
 * XML specials, every kind of whitespace, control, format, surrogate and astral
 * character; intervals of every JSON shape; whole argument objects with missing,
 * extra and nested fields; and `/loop` command lines.
 */
import fc from 'fast-check'
import { LONGEST_INTERVAL_AT_LOAD } from './input-oracle.ts'

const ONE_OF = (text: string) => fc.constantFrom(...[...text])

/** One "character" (a code unit or a short sequence) from a class chosen to break things. */
export const hostileChar: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }) },
  { weight: 2, arbitrary: ONE_OF('&<>"\'') },
  { weight: 1, arbitrary: fc.constantFrom(']]>', '&amp;', '<prompt>', '</heartbeat>', '&#0;', '<![CDATA[') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      ' ',
      '  ',
      '\t',
      '\n',
      '\r\n',
      '\r',
      '\u000B',
      '\u000C',
      '\u00A0',
      '\u2028',
      '\u2029',
      '\u3000',
      '\u1680',
      '\uFEFF',
    ),
  },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 0x1f }).map((code) => String.fromCharCode(code)) },
  { weight: 1, arbitrary: fc.integer({ min: 0x7f, max: 0x9f }).map((code) => String.fromCharCode(code)) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('\u200B', '\u200C', '\u200D', '\u2060', '\u061C', '\u00AD', '\u180E', '\u2066'),
  },
  { weight: 1, arbitrary: fc.constantFrom('\uFFFE', '\uFFFF', '\uFFFD', '\uE000', '\u0378') },
  { weight: 1, arbitrary: fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => String.fromCharCode(code)) },
  { weight: 1, arbitrary: fc.constantFrom('\u0301', '\u034F', '\uFE0F', '\u3164', '\u115F') },
  { weight: 3, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }) },
  { weight: 1, arbitrary: fc.constantFrom('😀', '👩‍👩‍👧', '𝔘', '中文', 'עברית', 'ﷺ') },
)

/** A prompt-like string of hostile characters. */
export const hostilePrompt: fc.Arbitrary<string> = fc
  .array(hostileChar, { maxLength: 24 })
  .map((parts) => parts.join(''))

/** A prompt around the default 4,000-character bound. */
export const longPrompt: fc.Arbitrary<string> = fc
  .tuple(
    fc.integer({ min: 3990, max: 4010 }),
    fc.constantFrom('a', 'é', '😀', ' ', '<'),
    fc.constantFrom('', '  ', 'x'),
  )
  .map(([length, unit, edge]) =>
    `${edge}${unit.repeat(Math.ceil(length / unit.length))}${edge}`.slice(0, length + edge.length * 2),
  )

/** A visible, well-behaved prompt. */
export const plainPrompt: fc.Arbitrary<string> = fc
  .string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 40 })
  .filter((text) => /[!-~]/.test(text))

/** Every shape an interval can arrive in. */
export const hostileSeconds: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 1, max: 31_536_000 }) },
  { weight: 2, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.double() },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      0,
      -0,
      -1,
      1,
      0.5,
      1.5,
      30.0,
      2 ** 31,
      2 ** 53,
      2 ** 53 - 1,
      -(2 ** 53),
      31_536_000,
      LONGEST_INTERVAL_AT_LOAD - 1000,
      LONGEST_INTERVAL_AT_LOAD + 1000,
      Number.MAX_VALUE,
      Number.MIN_VALUE,
      Number.EPSILON,
      1e21,
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY) },
  {
    weight: 1,
    arbitrary: fc.oneof(
      fc.integer().map(String),
      fc.constantFrom('30', ' 30', '30.0', '1e3', '0x1e', '', 'NaN', '2**53'),
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, [30], { value: 30 }, { seconds: { nested: [1, 2] } }) },
)

/** Arbitrary argument objects for `loop_create`. */
export const createArguments: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({ prompt: fc.oneof(hostilePrompt, plainPrompt), time_in_seconds: hostileSeconds }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ prompt: plainPrompt, time_in_seconds: fc.integer({ min: 1, max: 31_536_000 }) }),
  },
  { weight: 1, arbitrary: fc.record({ prompt: longPrompt, time_in_seconds: fc.integer({ min: 1, max: 3600 }) }) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(
        fc.record({ prompt: plainPrompt, time_in_seconds: fc.integer({ min: 1, max: 3600 }) }),
        fc.dictionary(
          fc.constantFrom('title', 'allow_steer', 'id', 'next_at', 'extra', 'Prompt', '__proto__', 'constructor'),
          fc.jsonValue(),
          {
            minKeys: 1,
            maxKeys: 2,
          },
        ),
      )
      .map(([args, extra]) => ({ ...extra, ...args })),
  },
  {
    weight: 1,
    arbitrary: fc.record({ prompt: fc.jsonValue(), time_in_seconds: fc.jsonValue() }, { requiredKeys: [] }),
  },
  { weight: 1, arbitrary: fc.jsonValue() },
)

/** A `/loop` line that has the create shape: separators, digits, a prompt, trailing space. */
export const createLine: fc.Arbitrary<{ line: string; digits: string; prompt: string }> = fc
  .tuple(
    fc.constantFrom(' ', '  ', '\t'),
    fc.oneof(
      fc.integer({ min: 0, max: 31_536_005 }).map(String),
      fc.constantFrom(LONGEST_INTERVAL_AT_LOAD - 1000, LONGEST_INTERVAL_AT_LOAD + 1000).map(String),
      fc.constantFrom('0030', '9007199254740992', '99999999999999999999999', '00'),
    ),
    fc.constantFrom(' ', '   ', '\t', '\n'),
    fc.oneof(hostilePrompt, plainPrompt, longPrompt),
    fc.constantFrom('', ' ', '\n', '\t '),
  )
  .map(([before, digits, between, prompt, after]) => ({
    line: `/loop${before}${digits}${between}${prompt}${after}`,
    digits,
    prompt,
  }))

/** Any other `/loop` line: list and delete shapes with hostile ids, and plain noise. */
export const otherLine: fc.Arbitrary<string> = fc.oneof(
  fc
    .tuple(fc.constantFrom(' list', ' list ', ' LIST', ' list all'), fc.constantFrom('', '\n'))
    .map(([head, tail]) => `/loop${head}${tail}`),
  fc
    .tuple(
      fc.constantFrom(' delete ', ' delete  ', ' delete\t'),
      fc.oneof(
        fc.string({ unit: 'grapheme-ascii', maxLength: 16 }),
        hostilePrompt,
        fc.string({ unit: ONE_OF('0123456789abcdef'), minLength: 8, maxLength: 8 }).map((hex) => `loop_${hex}`),
      ),
    )
    .map(([head, id]) => `/loop${head}${id}`),
  hostilePrompt.map((rest) => `/loop ${rest}`),
  fc.tuple(hostileSeconds.map(String), hostilePrompt).map(([seconds, prompt]) => `/loop ${seconds} ${prompt}`),
)

/** Arbitrary argument objects for `loop_delete`: hostile ids, missing and extra fields, any JSON. */
export const deleteArguments: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      id: fc.oneof(
        hostilePrompt,
        fc.string({ unit: ONE_OF('0123456789abcdef'), minLength: 8, maxLength: 8 }).map((hex) => `loop_${hex}`),
        fc.constantFrom('loop_', 'loop', '', ' loop_1a2b3c4d', 'loop_1a2b3c4d ', 'LOOP_1A2B3C4D'),
      ),
    }),
  },
  { weight: 2, arbitrary: fc.record({ id: fc.jsonValue() }, { requiredKeys: [] }) },
  { weight: 1, arbitrary: fc.record({ id: fc.constant('loop_1a2b3c4d'), extra: fc.jsonValue() }) },
  { weight: 1, arbitrary: fc.jsonValue() },
)

/** Arbitrary argument values for `loop_list`, which takes exactly `{}`. */
export const listArguments: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant({}),
  fc.jsonValue(),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue(), { minKeys: 1, maxKeys: 3 }),
)

/**
 * An independent statement of which `loop_create` inputs must be accepted and
 * what must be stored, written from the rules (not from the plugin's code):
 * an object with exactly `prompt` and `time_in_seconds`; a positive safe
 * integer of seconds whose first occurrence is still a date; a prompt stored
 * trimmed (SPEC.md §2 "Public surface"), refused without non-whitespace content,
 * refused for the characters XML 1.0 cannot carry (C0 controls other than TAB,
 * LF and CR, lone surrogates, U+FFFE/U+FFFF), and refused beyond the
 * prompt-length bound in UTF-16 code units. Where the rules leave room (a forbidden character
 * inside the trimmed whitespace), the oracle says `either` and the test only
 * checks the invariants.
 */

/** The last instant a JavaScript Date holds, in epoch milliseconds. */
const LATEST_DATE_MS = 8.64e15

/** The longest interval accepted at `now`: its first occurrence must still be a date. */
function longestInterval(now: number): number {
  return Math.floor((LATEST_DATE_MS - now) / 1000)
}

/** The longest interval accepted at the time this module loads, for generators (it shrinks by one each second). */
export const LONGEST_INTERVAL_AT_LOAD = longestInterval(Date.now())

/** Default `maxPromptLength`. */
export const DEFAULT_MAX_PROMPT_LENGTH = 4000

/** What a `loop_create` call with these arguments must do. */
export type CreateExpectation =
  | { readonly kind: 'accept'; readonly prompt: string; readonly time_in_seconds: number }
  | { readonly kind: 'refuse'; readonly reason: string }
  | { readonly kind: 'either'; readonly reason: string }

/** What XML 1.0 cannot carry: C0 controls except TAB, LF and CR, U+FFFE, U+FFFF, lone surrogates. */
const FORBIDDEN = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|\p{Cs}/u

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * The expectation for one set of raw `loop_create` arguments.
 * @param args - what the model sent.
 * @param maxPromptLength - the configured bound.
 * @param now - the creation time.
 * @returns accept (with the stored values), refuse, or either.
 */
export function expectCreate(
  args: unknown,
  maxPromptLength = DEFAULT_MAX_PROMPT_LENGTH,
  now = Date.now(),
): CreateExpectation {
  if (!isPlainObject(args)) return { kind: 'refuse', reason: 'not an object' }
  const extra = Object.keys(args).find((key) => key !== 'prompt' && key !== 'time_in_seconds')
  if (extra !== undefined) return { kind: 'refuse', reason: `extra field ${extra}` }
  const { prompt, time_in_seconds: seconds } = args
  if (typeof seconds !== 'number' || !Number.isSafeInteger(seconds) || seconds < 1 || seconds > longestInterval(now)) {
    return { kind: 'refuse', reason: 'interval' }
  }
  if (typeof prompt !== 'string') return { kind: 'refuse', reason: 'prompt type' }
  const stored = prompt.trim()
  if (FORBIDDEN.test(stored)) return { kind: 'refuse', reason: 'forbidden character' }
  if (FORBIDDEN.test(prompt)) return { kind: 'either', reason: 'forbidden character only in trimmed whitespace' }
  if (stored === '') return { kind: 'refuse', reason: 'no non-whitespace content' }
  if (stored.length > maxPromptLength) return { kind: 'refuse', reason: 'too long' }
  return { kind: 'accept', prompt: stored, time_in_seconds: seconds }
}

/** Whether a stored prompt obeys the storage rules (for loops accepted under `either`). */
export function isValidStoredPrompt(prompt: string, maxPromptLength = DEFAULT_MAX_PROMPT_LENGTH): boolean {
  return prompt === prompt.trim() && !FORBIDDEN.test(prompt) && prompt.length > 0 && prompt.length <= maxPromptLength
}

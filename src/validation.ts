/**
 * The tools' argument rules (SPEC.md §2 "Public surface"): what `loop_create`,
 * `loop_list` and `loop_delete` accept, refused with a message that says what
 * to fix before anything is appended. Pure: every function takes `now`, limits
 * and plain values.
 * @module dsh-plugin-loop/validation
 */
import { LoopError } from './errors.ts'
import { firstNonXmlCharacter, isLoopId, type LoopFold } from './fold.ts'
import { isRecord } from './shared/guards.ts'
import { LATEST_DATE_MS, longestIntervalSeconds } from './shared/timing.ts'
import type { LoopRecord } from './types.ts'

/** Validated `loop_create` input. */
export interface LoopCreateInput {
  readonly prompt: string
  readonly time_in_seconds: number
}

/** Reject any key outside `allowed`, naming the first offender. */
function assertOnlyKeys(tool: string, args: Record<string, unknown>, allowed: readonly string[]): void {
  const unknown = Object.keys(args).find((key) => !allowed.includes(key))
  if (unknown === undefined) return
  const accepted = allowed.length === 0 ? 'no arguments' : `only ${allowed.join(' and ')}`
  throw new LoopError('invalid_arguments', `${tool} does not accept "${unknown}"; it takes ${accepted}.`)
}

/**
 * The prompt as stored: trimmed, with non-whitespace content, only characters
 * a heartbeat can carry, and at most `maxPromptLength` UTF-16 code units.
 * @throws LoopError `invalid_prompt` or `prompt_too_long`.
 */
function validatePrompt(value: unknown, maxPromptLength: number): string {
  const prompt = typeof value === 'string' ? value.trim() : ''
  if (prompt === '') throw new LoopError('invalid_prompt', 'prompt must be a string with non-whitespace content.')
  const character = firstNonXmlCharacter(prompt)
  if (character !== undefined) {
    throw new LoopError(
      'invalid_prompt',
      `prompt contains the control or non-text character ${character.name} at position ${character.index + 1}; only text, tabs and line breaks are allowed.`,
    )
  }
  if (prompt.length > maxPromptLength) {
    throw new LoopError(
      'prompt_too_long',
      `prompt is ${prompt.length} characters (UTF-16 code units); the limit is ${maxPromptLength} (plugin setting maxPromptLength). Shorten it, or point to a file the agent can read.`,
    )
  }
  return prompt
}

/**
 * Refuse an interval whose first occurrence, for a loop created at `now`, would not be a representable date.
 * @param seconds - a positive whole number of seconds.
 * @param now - creation time in epoch milliseconds.
 * @throws LoopError `invalid_interval`.
 */
export function assertIntervalFits(seconds: number, now: number): void {
  const longest = longestIntervalSeconds(now)
  if (seconds <= longest) return
  throw new LoopError(
    'invalid_interval',
    `time_in_seconds is ${seconds}, so the first heartbeat would fall after ${new Date(LATEST_DATE_MS).toISOString()}, the last date a timestamp can hold; the longest interval accepted now is ${longest} seconds.`,
  )
}

/**
 * Validate `loop_create` arguments.
 * @param args - raw tool arguments.
 * @param maxPromptLength - the configured limit.
 * @param now - creation time in epoch milliseconds.
 * @returns the trimmed prompt and the interval.
 * @throws LoopError before anything is appended.
 */
export function validateCreateInput(args: unknown, maxPromptLength: number, now: number): LoopCreateInput {
  if (!isRecord(args)) {
    throw new LoopError('invalid_arguments', 'loop_create takes an object { prompt, time_in_seconds }.')
  }
  assertOnlyKeys('loop_create', args, ['prompt', 'time_in_seconds'])
  const prompt = validatePrompt(args.prompt, maxPromptLength)
  const seconds = args.time_in_seconds
  if (typeof seconds !== 'number' || !Number.isSafeInteger(seconds) || seconds < 1) {
    throw new LoopError(
      'invalid_interval',
      'time_in_seconds must be a positive whole number of seconds, for example 30.',
    )
  }
  assertIntervalFits(seconds, now)
  return { prompt, time_in_seconds: seconds }
}

/**
 * Refuse a create that would exceed the per-session loop limit.
 * @param fold - the session's fold.
 * @param maxLoopsPerSession - the configured limit.
 * @throws LoopError `too_many_loops`.
 */
export function assertRoomForLoop(fold: LoopFold, maxLoopsPerSession: number): void {
  const active = fold.loops.length
  if (active < maxLoopsPerSession) return
  throw new LoopError(
    'too_many_loops',
    `This session already has ${active} active loop${active === 1 ? '' : 's'}; the limit is ${maxLoopsPerSession} (plugin setting maxLoopsPerSession). Delete one with loop_delete (or /loop delete <id>) first.`,
  )
}

/**
 * Validate `loop_delete` arguments.
 * @param args - raw tool arguments.
 * @returns the id to delete.
 * @throws LoopError before anything is appended.
 */
export function validateDeleteInput(args: unknown): string {
  if (!isRecord(args)) throw new LoopError('invalid_arguments', 'loop_delete takes an object { id }.')
  assertOnlyKeys('loop_delete', args, ['id'])
  if (!isLoopId(args.id)) {
    throw new LoopError(
      'invalid_id',
      'id must be a loop id such as loop_3fa9c2d1 (loop_ then letters, digits, _ or -); run loop_list to see them.',
    )
  }
  return args.id
}

/** Validate `loop_list` arguments: exactly an empty object, or `invalid_arguments`. */
export function validateListInput(args: unknown): void {
  if (!isRecord(args)) throw new LoopError('invalid_arguments', 'loop_list takes an empty object {}.')
  assertOnlyKeys('loop_list', args, [])
}

/**
 * The active loop with this id, or an input error.
 * @param fold - the session's fold.
 * @param id - a valid loop id.
 * @returns the active record.
 * @throws LoopError `loop_not_found`.
 */
export function requireActiveLoop(fold: LoopFold, id: string): LoopRecord {
  const loop = fold.loops.find((active) => active.id === id)
  if (loop !== undefined) return loop
  throw new LoopError(
    'loop_not_found',
    `No active loop "${id}" in this session; run loop_list (or /loop list) to see its loops.`,
  )
}

/**
 * Refuse a create in a session that has used every loop id (only a hand-edited log gets there).
 * @throws LoopError `too_many_loops`.
 */
export function noLoopIdLeft(): never {
  throw new LoopError('too_many_loops', 'This session has used every loop id; create loops in a new session.')
}

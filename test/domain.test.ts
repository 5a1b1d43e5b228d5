import { describe, expect, it } from 'vitest'
import {
  EMPTY_LOOP_FOLD,
  allocateLoopId,
  applyLoopChange,
  createChange,
  createLoopRecord,
  decodeLoopChange,
  deleteChange,
  dispatchChange,
  escapeXml,
  foldLoopEvents,
  renderHeartbeat,
  requireActiveLoop,
  toLoopView,
  validateCreateInput,
  validateDeleteInput,
  validateListInput,
} from '../src/domain.ts'
import { LoopError } from '../src/errors.ts'
import { earliestNextAt, findDueLoop, nextOccurrence } from '../src/timing.ts'
import type { LoopRecord } from '../src/types.ts'

const NOW = 1_800_000_000_000
const loopA: LoopRecord = { id: 'loop_a', prompt: 'check A', time_in_seconds: 1, next_at: NOW + 1000 }
const loopB: LoopRecord = { id: 'loop_b', prompt: 'check B', time_in_seconds: 60, next_at: NOW + 500 }
const event = (data: unknown) => ({ type: 'loop/change', data })

/** The error a call throws, asserted to be a LoopError. */
function caught(fn: () => unknown): LoopError {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(LoopError)
    return error as LoopError
  }
  throw new Error('expected a LoopError')
}

describe('create validation', () => {
  it('trims the prompt and keeps the interval', () => {
    expect(validateCreateInput({ prompt: '  Summarize failures \n', time_in_seconds: 30 }, NOW)).toEqual({ prompt: 'Summarize failures', time_in_seconds: 30 })
  })

  it('first next_at is now plus the interval in milliseconds', () => {
    expect(createLoopRecord({ prompt: 'p', time_in_seconds: 30 }, 'loop_x', NOW)).toEqual({ id: 'loop_x', prompt: 'p', time_in_seconds: 30, next_at: NOW + 30_000 })
  })

  it.each([
    [null, 'invalid_arguments', 'loop_create takes an object { prompt, time_in_seconds }.'],
    [[], 'invalid_arguments', 'loop_create takes an object { prompt, time_in_seconds }.'],
    [{ prompt: 'p', time_in_seconds: 1, title: 't' }, 'invalid_arguments', 'loop_create does not accept "title"; it takes only prompt and time_in_seconds.'],
    [{ prompt: 'p', time_in_seconds: 1, allow_steer: true }, 'invalid_arguments', 'loop_create does not accept "allow_steer"; it takes only prompt and time_in_seconds.'],
    [{ prompt: '   ', time_in_seconds: 1 }, 'invalid_prompt', 'prompt must be a string with non-whitespace content.'],
    [{ prompt: 3, time_in_seconds: 1 }, 'invalid_prompt', 'prompt must be a string with non-whitespace content.'],
    [{ time_in_seconds: 1 }, 'invalid_prompt', 'prompt must be a string with non-whitespace content.'],
  ])('rejects %j with %s', (args, code, message) => {
    const error = caught(() => validateCreateInput(args, NOW))
    expect(error.code).toBe(code)
    expect(error.message).toBe(message)
  })

  it.each([0, -5, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '30', Number.MAX_SAFE_INTEGER + 1, undefined])('rejects time_in_seconds %s', (seconds) => {
    const error = caught(() => validateCreateInput({ prompt: 'p', time_in_seconds: seconds }, NOW))
    expect(error.code).toBe('invalid_interval')
    expect(error.message).toBe('time_in_seconds must be a positive whole number of seconds, for example 30.')
  })

  it('rejects a safe interval whose first occurrence is not representable', () => {
    const seconds = Math.floor(Number.MAX_SAFE_INTEGER / 1000)
    const error = caught(() => validateCreateInput({ prompt: 'p', time_in_seconds: seconds }, NOW))
    expect(error.code).toBe('invalid_interval')
    expect(error.message).toBe(`time_in_seconds ${seconds} is too large: the next occurrence would fall outside representable time.`)
  })

  it('accepts the one-second minimum', () => {
    expect(validateCreateInput({ prompt: 'p', time_in_seconds: 1 }, NOW).time_in_seconds).toBe(1)
  })
})

describe('delete and list validation', () => {
  it('returns the id', () => {
    expect(validateDeleteInput({ id: 'loop_a' })).toBe('loop_a')
  })

  it.each([
    [undefined, 'invalid_arguments', 'loop_delete takes an object { id }.'],
    [{ id: 'loop_a', force: true }, 'invalid_arguments', 'loop_delete does not accept "force"; it takes only id.'],
    [{ id: '' }, 'invalid_id', 'id must be a non-empty loop id, for example loop_1a2b3c4d; run loop_list to see them.'],
    [{ id: '  ' }, 'invalid_id', 'id must be a non-empty loop id, for example loop_1a2b3c4d; run loop_list to see them.'],
    [{ id: 7 }, 'invalid_id', 'id must be a non-empty loop id, for example loop_1a2b3c4d; run loop_list to see them.'],
  ])('delete rejects %j', (args, code, message) => {
    const error = caught(() => validateDeleteInput(args))
    expect([error.code, error.message]).toEqual([code, message])
  })

  it('list accepts only an empty object', () => {
    expect(() => validateListInput({})).not.toThrow()
    expect(caught(() => validateListInput({ session_id: 's' })).message).toBe('loop_list does not accept "session_id"; it takes no arguments.')
    expect(caught(() => validateListInput('x')).message).toBe('loop_list takes an empty object {}.')
  })

  it('requireActiveLoop finds active ids and names unknown ones', () => {
    const state = applyLoopChange(EMPTY_LOOP_FOLD, createChange(loopA))
    expect(requireActiveLoop(state, 'loop_a')).toEqual(loopA)
    const error = caught(() => requireActiveLoop(state, 'loop_zz'))
    expect(error.code).toBe('loop_not_found')
    expect(error.message).toBe('No active loop "loop_zz" in this session; run loop_list (or /loop list) to see its loops.')
  })
})

describe('ids', () => {
  it('are prefixed and skip every id the session used, deleted ones included', () => {
    const used = foldLoopEvents(EMPTY_LOOP_FOLD, [event(createChange({ ...loopA, id: 'loop_00' })), event(deleteChange('loop_00'))])
    const candidates = ['00', '00', '01']
    expect(allocateLoopId(used, () => candidates.shift()!)).toBe('loop_01')
    expect(candidates).toEqual([])
  })
})

describe('decoding', () => {
  it('decodes the three v1 operations exactly', () => {
    expect(decodeLoopChange(createChange(loopA))).toEqual({ version: 1, operation: 'create', loop: loopA })
    expect(decodeLoopChange(deleteChange('loop_a'))).toEqual({ version: 1, operation: 'delete', id: 'loop_a' })
    expect(decodeLoopChange(dispatchChange('loop_a', NOW))).toEqual({ version: 1, operation: 'dispatch', id: 'loop_a', next_at: NOW })
  })

  it('strips the previous build title and allow_steer from create and update', () => {
    const legacy = { ...loopA, title: 'Build', allow_steer: false }
    expect(decodeLoopChange({ version: 1, operation: 'create', loop: legacy })).toEqual({ version: 1, operation: 'create', loop: loopA })
    expect(decodeLoopChange({ version: 1, operation: 'update', loop: legacy })).toEqual({ version: 1, operation: 'update', loop: loopA })
  })

  it.each([
    [null, 'payload is not an object'],
    [{ version: 2, operation: 'delete', id: 'loop_a' }, 'unsupported version 2'],
    [{ version: 1, operation: 'pause', id: 'loop_a' }, 'unknown operation "pause"'],
    [{ version: 1, operation: 'delete', id: 'loop_a', extra: 1 }, 'unexpected field "extra" on delete'],
    [{ version: 1, operation: 'dispatch', id: 'loop_a' }, 'missing field "next_at" on dispatch'],
    [{ version: 1, operation: 'dispatch', id: 'loop_a', next_at: 1.5 }, 'invalid dispatch next_at'],
    [{ version: 1, operation: 'dispatch', id: 'loop_a', next_at: -1 }, 'invalid dispatch next_at'],
    [{ version: 1, operation: 'delete', id: 'x' }, 'invalid id'],
    [{ version: 1, operation: 'delete', id: 'loop_' }, 'invalid id'],
    [{ version: 1, operation: 'dispatch', id: 'loop_', next_at: 5 }, 'invalid id'],
    [{ version: 1, operation: 'create', loop: 'x' }, 'loop is not an object'],
    [{ version: 1, operation: 'create', loop: { ...loopA, colour: 'red' } }, 'unexpected field "colour"'],
    [{ version: 1, operation: 'create', loop: { ...loopA, id: 'loop_' } }, 'invalid id'],
    [{ version: 1, operation: 'create', loop: { ...loopA, id: 9 } }, 'invalid id'],
    [{ version: 1, operation: 'create', loop: { ...loopA, prompt: ' padded' } }, 'invalid prompt for loop_a'],
    [{ version: 1, operation: 'create', loop: { ...loopA, prompt: '' } }, 'invalid prompt for loop_a'],
    [{ version: 1, operation: 'create', loop: { ...loopA, time_in_seconds: 0 } }, 'invalid time_in_seconds for loop_a'],
    [{ version: 1, operation: 'create', loop: { ...loopA, next_at: '1' } }, 'invalid next_at for loop_a'],
    [{ version: 1, operation: 'create', loop: { ...loopA, next_at: -1 } }, 'invalid next_at for loop_a'],
    [{ version: 1, operation: 'update', loop: { ...loopA, title: 5 } }, 'invalid legacy title for loop_a'],
    [{ version: 1, operation: 'update', loop: { ...loopA, allow_steer: 'yes' } }, 'invalid legacy allow_steer for loop_a'],
  ])('fails closed on %j', (data, detail) => {
    const error = caught(() => decodeLoopChange(data))
    expect(error.code).toBe('corrupt_loop_log')
    expect(error.message).toBe(`corrupt loop/change record: ${detail}`)
  })
})

describe('fold', () => {
  it('applies create, legacy update, dispatch and delete in order and ignores other events', () => {
    const state = foldLoopEvents(EMPTY_LOOP_FOLD, [
      { type: 'user/message', data: { anything: true } },
      event(createChange(loopA)),
      event(createChange(loopB)),
      event({ version: 1, operation: 'update', loop: { ...loopA, prompt: 'check A2', title: 'old' } }),
      event(dispatchChange('loop_b', NOW + 60_500)),
      event(deleteChange('loop_a')),
    ])
    expect(state).toEqual({ loops: [{ ...loopB, next_at: NOW + 60_500 }], usedIds: ['loop_a', 'loop_b'] })
  })

  it('never mutates its input state', () => {
    const before = applyLoopChange(EMPTY_LOOP_FOLD, createChange(loopA))
    const snapshot = structuredClone(before)
    applyLoopChange(before, dispatchChange('loop_a', NOW + 5000))
    applyLoopChange(before, deleteChange('loop_a'))
    expect(before).toEqual(snapshot)
    expect(EMPTY_LOOP_FOLD).toEqual({ loops: [], usedIds: [] })
  })

  it.each([
    [[createChange(loopA), createChange(loopA)], 'loop id loop_a was reused'],
    [[createChange(loopA), deleteChange('loop_a'), createChange(loopA)], 'loop id loop_a was reused'],
    [[deleteChange('loop_a')], 'delete targets inactive loop loop_a'],
    [[dispatchChange('loop_a', NOW)], 'dispatch targets inactive loop loop_a'],
    [[{ version: 1, operation: 'update', loop: loopA }], 'update targets inactive loop loop_a'],
    [[createChange(loopA), deleteChange('loop_a'), dispatchChange('loop_a', NOW)], 'dispatch targets inactive loop loop_a'],
  ])('fails closed on an invalid transition %#', (changes, detail) => {
    const error = caught(() => foldLoopEvents(EMPTY_LOOP_FOLD, changes.map(event)))
    expect(error.message).toBe(`corrupt loop/change record: ${detail}`)
  })
})

describe('timing', () => {
  const state = foldLoopEvents(EMPTY_LOOP_FOLD, [event(createChange(loopA)), event(createChange(loopB))])

  it('finds the earliest due loop and the earliest future next_at', () => {
    expect(findDueLoop(state.loops, NOW)).toBeUndefined()
    expect(earliestNextAt(state.loops)).toBe(NOW + 500)
    expect(earliestNextAt([])).toBeUndefined()
    expect(findDueLoop(state.loops, NOW + 500)).toEqual(loopB)
    expect(findDueLoop(state.loops, NOW + 5000)).toEqual(loopB)
  })

  it('breaks next_at ties in creation order', () => {
    const tied = foldLoopEvents(EMPTY_LOOP_FOLD, [event(createChange({ ...loopA, next_at: NOW })), event(createChange({ ...loopB, next_at: NOW }))])
    expect(findDueLoop(tied.loops, NOW)?.id).toBe('loop_a')
  })

  it('advances by whole intervals to strictly after now', () => {
    expect(nextOccurrence(loopA, NOW + 1000)).toBe(NOW + 2000)
    expect(nextOccurrence(loopA, NOW + 1999)).toBe(NOW + 2000)
    // A one-second loop delayed five seconds: one dispatch, next occurrence in the future.
    expect(nextOccurrence(loopA, NOW + 6000)).toBe(NOW + 7000)
    expect(nextOccurrence(loopA, NOW + 6500)).toBe(NOW + 7000)
    expect(nextOccurrence(loopB, NOW + 500 + 3 * 60_000 + 1)).toBe(NOW + 500 + 4 * 60_000)
  })

  it('derives scheduled and overdue views', () => {
    expect(toLoopView(loopA, NOW)).toEqual({ ...loopA, state: 'scheduled', delivery_mode: 'session-local' })
    expect(toLoopView(loopA, NOW + 1000)).toEqual({ ...loopA, state: 'overdue', delivery_mode: 'session-local' })
  })
})

describe('heartbeat', () => {
  it('escapes the five XML specials', () => {
    expect(escapeXml(`a & b < c > d " e ' f`)).toBe('a &amp; b &lt; c &gt; d &quot; e &apos; f')
  })

  it('renders the exact element with escaped id and prompt', () => {
    expect(renderHeartbeat({ ...loopA, id: 'loop_<x>', prompt: 'Is "main" <green> & \'ok\'?' })).toBe(
      '<heartbeat>\n  <loop_id>loop_&lt;x&gt;</loop_id>\n  <prompt>Is &quot;main&quot; &lt;green&gt; &amp; &apos;ok&apos;?</prompt>\n</heartbeat>',
    )
  })
})

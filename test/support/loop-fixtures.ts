/**
 * Shared fixtures of the pure-logic tests (test/fold.test.ts, test/validation.test.ts,
 * test/drive.test.ts, test/inbox.test.ts, test/delivery.test.ts, test/shared/timing.test.ts,
 * test/shared/heartbeat.test.ts, the view in test/tools.test.ts) and of test/loop.test.ts:
 * two loop records due soon after the test epoch (test/support/epoch.ts), a fold helper and
 * a heartbeat message.
 * @module test/support/loop-fixtures
 */
import { createUserMessage, freezeMessage, MessageId, type UserMessage } from '@deepseek-ai/dsh-llm'
import { expect } from 'vitest'
import { LoopError } from '../../src/errors.ts'
import { foldLoopEvents } from '../../src/fold.ts'
import type { LoopRecord } from '../../src/types.ts'
import { NOW } from './epoch.ts'
import { heartbeatText } from './heartbeat-xml.ts'

/** A one-second loop, due in one second. */
export const loopA: LoopRecord = { id: 'loop_a', prompt: 'check A', time_in_seconds: 1, next_at: NOW + 1000 }
/** A one-minute loop, due in half a second (before {@link loopA}). */
export const loopB: LoopRecord = { id: 'loop_b', prompt: 'check B', time_in_seconds: 60, next_at: NOW + 500 }
/** A `loop/change` session event carrying `data`. */
export const event = (data: unknown) => ({ type: 'loop/change', data })
/** The fold of the given change payloads, in order. */
export const foldOf = (...changes: unknown[]) => foldLoopEvents(changes.map(event))

/** The error a call throws, asserted to be of the given class. */
export function caughtAs<E extends Error>(kind: new (...args: never[]) => E, fn: () => unknown): E {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(kind)
    return error as E
  }
  throw new Error(`expected a ${kind.name}`)
}

/** The error a call throws, asserted to be a LoopError. */
export const caught = (fn: () => unknown): LoopError => caughtAs(LoopError, fn)

/**
 * A heartbeat message of one loop, as the runtime sends it.
 * @param loopId - the loop's id.
 * @param options - its prompt (the id unless given) and the message id (a fresh one unless given).
 * @returns the frozen message.
 */
export function heartbeatMessage(loopId: string, options: { prompt?: string; id?: string } = {}): UserMessage {
  const message = {
    content: [{ type: 'text' as const, text: heartbeatText(loopId, options.prompt ?? loopId) }],
    source: { kind: 'plugin' as const, plugin: 'loop' },
  }
  return options.id === undefined
    ? createUserMessage(message)
    : freezeMessage({ ...message, role: 'user', id: MessageId(options.id) })
}

/**
 * Loops and the `loop` projection for the browser half's jsdom tests: fake
 * timers from the test epoch (test/support/epoch.ts), four loops due at known
 * offsets from it, and a settable projection behind a `useSyncExternalStore`
 * reader.
 */
import { act, cleanup } from '@testing-library/react'
import { useSyncExternalStore } from 'react'
import { afterEach, beforeEach, vi } from 'vitest'
import type { LoopProjection, LoopRecord } from '../../src/types.ts'
import type { LoopsViewProps } from '../../src/ui/slot-props.ts'
import { NOW } from './epoch.ts'

/**
 * Run every test of the calling file on fake timers (timeouts, intervals and
 * `Date`) starting at `NOW`, and end each unmounted, on real timers, with
 * every spy restored.
 */
export function runAtNow() {
  beforeEach(() => {
    vi.useFakeTimers({ now: NOW, toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] })
  })
  afterEach(() => {
    cleanup()
    vi.useRealTimers()
    vi.restoreAllMocks()
  })
}

/** A loop record due `dueInMs` after `NOW`. */
export const loop = (id: string, prompt: string, time_in_seconds: number, dueInMs: number): LoopRecord => ({
  id,
  prompt,
  time_in_seconds,
  next_at: NOW + dueInMs,
})

/** Every 30s, due in 8s. */
export const A = loop('loop_aaaa1111', 'Check whether the build is healthy', 30, 8_000)
/** Every 1m 30s, due in 20s. */
export const B = loop('loop_bbbb2222', 'Summarize new failures', 90, 20_000)
/** Every 1h, due in 5s (the soonest). */
export const C = loop('loop_cccc3333', 'Look at the open pull requests', 3_600, 5_000)
/** Every 1h 30m, due in 1m. */
export const D = loop('loop_dddd4444', 'Tidy the changelog', 5_400, 60_000)

/**
 * A settable projection behind a `useSyncExternalStore` reader, like the host's `useProjection`.
 * @param initial - the projection at first render (`undefined`: not yet served).
 * @returns the reader, the keys it was asked for, and a setter (wrapped in `act`).
 */
export function projectionSource(initial: LoopProjection | undefined) {
  let value = initial
  const listeners = new Set<() => void>()
  const keys: unknown[] = []
  const subscribe = (listener: () => void) => {
    listeners.add(listener)
    return () => listeners.delete(listener)
  }
  const useProjection = ((key: 'loop', selector?: (projection: LoopProjection | undefined) => unknown) => {
    keys.push(key)
    const current = useSyncExternalStore(subscribe, () => value)
    return selector === undefined ? current : selector(current)
  }) as LoopsViewProps['useProjection']
  return {
    keys,
    useProjection,
    set(next: LoopProjection | undefined) {
      act(() => {
        value = next
        for (const listener of listeners) listener()
      })
    },
  }
}

/**
 * What the plugin writes, its own reader accepts: every change the
 * runtime can append (a create from accepted input, a dispatch or a clock
 * correction from `decideDrive`, a delete) decodes and folds, for any stored
 * loop and any instant; and a loop with no representable next occurrence leaves
 * its session usable in a real host.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { decideDrive } from '../src/drive.ts'
import { createChange, decodeLoopChange, deleteChange, dispatchChange, foldLoopEvents } from '../src/fold.ts'
import { LATEST_DATE_MS } from '../src/shared/timing.ts'
import type { LoopRecord } from '../src/types.ts'
import { validateCreateInput } from '../src/validation.ts'
import {
  createFakeAgent,
  outcomeOf,
  persistedLoopChanges,
  resumeFakeAgent,
  settle,
  useFakeHost,
} from './support/host.ts'
import { NOW } from './support/epoch.ts'

/** Any record the decoder accepts: every stored interval and instant, up to the largest safe integers. */
const storedRecord: fc.Arbitrary<LoopRecord> = fc.record({
  id: fc.constant('loop_0000002a'),
  prompt: fc.constant('check'),
  time_in_seconds: fc.oneof(fc.integer({ min: 1, max: 86_400 }), fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER })),
  next_at: fc.oneof(fc.integer({ min: 0, max: LATEST_DATE_MS }), fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER })),
})
/** Any instant a clock can read. */
const instant = fc.integer({ min: 0, max: LATEST_DATE_MS })

/** Fold a create of `loop` and then `change`: the reader's answer, corrupt or not. */
const readBack = (loop: LoopRecord, change: unknown) =>
  foldLoopEvents([createChange(loop), change].map((data) => ({ type: 'loop/change', data })))

describe('what the runtime writes', () => {
  it('a dispatch or a correction decideDrive asks for decodes and applies, for any stored loop and instant', () => {
    fc.assert(
      fc.property(storedRecord, instant, (loop, now) => {
        const decision = decideDrive([loop], now, false)
        if (decision.kind === 'wait') return
        const change = dispatchChange(loop.id, decision.nextAt)
        expect(decodeLoopChange(change)).toEqual(change)
        expect(readBack(loop, change)).toEqual({ loops: [{ ...loop, next_at: decision.nextAt }], lastIdNumber: 42 })
      }),
      { numRuns: 2000 },
    )
  })

  it('a create from accepted input, and its delete, decode and apply at any instant', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), instant, (seconds, now) => {
        let input
        try {
          input = validateCreateInput({ prompt: ' check ', time_in_seconds: seconds }, 4000, now)
        } catch {
          return
        }
        const loop = { id: 'loop_0000002a', ...input, next_at: now + input.time_in_seconds * 1000 }
        expect(decodeLoopChange(createChange(loop))).toEqual(createChange(loop))
        expect(readBack(loop, deleteChange(loop.id))).toEqual({ loops: [], lastIdNumber: 42 })
      }),
      { numRuns: 2000 },
    )
  })
})

describe('a loop with no representable next occurrence', () => {
  const rig = useFakeHost('ses-writer')

  it('fires, stops its schedule at the last date, and its session reopens and deletes it', async () => {
    // An interval of about 285,000 years, from a hand-edited log (a create of it is refused): next_at plus
    // one interval passes Number.MAX_SAFE_INTEGER, so an uncapped dispatch would store a next_at no reader accepts.
    const loop = { id: 'loop_0000002a', prompt: 'far', time_in_seconds: 9_007_199_254_740, next_at: NOW }
    expect(Number.isSafeInteger(loop.next_at + loop.time_in_seconds * 1000)).toBe(false)
    // Written by a host without the plugin, so no runtime acts on it before the reopen.
    await rig.reboot({ loop: false })
    const writer = await createFakeAgent(rig.host, 'ses-writer')
    writer.agent.session.append('loop/change', createChange(loop))
    expect(await rig.host.ctx.sessions.flush(writer.agent.session)).toBe(true)
    await rig.reboot({ root: rig.host.root })
    rig.fake = await resumeFakeAgent(rig.host, 'ses-writer')
    await settle()
    expect(rig.fake.send).toHaveBeenCalledTimes(1)
    expect(await persistedLoopChanges(rig.host, 'ses-writer')).toEqual([
      createChange(loop),
      dispatchChange(loop.id, LATEST_DATE_MS),
    ])
    await rig.reboot({ root: rig.host.root })
    rig.fake = await resumeFakeAgent(rig.host, 'ses-writer')
    const listed = await rig.tool('loop_list', {})
    expect(outcomeOf(listed)).toEqual([
      { ...loop, next_at: LATEST_DATE_MS, state: 'scheduled', delivery_mode: 'session-local' },
    ])
    const deleted = await rig.tool('loop_delete', { id: loop.id })
    expect(outcomeOf(deleted)).toEqual({ deleted: true, id: loop.id })
  })
})

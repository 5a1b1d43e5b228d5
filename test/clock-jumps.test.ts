/**
 * The clock jumps, with fake timers on a real host: a sleep noticed within a minute, missed intervals
 * fired once on the loop's grid, a clock set ahead and corrected, days forward and back (a refused
 * correction included). The durable log is read back and audited against the sends.
 */
import { describe, expect, it, vi } from 'vitest'
import type { LoopDispatchChange } from '../src/types.ts'
import { advance, loopChanges, persistedLoopChanges, sentTexts } from './support/host.ts'
import { NOW } from './support/epoch.ts'
import { failNextLoopAppend, observeAppends } from './support/faults.ts'
import { heartbeatText } from './support/heartbeat-xml.ts'
import { dispatchRecord, useScenario } from './support/scenario.ts'

const SESSION = 'ses-clock-jumps'
const scenario = useScenario(SESSION)
const { rig, durable, expectConsistent } = scenario

describe('the machine sleeps or the clock is corrected', () => {
  it('does not burst missed intervals: one heartbeat, next occurrence in the future', async () => {
    const id = await rig.create('tick', 1)
    vi.setSystemTime(NOW + 5000) // five intervals pass without the timer firing
    await advance(1000)
    expect(rig.fake.send).toHaveBeenCalledTimes(1)
    expect(loopChanges(rig.fake.agent).at(-1)).toEqual({ version: 1, operation: 'dispatch', id, next_at: NOW + 7000 })
  })

  it('fires an overdue loop within a minute when the wall clock jumps while the timer waits (sleep)', async () => {
    const id = await rig.create('hourly', 3600)
    await advance(1000)
    // The machine sleeps for two hours: the wall clock moves, the timer does not count it.
    vi.setSystemTime(Date.now() + 2 * 3_600_000)
    await advance(60_000, 1000) // within a minute of waking
    expect(sentTexts(rig.fake)).toEqual([heartbeatText(id, 'hourly')])
    expect(loopChanges(rig.fake.agent).at(-1)).toEqual({
      version: 1,
      operation: 'dispatch',
      id,
      next_at: NOW + 3 * 3_600_000,
    })
  })

  it('reschedules durably a loop whose next_at the clock left more than one interval ahead', async () => {
    vi.setSystemTime(NOW + 365 * 86_400_000) // the clock jumped a year ahead
    const id = await rig.create('every two seconds', 2)
    vi.setSystemTime(NOW) // and was corrected
    // The timer armed for two seconds wakes, finds next_at a year ahead and moves it to one interval from now.
    await advance(2000)
    expect(loopChanges(rig.fake.agent).at(-1)).toEqual({ version: 1, operation: 'dispatch', id, next_at: NOW + 4000 })
    expect(rig.fake.send).not.toHaveBeenCalled()
    await advance(2000)
    expect(sentTexts(rig.fake)).toEqual([heartbeatText(id, 'every two seconds')])
    expect(await persistedLoopChanges(rig.host, SESSION)).toEqual(loopChanges(rig.fake.agent))
  })
})

describe('the clock jumps', () => {
  it('forward by three days: each long loop fires once within a minute, then on its new grid, no burst', async () => {
    const hourly = await rig.create('every hour', 3600)
    const daily = await rig.create('every day', 86_400)
    await advance(5000, 1000)
    const jumpedTo = NOW + 3 * 86_400_000 + 5000
    vi.setSystemTime(jumpedTo)
    await advance(60_000, 1000)
    // Three missed days are one heartbeat per loop, noticed within one timer segment.
    expect(scenario.sent.map((heartbeat) => heartbeat.loopId).sort()).toEqual([hourly, daily].sort())
    expect(scenario.sent.every((heartbeat) => heartbeat.at <= jumpedTo + 60_000)).toBe(true)
    await advance(2 * 3_600_000, 60_000)
    expect(scenario.sent.filter((heartbeat) => heartbeat.loopId === hourly)).toHaveLength(3)
    expect(scenario.sent.filter((heartbeat) => heartbeat.loopId === daily)).toHaveLength(1)
    await expectConsistent()
  })

  it('forward by three days with a ten-second loop: one heartbeat for the missed span, then one per interval', async () => {
    const fast = await rig.create('every ten seconds', 10)
    await advance(5000, 1000)
    const jumpedTo = NOW + 3 * 86_400_000 + 5000
    vi.setSystemTime(jumpedTo)
    await advance(60_000, 1000)
    // Due at the old +10 s mark, sent once at jumpedTo + 5 s, then every ten seconds on the old grid.
    expect(scenario.sent.map((heartbeat) => heartbeat.at - jumpedTo)).toEqual([
      5000, 15_000, 25_000, 35_000, 45_000, 55_000,
    ])
    expect(scenario.sent.every((heartbeat) => heartbeat.loopId === fast)).toBe(true)
    await expectConsistent()
  })

  it('backwards by two days while the log refuses the correction: nothing is sent, the retry reschedules it once', async () => {
    const id = await rig.create('hourly', 3600)
    await advance(600_000, 60_000)
    const jumpedTo = NOW + 600_000 - 2 * 86_400_000
    vi.setSystemTime(jumpedTo)
    const refusal = failNextLoopAppend(rig.fake.agent.session)
    // The first attempt comes within a minute (the timer's longest wait) and is refused; the retry a second later.
    await advance(62_000, 1000)
    expect(refusal.mock.calls.filter(([type]) => type === 'loop/change')).toHaveLength(2)
    refusal.mockRestore()
    expect(scenario.sent).toEqual([])
    const log = await durable()
    expect(log).toHaveLength(2)
    const correction = log[1] as LoopDispatchChange
    expect(correction).toEqual(dispatchRecord(id, correction.next_at))
    // Rescheduled by the retry, about a second after the refused attempt: one interval from then.
    expect(correction.next_at - 3_600_000 - jumpedTo).toBeLessThanOrEqual(62_000)
    expect(correction.next_at - 3_600_000).toBeGreaterThan(jumpedTo)
  })

  it('backwards by two days: the loop is rescheduled durably within a minute, without a send, and fires at its new time, not early', async () => {
    const id = await rig.create('hourly', 3600)
    await advance(600_000, 60_000)
    const appendTimes: number[] = []
    observeAppends(rig.fake.agent.session, (type) => {
      if (type === 'loop/change') appendTimes.push(Date.now())
    })
    const jumpedTo = NOW + 600_000 - 2 * 86_400_000
    vi.setSystemTime(jumpedTo)
    await advance(60_000, 1000)
    expect(scenario.sent).toEqual([])
    const log = await durable()
    expect(log).toHaveLength(2)
    expect(appendTimes).toHaveLength(1)
    const rescheduledAt = appendTimes[0]!
    expect(rescheduledAt - jumpedTo).toBeLessThanOrEqual(60_000)
    expect(log[1]).toEqual(dispatchRecord(id, rescheduledAt + 3_600_000))
    await advance(rescheduledAt + 3_600_000 - 1 - Date.now(), 60_000)
    expect(scenario.sent).toEqual([])
    await advance(1)
    expect(scenario.sent.map((heartbeat) => heartbeat.at)).toEqual([rescheduledAt + 3_600_000])
    expect((await durable())[2]).toEqual(dispatchRecord(id, rescheduledAt + 7_200_000))
  })
})

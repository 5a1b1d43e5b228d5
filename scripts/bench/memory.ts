/**
 * Row 6: memory, after full GCs (node --expose-gc). Two real hosts, one with
 * the plugin and one without, get the same `loop/change` events appended to a
 * session, which each then reopens (see `reopen`); the plugin's share is the with-plugin heap growth minus the
 * host-only growth (the log itself). Active loops are appended as creates (1,000:
 * the most `maxLoopsPerSession` allows; every change makes the host validate the
 * whole view, so far larger counts only slow the row down quadratically);
 * cycles as create + delete of fresh ids, exactly what the tools append.
 * @module scripts/bench/memory
 */
import type { Session } from '@deepseek-ai/dsh-session'
import { bootHost, createAgent, resumeAgent, runTool, type FakeAgent, type Host } from './host.ts'
import { SYNTHETIC_INTERVAL_SECONDS, loopId, syntheticCreate } from './log.ts'
import { collectGarbage, median } from './stats.ts'

/** Row 6's result, bytes. */
export interface MemoryResult {
  readonly activeLoops: number
  /** Plugin heap per active loop (with-plugin growth minus host-only growth, per loop). */
  readonly perLoop: number
  /** Heap of one decoded loop record alone (same shape and prompt length), for comparison. */
  readonly recordBytes: number
  readonly cycles: number
  /** Plugin heap growth over all cycles (with-plugin growth minus host-only growth). */
  readonly cycleGrowth: number
  /** Host-only growth over the same cycles (the log). */
  readonly hostCycleGrowth: number
  /** Heap of a Set with one entry per cycle over id strings that already exist: the least that remembering used ids costs (ids are never reused, by contract). */
  readonly usedIdSetBytes: number
  readonly perLoopSamples: readonly number[]
}

function heap(): number {
  collectGarbage()
  return process.memoryUsage().heapUsed
}

/**
 * Flush a session the bench appended to past its runtime, then close and resume it, so the plugin's
 * runtime reads those events as it reads any stored log (it folds only what it appends itself), and
 * settle. Both sides do the same, so the resumed agent's own objects cancel out.
 */
async function reopen(host: Host, fake: FakeAgent, plugin: boolean): Promise<void> {
  const id = fake.agent.session.id
  await host.ctx.sessions.flush(fake.agent.session)
  await fake.dispose()
  await settle(host, await resumeAgent(host, id), plugin)
}

/** Make the plugin settle its view of the session: the runtime folds (a list call) and the projection is read. */
async function settle(host: Host, fake: FakeAgent, plugin: boolean): Promise<void> {
  await host.ctx.sessions.flush(fake.agent.session)
  if (plugin) await runTool(host, fake.agent, 'loop_list', {})
  host.ctx.sessionProjections.snapshot(fake.agent.session)
}

let nextId = 0

function appendCreates(session: Session, count: number, ids: string[]): void {
  for (let index = 0; index < count; index += 1) {
    const id = loopId(0x10000000 + nextId++)
    ids.push(id)
    session.append('loop/change', syntheticCreate(id, `Check whether CI is green, round ${index}`))
  }
}

async function appendCycles(host: Host, session: Session, count: number): Promise<void> {
  for (let index = 0; index < count; index += 1) {
    const id = loopId(0x20000000 + nextId++)
    session.append('loop/change', syntheticCreate(id, `Check whether CI is green, round ${index}`))
    session.append('loop/change', { version: 1, operation: 'delete', id })
    if (index % 10_000 === 9_999) await host.ctx.sessions.flush(session)
  }
}

/** Heap of `count` records shaped like decoded loop records. */
function recordHeap(count: number): number {
  const before = heap()
  const records: object[] = []
  for (let index = 0; index < count; index += 1) {
    records.push({
      id: loopId(0x30000000 + index),
      prompt: `Check whether CI is green, round ${index}`,
      time_in_seconds: SYNTHETIC_INTERVAL_SECONDS,
      next_at: Date.now(),
    })
  }
  const after = heap()
  if (records.length !== count) throw new Error('unreachable')
  return (after - before) / count
}

/** Heap of a Set over `count` id strings that already exist (the log holds them), i.e. the entries alone. */
function idSetHeap(count: number): number {
  const strings: string[] = []
  for (let index = 0; index < count; index += 1) strings.push(loopId(0x40000000 + index))
  const before = heap()
  const ids = new Set<string>(strings)
  const after = heap()
  if (ids.size !== strings.length) throw new Error('unreachable')
  return after - before
}

/**
 * Run row 6.
 * @param activeLoops - loops per active-loop trial.
 * @param cycles - create/delete cycles.
 * @param log - progress output.
 * @returns the measurements.
 */
export async function runMemory(
  activeLoops: number,
  cycles: number,
  log: (line: string) => void,
): Promise<MemoryResult> {
  const withHost = await bootHost()
  const withoutHost = await bootHost({ loop: false })
  const perLoopSamples: number[] = []
  for (let round = 0; round < 5; round += 1) {
    const withAgent = await createAgent(withHost, `memory-with-${round}`)
    const withoutAgent = await createAgent(withoutHost, `memory-without-${round}`)
    await settle(withHost, withAgent, true)
    await settle(withoutHost, withoutAgent, false)
    const ids: string[] = []
    const start = heap()
    appendCreates(withoutAgent.agent.session, activeLoops, ids)
    await reopen(withoutHost, withoutAgent, false)
    const middle = heap()
    appendCreates(withAgent.agent.session, activeLoops, ids)
    await reopen(withHost, withAgent, true)
    const end = heap()
    const perLoop = (end - middle - (middle - start)) / activeLoops
    perLoopSamples.push(perLoop)
    log(
      `  ${activeLoops} active loops: ${(perLoop / 1024).toFixed(2)} KB per loop in the plugin (host log ${((middle - start) / activeLoops / 1024).toFixed(2)} KB per event)`,
    )
  }
  const recordBytes = recordHeap(activeLoops)

  const withAgent = await createAgent(withHost, 'memory-cycles-with')
  const withoutAgent = await createAgent(withoutHost, 'memory-cycles-without')
  await runTool(withHost, withAgent.agent, 'loop_create', {
    prompt: 'One loop that stays',
    time_in_seconds: SYNTHETIC_INTERVAL_SECONDS,
  })
  await settle(withHost, withAgent, true)
  await settle(withoutHost, withoutAgent, false)
  const start = heap()
  await appendCycles(withoutHost, withoutAgent.agent.session, cycles)
  await reopen(withoutHost, withoutAgent, false)
  const middle = heap()
  await appendCycles(withHost, withAgent.agent.session, cycles)
  await reopen(withHost, withAgent, true)
  const end = heap()
  const hostCycleGrowth = middle - start
  const cycleGrowth = end - middle - hostCycleGrowth
  const usedIdSetBytes = idSetHeap(cycles)
  log(
    `  ${cycles} create/delete cycles: plugin +${(cycleGrowth / 1024 / 1024).toFixed(2)} MB (used-id Set floor ${(usedIdSetBytes / 1024 / 1024).toFixed(2)} MB), host log +${(hostCycleGrowth / 1024 / 1024).toFixed(2)} MB`,
  )
  await withHost.dispose()
  await withoutHost.dispose()
  return {
    activeLoops,
    perLoop: median(perLoopSamples),
    recordBytes,
    cycles,
    cycleGrowth,
    hostCycleGrowth,
    usedIdSetBytes,
    perLoopSamples,
  }
}

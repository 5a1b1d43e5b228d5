/**
 * Rows 1 and 4 for one side (the host with the plugin, or the host alone) in a
 * process of its own: a clean heap, its own JIT and GC state, nothing of the
 * other side's log in memory. The run pairs such processes, alternating which
 * side goes first, and judges the ratio of each pair.
 *
 * In order: a cold open of the largest copy of the grown log (row 4: the
 * process's first work, so its code is as cold as a freshly started DSH),
 * then timed append batches on it, then on each smaller copy, then on fresh
 * sessions grown to the smallest size (row 1).
 * @module scripts/bench/sides
 */
import { rmSync } from 'node:fs'
import type { Session } from '@deepseek-ai/dsh-session'
import { initLoopProjection, applyLoopProjection } from '../../src/projection.ts'
import { foldLoopLog } from './fold.ts'
import type { Snapshot } from './growth.ts'
import { bootHost, copyRoot, createAgent, resumeAgent, runTool, type FakeAgent, type Host } from './host.ts'
import { LogWriter, growTo } from './log.ts'
import { collectGarbage, cpuTimeSync, median, time, timeSync } from './stats.ts'

/** Events per timed append batch. */
export const APPEND_BATCH = 10_000

/** Timed append batches per size (after one untimed batch). */
const APPEND_ROUNDS = 7

/** Cycle numbers appended to a resumed log start here, past every id the grown log used. */
const RESUMED_FIRST_CYCLE = 0x08000000

/** Row 1 at one size for one side: CPU ms per 10k events. */
export interface SideAppend {
  readonly at: number
  /** Log length before the first and after the last timed batch (the smallest size uses a fresh session per batch). */
  readonly range: readonly [number, number]
  readonly perTenK: number
  readonly samples: readonly number[]
}

/** Row 4 for one side: one cold open. */
export interface SideOpen {
  readonly at: number
  readonly events: number
  /** Wall ms of the open. */
  readonly wall: number
  /** Process CPU ms (user + system, all threads) of the open. */
  readonly cpu: number
  /** Active loops the resumed runtime reported (with the plugin). */
  readonly loops: number
  /** With the plugin, timed after the open: the runtime's catch-up fold of the whole log, ms. */
  readonly runtimeFold: number
  /** ... and the projection's first build (`init` + `apply` per event), ms. */
  readonly projectionFold: number
}

/** One side process's result. */
export interface SideResult {
  readonly loop: boolean
  readonly open: SideOpen
  /** Ascending by size. */
  readonly append: readonly SideAppend[]
}

/** Options of one side process. */
export interface SideOptions {
  readonly loop: boolean
  /** Copies of the grown log, one per append size above the smallest. */
  readonly snapshots: readonly Snapshot[]
  /** The smallest append size (fresh sessions). */
  readonly firstAt: number
}

/** The number of loops in a `loop_list` result (an array, or `{ loops }`). */
function countLoops(value: unknown): number {
  return Array.isArray(value) ? value.length : (value as { loops: unknown[] }).loops.length
}

/**
 * One batch of appends after a full GC, as process CPU time (user + system, every thread, so GC
 * helpers count): the batch is synchronous, and CPU time is what other processes do not inflate.
 * The flush that follows is not part of the append.
 */
async function appendBatch(host: Host, writer: LogWriter, session: Session): Promise<number> {
  collectGarbage()
  const ms = cpuTimeSync(() => writer.appendEvents(APPEND_BATCH))
  await host.ctx.sessions.flush(session)
  return ms
}

/** With the plugin, prove its runtime is still healthy (a faulted runtime would skip its per-event work). */
async function assertHealthy(host: Host, fake: FakeAgent, loop: boolean): Promise<void> {
  if (loop) await runTool(host, fake.agent, 'loop_list', {})
}

/** Timed batches on a resumed copy of the grown log (the first one untimed). */
async function appendOnResumed(host: Host, fake: FakeAgent, at: number, loop: boolean): Promise<SideAppend> {
  const session = fake.agent.session
  const writer = new LogWriter(session, RESUMED_FIRST_CYCLE)
  await appendBatch(host, writer, session)
  const start = session.seq
  const samples: number[] = []
  for (let round = 0; round < APPEND_ROUNDS; round += 1) samples.push(await appendBatch(host, writer, session))
  await assertHealthy(host, fake, loop)
  return { at, range: [start, session.seq], perTenK: median(samples), samples }
}

/**
 * Run one side.
 * @param options - which side and which logs.
 * @param log - progress output.
 * @returns its open and its append batches.
 */
export async function runSide(options: SideOptions, log: (line: string) => void): Promise<SideResult> {
  const { loop, snapshots, firstAt } = options
  const name = loop ? 'with the plugin' : 'host alone'
  const descending = [...snapshots].sort((left, right) => right.at - left.at)
  const append: SideAppend[] = []
  let open: SideOpen | undefined
  for (const snapshot of descending) {
    const root = copyRoot(snapshot.root)
    collectGarbage()
    const host = await bootHost({ root, loop, loopConfig: { maxLoopsPerSession: 1_000 } })
    let fake: FakeAgent | undefined
    let loops = 0
    const cpuStart = process.cpuUsage()
    const wall = await time(async () => {
      fake = await resumeAgent(host, snapshot.sessionId)
      host.ctx.sessionProjections.snapshot(fake.agent.session)
      if (loop) loops = countLoops(await runTool(host, fake.agent, 'loop_list', {}))
    })
    const cpuUsed = process.cpuUsage(cpuStart)
    if (open === undefined) {
      const events = fake!.agent.session.events
      const runtimeFold = loop ? timeSync(() => foldLoopLog(events)) : 0
      const projectionFold = loop
        ? timeSync(() => {
            let state = initLoopProjection()
            for (const event of events) state = applyLoopProjection(state, event)
            return state
          })
        : 0
      open = { at: snapshot.at, events: snapshot.events, wall, cpu: (cpuUsed.user + cpuUsed.system) / 1000, loops, runtimeFold, projectionFold }
      log(`  ${name}: cold open of ${snapshot.events} events ${wall.toFixed(0)} ms (CPU ${open.cpu.toFixed(0)} ms)`)
    }
    const point = await appendOnResumed(host, fake!, snapshot.at, loop)
    append.unshift(point)
    log(`  ${name}: ${point.perTenK.toFixed(1)} ms CPU per 10k at ${snapshot.at}`)
    await host.dispose()
    rmSync(root, { recursive: true, force: true })
  }
  collectGarbage()
  const host = await bootHost({ loop, loopConfig: { maxLoopsPerSession: 1_000 } })
  const fresh = async (id: string) => {
    const fake = await createAgent(host, id)
    const writer = new LogWriter(fake.agent.session)
    writer.seedStandingLoops()
    await growTo(host, writer, fake.agent.session, firstAt)
    return { fake, writer }
  }
  const warm = await fresh('side-warm')
  await appendBatch(host, warm.writer, warm.fake.agent.session)
  const samples: number[] = []
  for (let round = 0; round < APPEND_ROUNDS; round += 1) {
    const { fake, writer } = await fresh(`side-${round}`)
    samples.push(await appendBatch(host, writer, fake.agent.session))
    await assertHealthy(host, fake, loop)
  }
  append.unshift({ at: firstAt, range: [firstAt, firstAt + APPEND_BATCH], perTenK: median(samples), samples })
  log(`  ${name}: ${append[0]!.perTenK.toFixed(1)} ms CPU per 10k at ${firstAt}`)
  await host.dispose()
  return { loop, open: open!, append }
}

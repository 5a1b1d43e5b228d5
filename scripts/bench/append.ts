/**
 * Row 1: what the plugin adds to every `Session.append`, with both sides in one
 * process and their appends interleaved, so both see the same machine.
 *
 * This VM's speed drifts by up to 2× between identical batches a second apart
 * (CPU time of the same 10k appends in one process ranged 243–536 ms), so
 * batches timed in separate processes, or one after the other, compare two
 * speeds of the machine rather than two hosts. Here a host with the plugin and
 * a host without it live in the same process; they take turns in chunks of
 * {@link CHUNK} events in ABBA order, each chunk after a minor GC (so each
 * chunk's own scavenges collect only its own garbage) and timed as process CPU
 * time. A block is {@link QUADS_PER_BLOCK} such ABBA quads; its ratio is the
 * median of its quads' ratios: now and then a quad takes a major GC of the
 * whole heap (hundreds of ms at 1M, where the process holds two copies of the
 * log), charged to whichever side happens to run, and the median sets that
 * quad aside for both sides alike.
 *
 * The writer appends past the plugin's runtime, as any bench writer does: what
 * the plugin adds to every append is its projection (it has no `session/event`
 * listener). A change the runtime appends itself also costs it one decode and
 * fold of that change, which row 4's fold times put below 1 µs.
 * @module scripts/bench/append
 */
import { rmSync } from 'node:fs'
import type { Session } from '@deepseek-ai/dsh-session'
import type { Snapshot } from './growth.ts'
import { bootHost, copyRoot, createAgent, resumeAgent, runTool, type FakeAgent, type Host } from './host.ts'
import { LogWriter, growTo } from './log.ts'
import { collectGarbage, median } from './stats.ts'

/** Events per timed chunk. */
export const CHUNK = 1_000

/** ABBA quads per block: each side appends 2 × this many chunks per block. */
export const QUADS_PER_BLOCK = 5

/** Cycle numbers appended to a resumed log start here, past every id the grown log used. */
const RESUMED_FIRST_CYCLE = 0x08000000

/** One ABBA quad: each side's CPU ms for its two chunks. */
export interface AppendQuad {
  readonly with: number
  readonly without: number
}

/** One block at one size: its quads in run order. */
export interface AppendBlock {
  readonly quads: readonly AppendQuad[]
}

/** CPU ms per 10k events of one side's two chunks in a quad. */
const QUAD_TO_PER_10K = 10_000 / (2 * CHUNK)

/** Row 1 at one size, in one process. */
export interface AppendPoint {
  readonly at: number
  /** The plugin side's log length before the first and after the last timed chunk (at the smallest size: each quad's fresh session). */
  readonly range: readonly [number, number]
  readonly blocks: readonly AppendBlock[]
}

/** Options of one append process. */
export interface AppendOptions {
  /** Copies of the grown log, one per size above the smallest. */
  readonly snapshots: readonly Snapshot[]
  /** The smallest size (fresh sessions). */
  readonly firstAt: number
  /** Timed blocks per size. */
  readonly blocks: number
}

/** One append process's result, ascending by size. */
export interface AppendResult {
  readonly points: readonly AppendPoint[]
}

/** A session a side appends to, with its writer. */
interface Target {
  readonly host: Host
  readonly fake: FakeAgent
  readonly writer: LogWriter
}

/** A minor GC, synchronously (V8's `gc` extension under --expose-gc). */
function minorGarbageCollection(): void {
  ;(globalThis as unknown as { gc: (options: object) => void }).gc({ type: 'minor', execution: 'sync' })
}

/** One timed chunk: CPU ms (user + system, every thread, so GC helpers count) of {@link CHUNK} appends. */
function timedChunk(target: Target): number {
  minorGarbageCollection()
  const start = process.cpuUsage()
  target.writer.appendEvents(CHUNK)
  const used = process.cpuUsage(start)
  return (used.user + used.system) / 1000
}

/** Both sides' sessions for one quad. */
interface Pair {
  readonly with: Target
  readonly without: Target
}

/**
 * One ABBA (or BAAB) quad; returns each side's CPU ms.
 * @param pair - the two sessions.
 * @param withFirst - whether the plugin's side opens the quad.
 */
async function quad(pair: Pair, withFirst: boolean): Promise<AppendQuad> {
  const order = withFirst
    ? [pair.with, pair.without, pair.without, pair.with]
    : [pair.without, pair.with, pair.with, pair.without]
  let withMs = 0
  let withoutMs = 0
  for (const target of order) {
    const ms = timedChunk(target)
    if (target === pair.with) withMs += ms
    else withoutMs += ms
  }
  // Untimed: the persistence buffers stay bounded, and the flush is the same I/O on both sides.
  await Promise.all([
    pair.with.host.ctx.sessions.flush(pair.with.fake.agent.session),
    pair.without.host.ctx.sessions.flush(pair.without.fake.agent.session),
  ])
  return { with: withMs, without: withoutMs }
}

/**
 * Run `blocks` timed blocks after one untimed one.
 * @param next - the pair for the next quad (a fresh one per quad at the smallest size, the same one above it).
 * @returns each block's quads.
 */
async function measureBlocks(blocks: number, next: () => Promise<Pair>): Promise<AppendBlock[]> {
  const out: AppendBlock[] = []
  for (let block = -1; block < blocks; block += 1) {
    collectGarbage()
    const quads: AppendQuad[] = []
    // Alternate which side opens each quad, and each block's first quad.
    for (let index = 0; index < QUADS_PER_BLOCK; index += 1)
      quads.push(await quad(await next(), (index + block) % 2 === 0))
    if (block >= 0) out.push({ quads })
  }
  return out
}

/** A block's ratio: the median of its quads' (with ÷ without). */
export function blockRatio(block: AppendBlock): number {
  return median(block.quads.map((entry) => entry.with / entry.without))
}

/** One side's typical CPU ms per 10k in a block: the median over its quads. */
export function blockPerTenK(block: AppendBlock, side: (entry: AppendQuad) => number): number {
  return median(block.quads.map(side)) * QUAD_TO_PER_10K
}

/** With the plugin, prove its runtime is still healthy (a faulted runtime would skip its per-event work). */
async function assertHealthy(target: Target): Promise<void> {
  await runTool(target.host, target.fake.agent, 'loop_list', {})
}

/** Boot both hosts; the plugin's side with room for the standing loops. */
async function bootPair(roots?: {
  readonly with: string
  readonly without: string
}): Promise<{ readonly with: Host; readonly without: Host }> {
  const withHost = await bootHost({
    ...(roots === undefined ? {} : { root: roots.with }),
    loop: true,
    loopConfig: { maxLoopsPerSession: 1_000 },
  })
  const withoutHost = await bootHost({ ...(roots === undefined ? {} : { root: roots.without }), loop: false })
  return { with: withHost, without: withoutHost }
}

/**
 * Make Node's async-context tracking as it is in any DSH process that has run a turn: DSH's agent
 * loop enters an AsyncLocalStorage for every turn, and from then on every promise the process
 * creates pays its hook (the host creates two per `session/event` listener per append). The
 * tracking is process-wide, so both sides pay it alike.
 */
async function enterTurnScope(target: Target): Promise<void> {
  await target.host.ctx.agents.withInitiator(target.fake.agent, async () => {})
}

/**
 * Run row 1 for every size in one process.
 * @param options - the logs and repeats.
 * @param log - progress output.
 * @returns each size's blocks.
 */
export async function runAppend(options: AppendOptions, log: (line: string) => void): Promise<AppendResult> {
  const points: AppendPoint[] = []
  {
    const hosts = await bootPair()
    let sessions = 0
    const fresh = async (host: Host): Promise<Target> => {
      const fake = await createAgent(host, `append-${(sessions += 1)}`)
      const writer = new LogWriter(fake.agent.session)
      writer.seedStandingLoops()
      await growTo(host, writer, fake.agent.session, options.firstAt)
      return { host, fake, writer }
    }
    await enterTurnScope(await fresh(hosts.without))
    let last: Pair | undefined
    const blocks = await measureBlocks(options.blocks, async () => {
      last = { with: await fresh(hosts.with), without: await fresh(hosts.without) }
      return last
    })
    await assertHealthy(last!.with)
    points.push({ at: options.firstAt, range: [options.firstAt, options.firstAt + 2 * CHUNK], blocks })
    log(`  append at ${options.firstAt}: ${describe(blocks)}`)
    await Promise.all([hosts.with.dispose(), hosts.without.dispose()])
  }
  for (const snapshot of [...options.snapshots].sort((left, right) => left.at - right.at)) {
    const roots = { with: copyRoot(snapshot.root), without: copyRoot(snapshot.root) }
    collectGarbage()
    const hosts = await bootPair(roots)
    const open = async (host: Host): Promise<Target> => {
      const fake = await resumeAgent(host, snapshot.sessionId)
      // The projection's first build and the runtime's catch-up happen here, not in a timed chunk.
      host.ctx.sessionProjections.snapshot(fake.agent.session)
      return { host, fake, writer: new LogWriter(fake.agent.session, RESUMED_FIRST_CYCLE) }
    }
    const pair = { with: await open(hosts.with), without: await open(hosts.without) }
    await assertHealthy(pair.with)
    await enterTurnScope(pair.without)
    const session: Session = pair.with.fake.agent.session
    const start = session.seq
    const blocks = await measureBlocks(options.blocks, async () => pair)
    await assertHealthy(pair.with)
    points.push({ at: snapshot.at, range: [start, session.seq], blocks })
    log(`  append at ${snapshot.at}: ${describe(blocks)}`)
    await Promise.all([hosts.with.dispose(), hosts.without.dispose()])
    rmSync(roots.with, { recursive: true, force: true })
    rmSync(roots.without, { recursive: true, force: true })
  }
  return { points }
}

/** `312.4 vs 251.0 ms per 10k (1.24×, 1.31×, …)` for the progress log. */
function describe(blocks: readonly AppendBlock[]): string {
  const typical = (side: (entry: AppendQuad) => number) => median(blocks.map((block) => blockPerTenK(block, side)))
  return `${typical((entry) => entry.with).toFixed(1)} vs ${typical((entry) => entry.without).toFixed(1)} ms CPU per 10k (${blocks.map((block) => `${blockRatio(block).toFixed(2)}×`).join(', ')})`
}

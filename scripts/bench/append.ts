/**
 * Row 1: what the plugin adds to every `Session.append`, both sides in one process with their appends interleaved.
 *
 * This VM's speed drifts by up to 2× between identical batches a second apart, so batches timed in separate processes,
 * or one after the other, compare two speeds of the machine. Here a host with the plugin and one without it take turns
 * in chunks of {@link CHUNK} events in ABBA order, each chunk after a minor GC (its scavenges then collect only its own
 * garbage), timed as process CPU time. A block's ratio is the median of its quads' ratios: now and then a quad takes a
 * major GC of the whole heap, charged to whichever side runs, and the median sets that quad aside for both alike.
 *
 * The writer appends past the plugin's runtime: what the plugin adds to an append is its projection (it has no
 * `session/event` listener).
 * @module scripts/bench/append
 */
import { rmSync } from 'node:fs'
import type { Snapshot } from './growth.ts'
import { bootHost, copyRoot, createAgent, resumeAgent, runTool, type FakeAgent, type Host } from './host.ts'
import { LogWriter, growTo } from './log.ts'
import { collectGarbage, cpuSince, median } from './stats.ts'

const CHUNK = 1_000
const QUADS_PER_BLOCK = 5
/** Cycle numbers appended to a resumed log start here, past every id the grown log used. */
const RESUMED_FIRST_CYCLE = 0x08000000

/** One ABBA quad: each side's CPU ms for its two chunks. */
export interface AppendQuad {
  readonly with: number
  readonly without: number
}

/** Row 1 at one size in one process: its blocks of quads. */
export interface AppendPoint {
  readonly at: number
  readonly blocks: readonly (readonly AppendQuad[])[]
}

export interface AppendOptions {
  /** The smallest size, appended to fresh sessions. */
  readonly firstAt: number
  /** The grown log at every larger size. */
  readonly snapshots: readonly Snapshot[]
  readonly blocks: number
}

/** A block's ratio: the median of its quads' with ÷ without. */
export const blockRatio = (quads: readonly AppendQuad[]): number =>
  median(quads.map((quad) => quad.with / quad.without))

/** One side's CPU ms per 10k events in a block: the median over its quads. */
export const blockPerTenK = (quads: readonly AppendQuad[], side: 'with' | 'without'): number =>
  (median(quads.map((quad) => quad[side])) * 10_000) / (2 * CHUNK)

interface Target {
  readonly host: Host
  readonly fake: FakeAgent
  readonly writer: LogWriter
}

interface Pair {
  readonly with: Target
  readonly without: Target
}

function timedChunk(target: Target): number {
  ;(globalThis as unknown as { gc: (options: object) => void }).gc({ type: 'minor', execution: 'sync' })
  const start = process.cpuUsage()
  target.writer.appendEvents(CHUNK)
  return cpuSince(start)
}

async function quad(pair: Pair, withFirst: boolean): Promise<AppendQuad> {
  const [a, b] = withFirst ? [pair.with, pair.without] : [pair.without, pair.with]
  const result = { with: 0, without: 0 }
  for (const target of [a, b, b, a]) result[target === pair.with ? 'with' : 'without'] += timedChunk(target)
  // Untimed: keeps the persistence buffers bounded, and is the same I/O on both sides.
  await Promise.all([pair.with, pair.without].map((side) => side.host.ctx.sessions.flush(side.fake.agent.session)))
  return result
}

/** `blocks` timed blocks after one untimed one; `next` gives each quad's pair. */
async function measureBlocks(blocks: number, next: () => Promise<Pair>): Promise<AppendQuad[][]> {
  const out: AppendQuad[][] = []
  for (let block = -1; block < blocks; block += 1) {
    collectGarbage()
    const quads: AppendQuad[] = []
    for (let index = 0; index < QUADS_PER_BLOCK; index += 1)
      quads.push(await quad(await next(), (index + block) % 2 === 0))
    if (block >= 0) out.push(quads)
  }
  return out
}

async function bootPair(roots?: Record<'with' | 'without', string>): Promise<Record<'with' | 'without', Host>> {
  return {
    with: await bootHost({ ...(roots && { root: roots.with }), loopConfig: { maxLoopsPerSession: 1_000 } }),
    without: await bootHost({ ...(roots && { root: roots.without }), loop: false }),
  }
}

/**
 * Both sides pay Node's async-context hooks as every DSH process does once its agent loop has run a turn (it enters an
 * AsyncLocalStorage per turn; from then on every promise pays the hook). The tracking is process-wide.
 */
const enterTurnScope = (target: Target) => target.host.ctx.agents.withInitiator(target.fake.agent, async () => {})

/** With the plugin, a tool call proves its runtime still healthy (a faulted one would skip its work). */
const assertHealthy = (target: Target) => runTool(target.host, target.fake.agent, 'loop_list', {})

function describe(at: number, blocks: readonly AppendQuad[][]): string {
  const perTenK = (side: 'with' | 'without') => median(blocks.map((quads) => blockPerTenK(quads, side))).toFixed(1)
  return `  append at ${at}: ${perTenK('with')} vs ${perTenK('without')} ms CPU per 10k (${blocks.map((quads) => blockRatio(quads).toFixed(2)).join(', ')})`
}

export async function runAppend(options: AppendOptions, log: (line: string) => void): Promise<AppendPoint[]> {
  const points: AppendPoint[] = []
  {
    // The smallest size: every quad on fresh sessions grown to it.
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
    points.push({ at: options.firstAt, blocks })
    log(describe(options.firstAt, blocks))
    await Promise.all([hosts.with.dispose(), hosts.without.dispose()])
  }
  for (const snapshot of options.snapshots) {
    // Larger sizes: the grown log, copied and opened on both sides (a long session is a resumed one).
    const roots = { with: copyRoot(snapshot.root), without: copyRoot(snapshot.root) }
    collectGarbage()
    const hosts = await bootPair(roots)
    const open = async (host: Host): Promise<Target> => {
      const fake = await resumeAgent(host, snapshot.sessionId)
      // The projection's first build happens here, not in a timed chunk.
      host.ctx.sessionProjections.snapshot(fake.agent.session)
      return { host, fake, writer: new LogWriter(fake.agent.session, RESUMED_FIRST_CYCLE) }
    }
    const pair = { with: await open(hosts.with), without: await open(hosts.without) }
    await assertHealthy(pair.with)
    await enterTurnScope(pair.without)
    const blocks = await measureBlocks(options.blocks, async () => pair)
    await assertHealthy(pair.with)
    points.push({ at: snapshot.at, blocks })
    log(describe(snapshot.at, blocks))
    await Promise.all([hosts.with.dispose(), hosts.without.dispose()])
    for (const root of Object.values(roots)) rmSync(root, { recursive: true, force: true })
  }
  return points
}

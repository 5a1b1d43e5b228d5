/**
 * Row 2 (drive cost flat in log length), and the grown logs rows 1 and 6 open. One host with the plugin grows one
 * session through `Session.append`, copies it to disk at each append size, and at the largest size times drives on it
 * against a small reference session in the same host and heap, in blocks alternating which session goes first: at 1M
 * the heap alone slows every call (tool runtime, flush barrier, GC) for both sessions alike, so the ratio isolates what
 * depends on the log's length.
 * @module scripts/bench/growth
 */
import type { Session } from '@deepseek-ai/dsh-session'
import {
  FLOOR_TOOL,
  bootHost,
  copyRoot,
  createAgent,
  registerFloorTool,
  resumeAgent,
  runTool,
  type FakeAgent,
  type Host,
} from './host.ts'
import { LogWriter, SYNTHETIC_INTERVAL_SECONDS, foldFromScratch, growTo } from './log.ts'
import { alternate, median, time, timeSync } from './stats.ts'

export const GROWTH_SIZES = {
  /** Row 1's sizes above the first (fresh sessions), copied for it; the largest is also row 6's and row 2's. */
  full: { snapshots: [100_000, 1_000_000], blocks: 7 },
  quick: { snapshots: [100_000], blocks: 3 },
} as const

const REFERENCE_EVENTS = 1_000
const TRIALS_PER_BLOCK = 101

/** A copy of the grown log on disk. */
export interface Snapshot {
  readonly at: number
  readonly root: string
  readonly sessionId: string
  /** The session's cwd (the growing host's root), which a real DSH resolves when it opens the session. */
  readonly cwd: string
}

/** One same-heap block: medians over its trials, ms. */
export interface DriveBlock {
  readonly largeDrive: number
  readonly largeShare: number
  readonly smallShare: number
  /** The plugin's from-scratch fold of the large log, once per block. */
  readonly fullFold: number
}

export interface GrowthResult {
  readonly at: number
  readonly events: number
  readonly referenceEvents: number
  readonly blocks: readonly DriveBlock[]
  readonly snapshots: readonly Snapshot[]
}

interface Side {
  readonly host: Host
  fake: FakeAgent
  session: Session
  writer: LogWriter
  /** The probe loop created by the last trial, deleted by the next. */
  probe: string | undefined
}

async function side(host: Host, id: string): Promise<Side> {
  const fake = await createAgent(host, id)
  const writer = new LogWriter(fake.agent.session)
  writer.seedStandingLoops()
  return { host, fake, session: fake.agent.session, writer, probe: undefined }
}

/**
 * Grow, then close and resume: the writer appends past the plugin's runtime (it folds only the changes it appends
 * itself), so the resumed runtime reads the whole log as after a restart, which is how DSH holds a long session.
 */
async function grow(target: Side, events: number): Promise<void> {
  await growTo(target.host, target.writer, target.session, events)
  await target.fake.dispose()
  target.fake = await resumeAgent(target.host, target.session.id)
  target.session = target.fake.agent.session
  target.writer = new LogWriter(target.session, target.writer.nextCycle)
  await runTool(target.host, target.fake.agent, 'loop_list', {})
}

/**
 * One trial: a `loop/change` through the real tools (a probe loop created, or the last one deleted), untimed and
 * flushed, then `loop_list` (which queues behind the drive that change requested) and the floor tool back to back,
 * order alternating. Returns the drive and the plugin's share (drive − floor), ms.
 */
async function trial(target: Side, index: number): Promise<{ drive: number; share: number }> {
  const { host, fake } = target
  if (target.probe === undefined) {
    const args = { prompt: 'drive probe', time_in_seconds: SYNTHETIC_INTERVAL_SECONDS }
    target.probe = ((await runTool(host, fake.agent, 'loop_create', args)) as { id: string }).id
  } else {
    await runTool(host, fake.agent, 'loop_delete', { id: target.probe })
    target.probe = undefined
  }
  const list = () => time(() => runTool(host, fake.agent, 'loop_list', {}))
  const floor = () => time(() => runTool(host, fake.agent, FLOOR_TOOL, {}))
  const [drive, floorMs] = await alternate(index % 2 === 1, list, floor)
  return { drive, share: drive - floorMs }
}

async function blockSide(target: Side): Promise<{ drive: number; share: number }> {
  const trials: { drive: number; share: number }[] = []
  for (let index = 0; index < TRIALS_PER_BLOCK; index += 1) trials.push(await trial(target, index))
  return { drive: median(trials.map((entry) => entry.drive)), share: median(trials.map((entry) => entry.share)) }
}

export async function runGrowth(
  sizes: { readonly snapshots: readonly number[]; readonly blocks: number },
  log: (line: string) => void,
): Promise<GrowthResult> {
  const host = await bootHost({ loopConfig: { maxLoopsPerSession: 1_000 } })
  registerFloorTool(host)
  // Untimed warm-up of every timed path on a scratch session, so the first block is not measured cold.
  const warm = await side(host, 'warm')
  await grow(warm, REFERENCE_EVENTS)
  await blockSide(warm)
  foldFromScratch(warm.session.events)
  const reference = await side(host, 'reference')
  await grow(reference, REFERENCE_EVENTS)
  const grown = await side(host, 'grown')
  const snapshots: Snapshot[] = []
  for (const at of sizes.snapshots) {
    const built = await time(() => grow(grown, at))
    log(`  log at ${grown.session.seq} events (${(built / 1000).toFixed(1)} s)`)
    // Flushed by growTo: the file holds exactly the grown log.
    snapshots.push({ at, root: copyRoot(host.root), sessionId: grown.session.id, cwd: host.root })
  }
  const blocks: DriveBlock[] = []
  for (let block = 0; block < sizes.blocks; block += 1) {
    const [large, small] = await alternate(
      block % 2 === 1,
      () => blockSide(grown),
      () => blockSide(reference),
    )
    const fullFold = timeSync(() => foldFromScratch(grown.session.events))
    blocks.push({ largeDrive: large.drive, largeShare: large.share, smallShare: small.share, fullFold })
    log(`  drive block ${block + 1}: plugin's share ${large.share.toFixed(3)} vs ${small.share.toFixed(3)} ms`)
  }
  const result = {
    at: sizes.snapshots.at(-1)!,
    events: grown.session.seq,
    referenceEvents: reference.session.seq,
    blocks,
    snapshots,
  }
  await host.dispose()
  return result
}

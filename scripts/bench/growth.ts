/**
 * Rows 2 and 3, which need a log of a given length: one real host with the
 * plugin, one live session grown through `Session.append` and flushed to JSONL.
 * At each checkpoint the worker measures what the rows ask for, then keeps
 * growing. At the largest size the targets are judged against a small
 * reference session in the same host, alternating which goes first, so both
 * sides carry the same heap and only the log length differs. The grown log is
 * also copied to disk at the append sizes for the side jobs (rows 1 and 4).
 * @module scripts/bench/growth
 */
import type { Session } from '@deepseek-ai/dsh-session'
import { foldLoopLog, foldScheduleLog, toScheduleLog } from './fold.ts'
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
import { LogWriter, SYNTHETIC_INTERVAL_SECONDS, growTo } from './log.ts'
import { median, spread, time, timeSync, type Spread } from './stats.ts'

/** Which log lengths each row measures at. */
export interface GrowthSizes {
  /** Row 1 (append) and, at its largest, row 4 (resume): the log is copied at every size above the first. */
  readonly append: readonly number[]
  readonly drive: readonly number[]
  readonly createDelete: readonly number[]
  /** Same-heap repeats at the largest drive and create + delete size. */
  readonly blocks: number
}

/** Full and quick sizes. */
export const GROWTH_SIZES: { readonly full: GrowthSizes; readonly quick: GrowthSizes } = {
  full: {
    append: [1_000, 100_000, 1_000_000],
    drive: [1_000, 10_000, 100_000, 1_000_000],
    createDelete: [1_000, 200_000],
    blocks: 7,
  },
  quick: { append: [1_000, 100_000], drive: [1_000, 10_000, 100_000], createDelete: [1_000, 20_000], blocks: 3 },
}

/** The sizes a full run's targets are defined at: a quick run that does not reach them does not judge them. */
export const FULL_SIZES = GROWTH_SIZES.full

/** Drive trials per checkpoint (context table). */
const DRIVE_ROUNDS = 21
/** Drive trials per session and block (the judged repeats). */
const BLOCK_DRIVE_TRIALS = 21
/** Create + delete trials per checkpoint (context table), and per session and block. */
const CREATE_DELETE_ROUNDS = 9
/** Length of the reference session the largest size is compared with (it grows a little as it is measured). */
export const REFERENCE_EVENTS = 1_000

/** Row 2 at one checkpoint, ms (medians of {@link DRIVE_ROUNDS} trials). */
export interface DrivePoint {
  readonly at: number
  /** The log length when measured. */
  readonly events: number
  /** loop_list through the tool runtime right after one appended (and flushed) loop event. */
  readonly drive: number
  /** The same call with nothing appended since the previous one. */
  readonly idleDrive: number
  /** The host floor: the bench's own tool through the same runtime and flush barrier, nothing else. */
  readonly floor: number
  /** The plugin's share: median of (drive − floor), each pair timed back to back. */
  readonly share: number
  /** The plugin's fold of the whole log from empty. */
  readonly fullFold: number
  /** `foldScheduleEvents` over the same log with schedule events. */
  readonly scheduleFold: number
}

/** One same-heap block at the largest drive size: medians over the block's trials, ms. */
export interface DriveBlock {
  readonly largeDrive: number
  readonly smallDrive: number
  readonly largeShare: number
  readonly smallShare: number
  readonly largeFloor: number
  readonly smallFloor: number
  readonly fullFold: number
  readonly scheduleFold: number
}

/** Row 2's judged repeats: the grown log against a {@link REFERENCE_EVENTS}-event session in the same host. */
export interface DriveRepeats {
  readonly at: number
  readonly events: number
  readonly referenceEvents: number
  readonly blocks: readonly DriveBlock[]
  /** Plugin's share at the large size ÷ at the reference size, per block. */
  readonly shareRatio: Spread
  /** Whole drive at the large size ÷ at the reference size, per block. */
  readonly driveRatio: Spread
  /** From-scratch fold ÷ drive at the large size, per block. */
  readonly belowFold: Spread
  /** `foldScheduleEvents` ÷ drive at the large size, per block. */
  readonly belowSchedule: Spread
}

/** Row 3 at one checkpoint, ms. */
export interface CreateDeletePoint {
  readonly at: number
  /** The log length when measured. */
  readonly events: number
  readonly createDelete: number
  readonly create: number
  readonly delete: number
}

/** Row 3's judged repeats: create + delete on the grown log ÷ on the reference session, per block. */
export interface CreateDeleteRepeats {
  readonly at: number
  readonly events: number
  readonly referenceEvents: number
  readonly ratio: Spread
  readonly large: readonly number[]
  readonly small: readonly number[]
}

/** A copy of the grown log at one size, left on disk for the side jobs. */
export interface Snapshot {
  readonly at: number
  readonly root: string
  readonly sessionId: string
  readonly events: number
}

/** Everything rows 2 and 3 produce, plus the logs rows 1 and 4 open. */
export interface GrowthResult {
  readonly drive: readonly DrivePoint[]
  readonly driveRepeats: DriveRepeats
  readonly createDelete: readonly CreateDeletePoint[]
  readonly createDeleteRepeats: CreateDeleteRepeats
  /** Seconds spent growing the log. */
  readonly buildSeconds: number
  readonly snapshots: readonly Snapshot[]
}

/** One session of the host and its writer (both replaced when the session is reopened). */
interface Side {
  readonly host: Host
  fake: FakeAgent
  session: Session
  writer: LogWriter
  buildMs: number
  /** The probe loop {@link appendProbe} created and deletes next, if any. */
  probe: string | undefined
}

async function side(host: Host, id: string): Promise<Side> {
  const fake = await createAgent(host, id)
  const writer = new LogWriter(fake.agent.session)
  writer.seedStandingLoops()
  return { host, fake, session: fake.agent.session, writer, buildMs: 0, probe: undefined }
}

/**
 * Grow a session, then reopen it: the writer appends past the plugin's runtime (which folds only the
 * changes it appends itself), so the session is closed and resumed and its runtime reads the grown
 * log as it reads any stored one. What is measured next is a long session as DSH holds it after a
 * restart: its whole history in the runtime's fold and the projection.
 */
async function grow(target: Side, events: number): Promise<void> {
  target.buildMs += await time(() => growTo(target.host, target.writer, target.session, events))
  const id = target.session.id
  await target.fake.dispose()
  target.fake = await resumeAgent(target.host, id)
  target.session = target.fake.agent.session
  target.writer = new LogWriter(target.session, target.writer.nextCycle)
  await runTool(target.host, target.fake.agent, 'loop_list', {})
}

/**
 * One `loop/change` through the real tools, untimed: a probe loop is created, then deleted on the
 * next call (what every create, delete and dispatch appends). Its flush is done when the tool
 * returns, so the drive's flush barrier finds no I/O to wait for and the time is the drive's own work.
 */
async function appendProbe(target: Side): Promise<void> {
  const { host, fake } = target
  if (target.probe === undefined) {
    target.probe = (
      (await runTool(host, fake.agent, 'loop_create', {
        prompt: 'drive probe',
        time_in_seconds: SYNTHETIC_INTERVAL_SECONDS,
      })) as { id: string }
    ).id
  } else {
    await runTool(host, fake.agent, 'loop_delete', { id: target.probe })
    target.probe = undefined
  }
}

/** One drive trial: a probe event, then `loop_list` and the floor call back to back (order alternating). */
async function driveTrial(target: Side, trial: number): Promise<{ drive: number; floor: number }> {
  const { host, fake } = target
  await appendProbe(target)
  const list = () => time(() => runTool(host, fake.agent, 'loop_list', {}))
  const floor = () => time(() => runTool(host, fake.agent, FLOOR_TOOL, {}))
  if (trial % 2 === 0) {
    const drive = await list()
    return { drive, floor: await floor() }
  }
  const floorMs = await floor()
  return { drive: await list(), floor: floorMs }
}

/** Row 2 at one checkpoint (the context table). */
async function measureDrive(at: number, target: Side): Promise<DrivePoint> {
  const { host, fake, session } = target
  const events = session.seq
  const drives: number[] = []
  const floors: number[] = []
  const shares: number[] = []
  const idles: number[] = []
  for (let trial = 0; trial < DRIVE_ROUNDS; trial += 1) {
    const { drive, floor } = await driveTrial(target, trial)
    drives.push(drive)
    floors.push(floor)
    shares.push(drive - floor)
    idles.push(await time(() => runTool(host, fake.agent, 'loop_list', {})))
  }
  const rounds = at >= 1_000_000 ? 3 : 7
  const fullSamples: number[] = []
  for (let round = 0; round < rounds; round += 1) fullSamples.push(timeSync(() => foldLoopLog(session.events)))
  const scheduleLog = toScheduleLog(session.events)
  const scheduleSamples: number[] = []
  for (let round = 0; round < rounds; round += 1) scheduleSamples.push(timeSync(() => foldScheduleLog(scheduleLog)))
  return {
    at,
    events,
    drive: median(drives),
    idleDrive: median(idles),
    floor: median(floors),
    share: median(shares),
    fullFold: median(fullSamples),
    scheduleFold: median(scheduleSamples),
  }
}

/** Medians of one session's drive trials in a block. */
async function driveBlockSide(target: Side): Promise<{ drive: number; share: number; floor: number }> {
  const drives: number[] = []
  const shares: number[] = []
  const floors: number[] = []
  for (let trial = 0; trial < BLOCK_DRIVE_TRIALS; trial += 1) {
    const { drive, floor } = await driveTrial(target, trial)
    drives.push(drive)
    floors.push(floor)
    shares.push(drive - floor)
  }
  return { drive: median(drives), share: median(shares), floor: median(floors) }
}

/** Row 2's judged repeats: blocks alternating which session goes first, one fold of each kind per block. */
async function measureDriveRepeats(large: Side, small: Side, blocks: number): Promise<DriveRepeats> {
  const results: DriveBlock[] = []
  const scheduleLog = toScheduleLog(large.session.events)
  for (let block = 0; block < blocks; block += 1) {
    let largeSide: Awaited<ReturnType<typeof driveBlockSide>>
    let smallSide: Awaited<ReturnType<typeof driveBlockSide>>
    if (block % 2 === 0) {
      largeSide = await driveBlockSide(large)
      smallSide = await driveBlockSide(small)
    } else {
      smallSide = await driveBlockSide(small)
      largeSide = await driveBlockSide(large)
    }
    results.push({
      largeDrive: largeSide.drive,
      smallDrive: smallSide.drive,
      largeShare: largeSide.share,
      smallShare: smallSide.share,
      largeFloor: largeSide.floor,
      smallFloor: smallSide.floor,
      fullFold: timeSync(() => foldLoopLog(large.session.events)),
      scheduleFold: timeSync(() => foldScheduleLog(scheduleLog)),
    })
  }
  return {
    at: 0,
    events: large.session.seq,
    referenceEvents: small.session.seq,
    blocks: results,
    shareRatio: spread(results.map((block) => block.largeShare / block.smallShare)),
    driveRatio: spread(results.map((block) => block.largeDrive / block.smallDrive)),
    belowFold: spread(results.map((block) => block.fullFold / block.largeDrive)),
    belowSchedule: spread(results.map((block) => block.scheduleFold / block.largeDrive)),
  }
}

/** Create then delete, each a real tool call that appends and flushes; ms each. */
async function createDeleteTrial(target: Side): Promise<{ create: number; remove: number }> {
  const { host, fake } = target
  let id = ''
  const create = await time(async () => {
    id = (
      (await runTool(host, fake.agent, 'loop_create', {
        prompt: 'Check whether CI is green',
        time_in_seconds: 3_600,
      })) as { id: string }
    ).id
  })
  const remove = await time(() => runTool(host, fake.agent, 'loop_delete', { id }))
  return { create, remove }
}

/** Row 3 at one checkpoint (the context table). */
async function measureCreateDelete(at: number, target: Side): Promise<CreateDeletePoint> {
  const events = target.session.seq
  const creates: number[] = []
  const deletes: number[] = []
  const samples: number[] = []
  for (let round = 0; round < CREATE_DELETE_ROUNDS; round += 1) {
    const { create, remove } = await createDeleteTrial(target)
    creates.push(create)
    deletes.push(remove)
    samples.push(create + remove)
  }
  return { at, events, createDelete: median(samples), create: median(creates), delete: median(deletes) }
}

/** Row 3's judged repeats against the reference session, alternating which goes first. */
async function measureCreateDeleteRepeats(large: Side, small: Side, blocks: number): Promise<CreateDeleteRepeats> {
  const largeMedians: number[] = []
  const smallMedians: number[] = []
  const blockMedian = async (target: Side) => {
    const samples: number[] = []
    for (let trial = 0; trial < CREATE_DELETE_ROUNDS; trial += 1) {
      const { create, remove } = await createDeleteTrial(target)
      samples.push(create + remove)
    }
    return median(samples)
  }
  for (let block = 0; block < blocks; block += 1) {
    if (block % 2 === 0) {
      largeMedians.push(await blockMedian(large))
      smallMedians.push(await blockMedian(small))
    } else {
      smallMedians.push(await blockMedian(small))
      largeMedians.push(await blockMedian(large))
    }
  }
  return {
    at: 0,
    events: large.session.seq,
    referenceEvents: small.session.seq,
    ratio: spread(largeMedians.map((value, index) => value / smallMedians[index]!)),
    large: largeMedians,
    small: smallMedians,
  }
}

/**
 * Run rows 2 and 3, and leave copies of the grown log for rows 1 and 4.
 * @param sizes - checkpoints.
 * @param log - progress output.
 * @returns the measurements.
 */
export async function runGrowth(sizes: GrowthSizes, log: (line: string) => void): Promise<GrowthResult> {
  const host = await bootHost({ loop: true, loopConfig: { maxLoopsPerSession: 1_000 } })
  registerFloorTool(host)
  const grown = await side(host, 'grown')
  // Warm the JIT on the paths every checkpoint times (tool calls, flushes, folds) on a scratch
  // session, so the first checkpoint is not measured cold; its numbers are discarded.
  const warm = await side(host, 'warm')
  await grow(warm, 1_000)
  await measureDrive(1_000, warm)
  await measureCreateDelete(1_000, warm)
  const reference = await side(host, 'reference')
  await grow(reference, REFERENCE_EVENTS)
  const checkpoints = [...new Set([...sizes.append, ...sizes.drive, ...sizes.createDelete])].sort(
    (left, right) => left - right,
  )
  const [largestDrive, largestCreateDelete] = [Math.max(...sizes.drive), Math.max(...sizes.createDelete)]
  const drive: DrivePoint[] = []
  const createDelete: CreateDeletePoint[] = []
  const snapshots: Snapshot[] = []
  let driveRepeats: DriveRepeats | undefined
  let createDeleteRepeats: CreateDeleteRepeats | undefined
  for (const at of checkpoints) {
    await grow(grown, at)
    log(`  log at ${grown.session.seq} events (built in ${(grown.buildMs / 1000).toFixed(1)} s)`)
    if (sizes.append.includes(at) && at > Math.min(...sizes.append)) {
      // Flushed by growTo: the file holds exactly the grown log.
      snapshots.push({ at, root: copyRoot(host.root), sessionId: grown.session.id, events: grown.session.seq })
    }
    if (sizes.drive.includes(at)) {
      const point = await measureDrive(at, grown)
      drive.push(point)
      log(
        `  drive ${point.drive.toFixed(3)} ms (floor ${point.floor.toFixed(3)}, plugin ${point.share.toFixed(3)}), idle ${point.idleDrive.toFixed(3)} ms, full fold ${point.fullFold.toFixed(3)} ms, foldScheduleEvents ${point.scheduleFold.toFixed(3)} ms`,
      )
    }
    if (sizes.createDelete.includes(at)) {
      const point = await measureCreateDelete(at, grown)
      createDelete.push(point)
      log(`  create+delete ${point.createDelete.toFixed(3)} ms`)
    }
    if (at === largestCreateDelete) {
      createDeleteRepeats = { ...(await measureCreateDeleteRepeats(grown, reference, sizes.blocks)), at }
      log(
        `  create+delete at ${at} ÷ at ${REFERENCE_EVENTS}, same heap: median ${createDeleteRepeats.ratio.median.toFixed(2)}× (${createDeleteRepeats.ratio.min.toFixed(2)}–${createDeleteRepeats.ratio.max.toFixed(2)})`,
      )
    }
    if (at === largestDrive) {
      driveRepeats = { ...(await measureDriveRepeats(grown, reference, sizes.blocks)), at }
      const { shareRatio, driveRatio } = driveRepeats
      log(
        `  drive at ${at} ÷ at ${REFERENCE_EVENTS}, same heap: plugin share ${shareRatio.median.toFixed(2)}× (${shareRatio.min.toFixed(2)}–${shareRatio.max.toFixed(2)}), whole drive ${driveRatio.median.toFixed(2)}×`,
      )
    }
  }
  await host.dispose()
  return {
    drive,
    driveRepeats: driveRepeats!,
    createDelete,
    createDeleteRepeats: createDeleteRepeats!,
    buildSeconds: grown.buildMs / 1000,
    snapshots,
  }
}

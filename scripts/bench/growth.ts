/**
 * Rows 1–3, which need logs of a given length: two real hosts, one with the
 * plugin and one without, each with one live session grown in lockstep
 * through `Session.append` and flushed to JSONL. At each checkpoint the
 * worker measures what the rows ask for, then keeps growing.
 * @module scripts/bench/growth
 */
import type { Session } from '@deepseek-ai/dsh-session'
import { foldLoopLog, foldScheduleLog, toScheduleLog } from './fold.ts'
import { bootHost, createAgent, runTool, type FakeAgent, type Host } from './host.ts'
import { LogWriter, growTo, loopId, syntheticCreate } from './log.ts'
import { collectGarbage, cpuTimeSync, median, time, timeSync } from './stats.ts'

/** Which log lengths each row measures at. */
export interface GrowthSizes {
  readonly append: readonly number[]
  readonly drive: readonly number[]
  readonly createDelete: readonly number[]
}

/**
 * Full and quick sizes. Timed append batches after a checkpoint grow the log by
 * {@link APPEND_ROUNDS} x {@link APPEND_BATCH} events, so the next checkpoint must lie beyond that.
 */
export const GROWTH_SIZES: { readonly full: GrowthSizes; readonly quick: GrowthSizes } = {
  full: { append: [1_000, 100_000, 1_000_000], drive: [1_000, 10_000, 100_000, 1_000_000], createDelete: [1_000, 200_000] },
  quick: { append: [1_000, 100_000], drive: [1_000, 10_000, 100_000], createDelete: [1_000, 20_000] },
}

/** Events per timed append batch. */
const APPEND_BATCH = 10_000
/** Timed append batches per checkpoint and host. */
const APPEND_ROUNDS = 9
/** Drive trials per checkpoint. */
const DRIVE_ROUNDS = 21
/** Create + delete trials per checkpoint. */
const CREATE_DELETE_ROUNDS = 15

/** Row 1 at one checkpoint: medians per 10k events, ms. */
export interface AppendPoint {
  readonly at: number
  /** Log length when the first and after the last timed batch. */
  readonly range: readonly [number, number]
  readonly withPlugin: number
  readonly withoutPlugin: number
  readonly withSamples: readonly number[]
  readonly withoutSamples: readonly number[]
  /**
   * With the plugin but no projection change-feed subscriber (so the registry never validates the
   * plugin's view): splits the plugin's share into its own work and the host's schema validation.
   * Measured at the smallest size only.
   */
  readonly withPluginNoFeed?: number
}

/** Row 2 at one checkpoint, ms. */
export interface DrivePoint {
  readonly at: number
  /** The log length when measured. */
  readonly events: number
  /** loop_list through the tool runtime right after one appended (and flushed) loop event. */
  readonly drive: number
  /** The same call with nothing appended since the previous one: the constant floor. */
  readonly idleDrive: number
  /** The plugin's fold of the whole log from empty. */
  readonly fullFold: number
  /** `foldScheduleEvents` over the same log with schedule events. */
  readonly scheduleFold: number
  readonly driveSamples: readonly number[]
}

/** Row 3 at one checkpoint, ms. */
export interface CreateDeletePoint {
  readonly at: number
  /** The log length when measured. */
  readonly events: number
  readonly createDelete: number
  readonly create: number
  readonly delete: number
  readonly samples: readonly number[]
}

/** Everything rows 1–3 produce, plus the session row 4 resumes. */
export interface GrowthResult {
  readonly append: readonly AppendPoint[]
  readonly drive: readonly DrivePoint[]
  readonly createDelete: readonly CreateDeletePoint[]
  /** Seconds spent growing the logs, per host. */
  readonly buildSeconds: { readonly withPlugin: number; readonly withoutPlugin: number }
  /** The with-plugin session left on disk for the cold-resume row. */
  readonly persisted: { readonly root: string; readonly sessionId: string; readonly events: number }
}

/** One host, its main session and its writer. */
interface Side {
  readonly host: Host
  readonly fake: FakeAgent
  readonly session: Session
  readonly writer: LogWriter
  buildMs: number
}

async function side(host: Host, id: string): Promise<Side> {
  const fake = await createAgent(host, id)
  const writer = new LogWriter(fake.agent.session)
  writer.seedStandingLoops()
  return { host, fake, session: fake.agent.session, writer, buildMs: 0 }
}

async function grow(target: Side, events: number): Promise<void> {
  target.buildMs += await time(() => growTo(target.host, target.writer, target.session, events))
}

/**
 * One batch of appends after a full GC, as process CPU time (user + system, every thread, so GC
 * helpers count): the batch is synchronous, and CPU time is what other processes on a shared
 * machine do not inflate. The flush that follows is not part of the append.
 */
async function appendBatch(target: Side): Promise<number> {
  collectGarbage()
  const ms = cpuTimeSync(() => target.writer.appendEvents(APPEND_BATCH))
  await target.host.ctx.sessions.flush(target.session)
  return ms
}

let sideSessions = 0

/** Row 1 at one checkpoint. The smallest checkpoint uses fresh sessions per round so every batch starts at that length. */
async function measureAppend(at: number, withSide: Side, withoutSide: Side, noFeedHost?: Host): Promise<AppendPoint> {
  const withSamples: number[] = []
  const withoutSamples: number[] = []
  const noFeedSamples: number[] = []
  const fresh = noFeedHost !== undefined
  const start = withSide.session.seq
  for (let round = 0; round < APPEND_ROUNDS; round += 1) {
    const sides: { target: Side; samples: number[] }[] = [
      { target: withSide, samples: withSamples },
      { target: withoutSide, samples: withoutSamples },
    ]
    if (fresh) {
      sideSessions += 1
      sides[0]!.target = await side(withSide.host, `append-with-${sideSessions}`)
      sides[1]!.target = await side(withoutSide.host, `append-without-${sideSessions}`)
      sides.push({ target: await side(noFeedHost, `append-no-feed-${sideSessions}`), samples: noFeedSamples })
      for (const { target } of sides) await grow(target, at)
    }
    // Rotate which host goes first so drift in machine load hits all alike.
    for (let turn = 0; turn < sides.length; turn += 1) {
      const { target, samples } = sides[(round + turn) % sides.length]!
      samples.push(await appendBatch(target))
    }
  }
  const scale = 10_000 / APPEND_BATCH
  return {
    at,
    range: fresh ? [at, at + APPEND_BATCH] : [start, withSide.session.seq],
    withPlugin: median(withSamples) * scale,
    withoutPlugin: median(withoutSamples) * scale,
    withSamples,
    withoutSamples,
    ...(fresh ? { withPluginNoFeed: median(noFeedSamples) * scale } : {}),
  }
}

let driveLoops = 0

/** Row 2 at one checkpoint. */
async function measureDrive(at: number, target: Side): Promise<DrivePoint> {
  const { host, fake, session } = target
  const events = session.seq
  const driveSamples: number[] = []
  const idleSamples: number[] = []
  let open: string | undefined
  for (let round = 0; round < DRIVE_ROUNDS; round += 1) {
    // One loop event, exactly what a create, delete or dispatch appends; flushed first so the
    // drive's flush barrier finds no I/O to wait for and the time is the drive's own work.
    if (open === undefined) {
      open = loopId(0xe0000000 + driveLoops++)
      session.append('loop/change', syntheticCreate(open, 'drive probe'))
    } else {
      session.append('loop/change', { version: 1, operation: 'delete', id: open })
      open = undefined
    }
    await host.ctx.sessions.flush(session)
    driveSamples.push(await time(() => runTool(host, fake.agent, 'loop_list', {})))
    idleSamples.push(await time(() => runTool(host, fake.agent, 'loop_list', {})))
  }
  if (open !== undefined) {
    session.append('loop/change', { version: 1, operation: 'delete', id: open })
    await host.ctx.sessions.flush(session)
  }
  const rounds = at >= 1_000_000 ? 5 : 9
  const fullSamples: number[] = []
  for (let round = 0; round < rounds; round += 1) fullSamples.push(timeSync(() => foldLoopLog(session.events)))
  const scheduleLog = toScheduleLog(session.events)
  const scheduleSamples: number[] = []
  for (let round = 0; round < rounds; round += 1) scheduleSamples.push(timeSync(() => foldScheduleLog(scheduleLog)))
  return {
    at,
    events,
    drive: median(driveSamples),
    idleDrive: median(idleSamples),
    fullFold: median(fullSamples),
    scheduleFold: median(scheduleSamples),
    driveSamples,
  }
}

/** Row 3 at one checkpoint: create then delete, each a real tool call that appends and flushes. */
async function measureCreateDelete(at: number, target: Side): Promise<CreateDeletePoint> {
  const { host, fake } = target
  const events = target.session.seq
  const creates: number[] = []
  const deletes: number[] = []
  const samples: number[] = []
  for (let round = 0; round < CREATE_DELETE_ROUNDS; round += 1) {
    let id = ''
    const create = await time(async () => {
      id = ((await runTool(host, fake.agent, 'loop_create', { prompt: 'Check whether CI is green', time_in_seconds: 3_600 })) as { id: string }).id
    })
    const remove = await time(() => runTool(host, fake.agent, 'loop_delete', { id }))
    creates.push(create)
    deletes.push(remove)
    samples.push(create + remove)
  }
  return { at, events, createDelete: median(samples), create: median(creates), delete: median(deletes), samples }
}

/**
 * Run rows 1–3.
 * @param sizes - checkpoints.
 * @param log - progress output.
 * @returns the measurements.
 */
export async function runGrowth(sizes: GrowthSizes, log: (line: string) => void): Promise<GrowthResult> {
  const withHost = await bootHost({ loop: true, loopConfig: { maxLoopsPerSession: 1_000 }, keepRoot: true })
  const withoutHost = await bootHost({ loop: false })
  const noFeedHost = await bootHost({ loop: true, loopConfig: { maxLoopsPerSession: 1_000 }, changeFeed: false })
  const withSide = await side(withHost, 'grown-with')
  const withoutSide = await side(withoutHost, 'grown-without')
  // Warm the JIT on the paths every checkpoint times (tool calls, flushes, folds), so the first
  // checkpoint is not measured cold; a scratch session of each host, then discarded numbers.
  const warmWith = await side(withHost, 'warm-with')
  const warmWithout = await side(withoutHost, 'warm-without')
  await grow(warmWith, 1_000)
  await grow(warmWithout, 1_000)
  await measureDrive(1_000, warmWith)
  await measureCreateDelete(1_000, warmWith)
  await appendBatch(warmWith)
  await appendBatch(warmWithout)
  const checkpoints = [...new Set([...sizes.append, ...sizes.drive, ...sizes.createDelete])].sort((left, right) => left - right)
  const append: AppendPoint[] = []
  const drive: DrivePoint[] = []
  const createDelete: CreateDeletePoint[] = []
  for (const at of checkpoints) {
    await grow(withSide, at)
    await grow(withoutSide, at)
    log(`  log at ${withSide.session.seq} events (built in ${(withSide.buildMs / 1000).toFixed(1)} s with the plugin, ${(withoutSide.buildMs / 1000).toFixed(1)} s without)`)
    if (sizes.drive.includes(at)) {
      const point = await measureDrive(at, withSide)
      drive.push(point)
      log(`  drive ${point.drive.toFixed(3)} ms, idle ${point.idleDrive.toFixed(3)} ms, full fold ${point.fullFold.toFixed(3)} ms, foldScheduleEvents ${point.scheduleFold.toFixed(3)} ms`)
    }
    if (sizes.createDelete.includes(at)) {
      const point = await measureCreateDelete(at, withSide)
      createDelete.push(point)
      log(`  create+delete ${point.createDelete.toFixed(3)} ms`)
    }
    if (sizes.append.includes(at)) {
      const point = await measureAppend(at, withSide, withoutSide, at === checkpoints[0] ? noFeedHost : undefined)
      append.push(point)
      log(`  append per 10k: ${point.withPlugin.toFixed(1)} ms with, ${point.withoutPlugin.toFixed(1)} ms without${point.withPluginNoFeed === undefined ? '' : `, ${point.withPluginNoFeed.toFixed(1)} ms with and no change feed`}`)
    }
  }
  await withHost.ctx.sessions.flush(withSide.session)
  const persisted = { root: withHost.root, sessionId: withSide.session.id, events: withSide.session.seq }
  const buildSeconds = { withPlugin: withSide.buildMs / 1000, withoutPlugin: withoutSide.buildMs / 1000 }
  await withHost.dispose()
  await withoutHost.dispose()
  await noFeedHost.dispose()
  return { append, drive, createDelete, buildSeconds, persisted }
}

/** Row 1's flatness for one host, measured in a process of its own. */
export interface FlatnessResult {
  readonly loop: boolean
  readonly first: { readonly at: number; readonly perTenK: number; readonly samples: readonly number[] }
  readonly last: { readonly at: number; readonly range: readonly [number, number]; readonly perTenK: number; readonly samples: readonly number[] }
}

/**
 * Row 1's flatness (the last 10k against the first 10k) for one host alone in its own process,
 * so only its own log is in the heap: in {@link runGrowth} both hosts' logs share one heap, which
 * is right for their ratio but makes V8's own cost grow with twice the events.
 * @param loop - with the plugin or without.
 * @param sizes - the first and last size.
 * @param log - progress output.
 * @returns CPU-time medians per 10k.
 */
export async function runFlatness(loop: boolean, sizes: readonly [number, number], log: (line: string) => void): Promise<FlatnessResult> {
  const host = await bootHost({ loop, loopConfig: { maxLoopsPerSession: 1_000 } })
  const [firstAt, lastAt] = sizes
  const warm = await side(host, 'flat-warm')
  await grow(warm, firstAt)
  await appendBatch(warm)
  const firstSamples: number[] = []
  for (let round = 0; round < APPEND_ROUNDS; round += 1) {
    const fresh = await side(host, `flat-first-${round}`)
    await grow(fresh, firstAt)
    firstSamples.push(await appendBatch(fresh))
  }
  const main = await side(host, 'flat-main')
  await grow(main, lastAt)
  const start = main.session.seq
  const lastSamples: number[] = []
  for (let round = 0; round < APPEND_ROUNDS; round += 1) lastSamples.push(await appendBatch(main))
  const result: FlatnessResult = {
    loop,
    first: { at: firstAt, perTenK: median(firstSamples), samples: firstSamples },
    last: { at: lastAt, range: [start, main.session.seq], perTenK: median(lastSamples), samples: lastSamples },
  }
  log(`  ${loop ? 'with' : 'without'} the plugin, own process: ${result.first.perTenK.toFixed(1)} ms per 10k at ${firstAt}, ${result.last.perTenK.toFixed(1)} ms at ${lastAt}`)
  await host.dispose()
  return result
}


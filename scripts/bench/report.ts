/**
 * Turns the workers' results into BENCHMARKS.md: the machine, the method, the
 * targets (each judged on the median of independent repeats, with its
 * spread), then one section per row. Every figure in the prose comes from the
 * results; nothing is written by hand.
 *
 * A new row is: its result type in {@link BenchResults}, its {@link Verdict}s
 * in {@link verdicts}, and its section in {@link SECTIONS}.
 * @module scripts/bench/report
 */
import type { DockResult } from './dock.ts'
import { FULL_SIZES, REFERENCE_EVENTS, type GrowthResult } from './growth.ts'
import type { LatenessResult, LatenessScenario } from './lateness.ts'
import type { MemoryResult } from './memory.ts'
import type { OverdueResult } from './overdue.ts'
import { CHUNK, QUADS_PER_BLOCK, blockPerTenK, blockRatio, type AppendBlock, type AppendResult } from './append.ts'
import type { SideResult } from './sides.ts'
import { median, spread, type Spread } from './stats.ts'

/** How long one job took, as main.ts ran it. */
export interface JobTiming {
  readonly name: string
  readonly label: string
  readonly seconds: number
}

/** Where and when the run happened. */
export interface RunContext {
  readonly date: string
  readonly cpu: string
  readonly cores: number
  readonly memoryGiB: number
  readonly node: string
  readonly platform: string
  readonly commit: string
  readonly commitSubject: string
  /** The last commit that changed src/: the plugin code measured. */
  readonly sourceCommit: string
  readonly dirty: boolean
  readonly quick: boolean
  readonly loadBefore: readonly number[]
  readonly loadAfter: readonly number[]
  readonly durationSeconds: number
  readonly command: string
  readonly jobs: readonly JobTiming[]
}

/** One pair of side processes (row 4). */
export interface SidePair {
  readonly with: SideResult
  readonly without: SideResult
}

/** Every run of one lateness scenario, in run order. */
export interface LatenessRuns {
  readonly scenario: LatenessScenario
  readonly runs: LatenessResult[]
}

/** Everything the report shows. */
export interface BenchResults {
  readonly growth: GrowthResult
  /** Row 1, one entry per process. */
  readonly append: readonly AppendResult[]
  /** Row 4. */
  readonly sides: readonly SidePair[]
  readonly lateness: readonly LatenessRuns[]
  /** Row 8: 20 overdue loops. */
  readonly overdue: OverdueResult
  /** Row 8's burst: 1,000 overdue loops. */
  readonly overdueBurst: OverdueResult
  readonly memory: MemoryResult
  readonly dock: DockResult
}

/**
 * A verdict: met, not met, not judged (a quick run that does not reach the size the target is defined
 * at), or context (a figure shown beside the targets that carries none).
 */
type Status = 'met' | 'not met' | 'not judged' | 'context'

/** One checked target. */
interface Verdict {
  readonly row: string
  readonly target: string
  /** The median over the repeats (or the one measurement), as shown. */
  readonly measured: string
  /** The spread over the repeats, e.g. `1.21–1.27× (3 pairs)`. */
  readonly spread: string
  readonly status: Status
}

const ms = (value: number, digits = 3) => `${value.toFixed(digits)} ms`
const ratio = (value: number) => `${value.toFixed(2)}×`
const count = (value: number) =>
  value >= 1_000_000 ? `${value / 1_000_000}M` : value >= 1_000 ? `${value / 1_000}k` : String(value)
const signed = (value: number, digits = 2) => `${value >= 0 ? '+' : '−'}${Math.abs(value).toFixed(digits)} ms`
const exact = (value: number) => value.toLocaleString('en-US')
const signedPercent = (value: number) => `${value >= 0 ? '+' : '−'}${Math.abs(value * 100).toFixed(1)}%`
const percent = (value: number) => `${(value * 100).toFixed(1)}%`
const kib = (bytes: number) => `${(bytes / 1024).toFixed(2)} KiB`
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(2)} MiB`
const mark = (status: Status) =>
  status === 'not judged' ? 'not judged' : status === 'context' ? 'context (no target)' : `**${status}**`
/** `min–max (n unit)` of a spread, each end formatted. */
const range = (value: Spread, format: (value: number) => string, noun: string) =>
  `${format(value.min)} – ${format(value.max)} (${plural(value.samples.length, noun)})`
/** `1 pair`, `3 pairs`. */
const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : noun.endsWith('s') ? 'es' : 's'}`

/** Whether this run reached the size a target is defined at. */
const reached = (sizes: readonly number[], size: number) => sizes.includes(size)

function largest<T extends { at: number }>(points: readonly T[]): T {
  return points.reduce((left, right) => (right.at > left.at ? right : left))
}

function smallest<T extends { at: number }>(points: readonly T[]): T {
  return points.reduce((left, right) => (right.at < left.at ? right : left))
}

/** The append sizes the run measured (the same in every append process). */
const appendSizes = (results: BenchResults) => results.append[0]!.points.map((point) => point.at)

/** One append process's blocks at a size. */
const blocksAt = (run: AppendResult, at: number): readonly AppendBlock[] =>
  run.points.find((point) => point.at === at)!.blocks

/** Every block at a size, over all append processes: the repeats row 1 is judged on. */
const appendBlocks = (results: BenchResults, at: number): readonly AppendBlock[] =>
  results.append.flatMap((run) => blocksAt(run, at))

/** Per block: the plugin's ratio at a size. */
const appendRatios = (results: BenchResults, at: number) => appendBlocks(results, at).map(blockRatio)

/** One side's typical 10k in a block. */
const withSide = (block: AppendBlock) => blockPerTenK(block, (entry) => entry.with)
const hostSide = (block: AppendBlock) => blockPerTenK(block, (entry) => entry.without)

/** Per block: the plugin's share of one size's 10k (with − alone), ms. */
const appendShares = (results: BenchResults, at: number) =>
  appendBlocks(results, at).map((block) => withSide(block) - hostSide(block))

/** Per process: one side's 10k at `last` ÷ at `first` (medians over the process's blocks). */
const appendFlatness = (results: BenchResults, side: (block: AppendBlock) => number, first: number, last: number) =>
  results.append.map((run) => median(blocksAt(run, last).map(side)) / median(blocksAt(run, first).map(side)))

/** The runs of one scenario, by its shape. */
function scenarioRuns(results: BenchResults, sessions: number, loopsPerSession: number): readonly LatenessResult[] {
  return (
    results.lateness.find(
      ({ scenario }) => scenario.sessions === sessions && scenario.loopsPerSession === loopsPerSession,
    )?.runs ?? []
  )
}

const judged = (condition: boolean, met: boolean): Status => (condition ? (met ? 'met' : 'not met') : 'not judged')

/** Every target, checked on medians of repeats. */
function verdicts(results: BenchResults): Verdict[] {
  const { growth, sides, memory, dock, overdue } = results
  const out: Verdict[] = []
  const pairs = 'pair'
  const sizes = appendSizes(results)
  const [firstAppend, lastAppend] = [FULL_SIZES.append[0]!, FULL_SIZES.append.at(-1)!]

  for (const at of FULL_SIZES.append) {
    const ratios = reached(sizes, at) ? spread(appendRatios(results, at)) : undefined
    out.push({
      row: '1',
      target: `append with the plugin ≤ 1.3× the host alone, at ${count(at)} (one process, appends interleaved)`,
      measured: ratios === undefined ? `${count(at)} not reached` : ratio(ratios.median),
      spread: ratios === undefined ? '' : range(ratios, ratio, 'block'),
      status: judged(ratios !== undefined, (ratios?.median ?? Infinity) <= 1.3),
    })
  }
  {
    const flat = reached(sizes, lastAppend)
      ? spread(appendFlatness(results, withSide, firstAppend, lastAppend))
      : undefined
    const hostFlat = flat === undefined ? undefined : median(appendFlatness(results, hostSide, firstAppend, lastAppend))
    out.push({
      row: '1',
      target: `append flat: the plugin’s 10k at ${count(lastAppend)} ≤ 1.5× at ${count(firstAppend)} (same process)`,
      measured:
        flat === undefined
          ? `${count(lastAppend)} not reached`
          : `${ratio(flat.median)} (host alone ${ratio(hostFlat!)})`,
      spread: flat === undefined ? '' : range(flat, ratio, 'process'),
      status: judged(flat !== undefined, (flat?.median ?? Infinity) <= 1.5),
    })
  }

  const largestDrive = growth.driveRepeats.at
  const driveJudged = largestDrive === FULL_SIZES.drive.at(-1)
  const { shareRatio, driveRatio, belowFold, belowSchedule } = growth.driveRepeats
  const blocks = 'block'
  out.push({
    row: '2',
    target: `the plugin’s share of a drive at ${count(FULL_SIZES.drive.at(-1)!)} ≤ 2× its share at ${count(REFERENCE_EVENTS)} (same heap)`,
    measured: `${ratio(shareRatio.median)} (whole drive ${ratio(driveRatio.median)}${driveJudged ? '' : `, at ${count(largestDrive)}`})`,
    spread: range(shareRatio, ratio, blocks),
    status: judged(driveJudged, shareRatio.median <= 2),
  })
  out.push({
    row: '2',
    target: `drive at ${count(FULL_SIZES.drive.at(-1)!)} ≥ 100× below the from-scratch fold`,
    measured: `${belowFold.median.toFixed(0)}× below${driveJudged ? '' : ` at ${count(largestDrive)}`}`,
    spread: range(belowFold, (value) => `${value.toFixed(0)}×`, blocks),
    status: judged(driveJudged, belowFold.median >= 100),
  })
  out.push({
    row: '2',
    target: `drive at ${count(FULL_SIZES.drive.at(-1)!)} ≥ 100× below foldScheduleEvents`,
    measured: `${belowSchedule.median.toFixed(0)}× below${driveJudged ? '' : ` at ${count(largestDrive)}`}`,
    spread: range(belowSchedule, (value) => `${value.toFixed(0)}×`, blocks),
    status: judged(driveJudged, belowSchedule.median >= 100),
  })

  const cd = growth.createDeleteRepeats
  out.push({
    row: '3',
    target: `create + delete at ${count(FULL_SIZES.createDelete.at(-1)!)} ≤ 2× at ${count(REFERENCE_EVENTS)} (same heap)`,
    measured: `${ratio(cd.ratio.median)}${cd.at === FULL_SIZES.createDelete.at(-1) ? '' : ` at ${count(cd.at)}`}`,
    spread: range(cd.ratio, ratio, 'block'),
    status: judged(cd.at === FULL_SIZES.createDelete.at(-1), cd.ratio.median <= 2),
  })

  {
    const open = sides[0]!.with.open
    const cpu = spread(sides.map((pair) => pair.with.open.cpu / pair.without.open.cpu - 1))
    const wall = median(sides.map((pair) => pair.with.open.wall / pair.without.open.wall - 1))
    out.push({
      row: '4',
      target: `cold resume of the ${count(lastAppend)}-event log: plugin adds < 10% (CPU time, fresh process per open)`,
      measured: `${signedPercent(cpu.median)} (wall ${signedPercent(wall)}${open.at === lastAppend ? '' : `, ${exact(open.events)} events`})`,
      spread: range(cpu, signedPercent, pairs),
      status: judged(open.at === lastAppend, cpu.median < 0.1),
    })
  }

  const excessTarget = (sessions: number, loopsPerSession: number) => {
    const runs = scenarioRuns(results, sessions, loopsPerSession)
    if (runs.length === 0) return
    const excess = spread(runs.map((run) => run.loop.p99 - run.bare.p99))
    out.push({
      row: '5',
      target: `lateness p99 ≤ bare setTimeout p99 + 5 ms (${runs[0]!.scenario.label})`,
      measured: signed(excess.median),
      spread: range(excess, (value) => signed(value), 'run'),
      status: judged(true, excess.median <= 5),
    })
  }
  excessTarget(1, 100)
  excessTarget(100, 10)
  const thousand = scenarioRuns(results, 1, 1_000)
  const hundredByTen = scenarioRuns(results, 100, 10)
  if (thousand.length > 0) {
    const rate = spread(thousand.map((run) => run.dispatches / run.offered))
    out.push({
      row: '5',
      target: '1,000 loops, 1 session: dispatches ≥ 99% of the instants offered',
      measured: `${percent(rate.median)} (${median(thousand.map((run) => run.dispatchesPerSecond)).toFixed(1)} of ${thousand[0]!.offeredPerSecond}/s)`,
      spread: range(rate, percent, 'run'),
      status: judged(true, rate.median >= 0.99),
    })
    if (hundredByTen.length > 0) {
      // Round i of one against round i of the other: the same stretch of the machine's life.
      const rounds = Math.min(thousand.length, hundredByTen.length)
      const vs = spread(
        Array.from({ length: rounds }, (_, index) => thousand[index]!.loop.p99 / hundredByTen[index]!.loop.p99),
      )
      out.push({
        row: '5',
        target: '1,000 loops, 1 session: lateness p99 ≤ 2× the p99 of 100 sessions x 10 loops',
        measured: `${ratio(vs.median)} (${ms(median(thousand.map((run) => run.loop.p99)), 2)} against ${ms(median(hundredByTen.map((run) => run.loop.p99)), 2)})`,
        spread: range(vs, ratio, 'round'),
        status: judged(true, vs.median <= 2),
      })
    }
    // Evenly paced loops: how much a drive batches follows the disk (Method), so these carry no target; row 8's bursts do.
    const writes = spread(thousand.map((run) => run.diskWritesPerDispatch))
    out.push({
      row: '5',
      target: '1,000 loops, 1 session, paced 5 ms apart: fsync’d JSONL writes per dispatch',
      measured: `${writes.median.toFixed(2)} (flush p50 ${ms(median(thousand.map((run) => run.flush.p50)), 2)})`,
      spread: range(writes, (value) => value.toFixed(2), 'run'),
      status: 'context',
    })
    const calls = spread(thousand.map((run) => run.flushesPerDispatch))
    out.push({
      row: '5',
      target: '1,000 loops, 1 session, paced 5 ms apart: `ctx.sessions.flush` calls per dispatch',
      measured: calls.median.toFixed(2),
      spread: range(calls, (value) => value.toFixed(2), 'run'),
      status: 'context',
    })
  }

  {
    const perLoop = spread(memory.perLoopSamples.map((value) => value - memory.recordBytes))
    out.push({
      row: '6',
      target: 'heap per active loop beyond its record < 2 KiB',
      measured: kib(perLoop.median),
      spread: range(perLoop, kib, 'trial'),
      status: judged(true, perLoop.median < 2048),
    })
    const beyondIds = memory.cycleGrowth - memory.usedIdSetBytes
    const cyclesJudged = memory.cycles >= 100_000
    out.push({
      row: '6',
      target: 'no growth after 100k create/delete cycles beyond the used-id set + 1 MiB noise',
      measured: `${mib(memory.cycleGrowth)} (id set ${mib(memory.usedIdSetBytes)})${cyclesJudged ? '' : ` after ${count(memory.cycles)}`}`,
      spread: 'one measurement (heap after full GCs)',
      status: judged(cyclesJudged, beyondIds <= 1024 * 1024),
    })
  }

  {
    const worst = dock.points
      .filter((point) => point.loops === 100)
      .reduce((left, right) => (right.repaint > left.repaint ? right : left))
    out.push({
      row: '7',
      target: 'countdown repaint with 100 loops < 2 ms (worst layout)',
      measured: `${ms(worst.repaint)} (${worst.label})`,
      spread: range(spread(worst.repaintSamples), (value) => ms(value), 'mount'),
      status: judged(true, worst.repaint < 2),
    })
    const left = dock.leftAfterUnmount
    out.push({
      row: '7',
      target: 'nothing left running after unmount',
      measured: `${left.intervals} intervals, ${left.timeouts} timeouts, ${left.frames} frames, ${left.documentListeners} document listeners`,
      spread: 'exact count',
      status: judged(true, left.intervals + left.timeouts + left.frames + left.documentListeners === 0),
    })
  }

  out.push({
    row: '8',
    target: `${overdue.loops} overdue loops at start: all sent in ≤ 0.25× the time of one flush per loop`,
    measured: `${ratio(overdue.ratio.median)} (${ms(overdue.runtimeMedian, 1)} against ${ms(overdue.perLoopMedian, 1)})`,
    spread: range(overdue.ratio, ratio, 'pair'),
    status: judged(true, overdue.ratio.median <= 0.25),
  })
  for (const burst of [overdue, results.overdueBurst]) {
    const writes = burst.writesPerDispatch
    out.push({
      row: '8',
      target: `${exact(burst.loops)} overdue loops at start: fsync’d JSONL writes per dispatch < 0.1 (beyond the host’s own)`,
      measured: `${writes.median.toFixed(3)} (one flush per loop ${((median(burst.perLoop.map((trial) => trial.durableWrites)) - burst.hostWrites) / burst.loops).toFixed(2)})`,
      spread: range(writes, (value) => value.toFixed(3), 'trial'),
      status: judged(true, writes.median < 0.1),
    })
  }
  {
    const burst = results.overdueBurst
    out.push({
      row: '8',
      target: `${exact(burst.loops)} overdue loops at start: time until all are sent against one flush per loop`,
      measured: `${ratio(burst.ratio.median)} (${ms(burst.runtimeMedian, 0)} against ${ms(burst.perLoopMedian, 0)})`,
      spread: range(burst.ratio, ratio, 'pair'),
      status: 'context',
    })
  }

  return out
}

/** The method: what is repeated, what is isolated, and why. */
function methodLines(context: RunContext, results: BenchResults): string[] {
  const pairs = results.sides.length
  const latenessRuns = Math.max(...results.lateness.map((entry) => entry.runs.length))
  return [
    '## Method',
    '',
    'A target is judged on the **median of independent repeats** and its spread (min – max over the repeats) is stated beside it;',
    'a verdict that the spread straddles is a verdict on noise, and the table shows it. What each repeat is, and what it isolates:',
    '',
    `- **Append (row 1)**: ${plural(results.append.length, 'process')}, each holding a host with the plugin and one without it and interleaving their`,
    '  appends in short chunks (section 1). This VM’s speed drifts by up to 2× between identical batches a second apart, so',
    '  batches timed in separate processes, or one after the other, compare two speeds of the machine; interleaved, both sides',
    '  see the same one. Both sides pay Node’s async-context hooks, as every DSH process does once its agent loop has run a turn.',
    `  The target is judged on the median over all blocks (${appendBlocks(results, appendSizes(results)[0]!).length} per size).`,
    `- **Cold resume (row 4)**: ${plural(pairs, 'pair')} of processes, one with the plugin and one with the host alone, that open at the same`,
    '  moment (each prepares its copy of the log and its host, then both are released together): one process after another',
    '  met a machine up to 2× faster or slower (the pairs’ ratios spread from −11.7% to +56.4% in two runs of sequential pairs). Each process’s first',
    '  work is the cold open, so the code is as cold as in a freshly started DSH. The two share the 2 cores while both run; the',
    '  one with the plugin runs a little longer and finishes alone, which if anything favours it. A ratio is taken within a pair',
    '  and the target is judged on the median over pairs.',
    `- **Drive and create + delete (rows 2, 3)**: the grown log against a ${count(REFERENCE_EVENTS)}-event reference session in the **same host and heap**,`,
    `  in ${results.growth.driveRepeats.blocks.length} blocks alternating which session goes first. At 1M the heap itself makes every call slower (the host’s tool`,
    '  runtime, its flush barrier, the garbage collector all see a larger heap): that is the host’s cost and the same for both',
    '  sessions here, so the ratio isolates what depends on the log’s length. For the drive the target is set on the **plugin’s',
    '  share**: each `loop_list` is timed back to back with a bench tool that goes through the same tool runtime and flush barrier',
    '  and does nothing else (the host floor), and the share is the difference. The whole drive is reported beside it, and the',
    '  growth of the floor itself with the heap is in the context table.',
    `- **Lateness (row 5)**: ${plural(latenessRuns, 'run')} of each targeted scenario, each in a fresh process, the scenarios’ order rotating per round.`,
    '  A p99 depends on the few worst moments of a window (a slow fsync, a GC pause), so one window is one sample of it. The two',
    '  1,000-loop scenarios measure a 10 s window in a full run (2,000 instants each) to keep the whole run within about 10 minutes.',
    `- **Overdue at start (row 8)**: pairs of trials on fresh copies of one log, alternating which side goes first, after one`,
    `  untimed pair: ${plural(results.overdue.runtime.length, 'pair')} for ${results.overdue.loops} loops, ${plural(results.overdueBurst.runtime.length, 'pair')} for the ${exact(results.overdueBurst.loops)}-loop burst.`,
    '- Noise that is not removed is kept out of the ratios: CPU time instead of wall time where the work is synchronous, full GCs',
    '  before timed batches, untimed warm-up before every timed path, medians rather than means, the disk’s own latency reported',
    '  (flush p50 / p99) where a verdict depends on it.',
    '',
    `Job run times in this run (${context.quick ? 'quick' : 'full'}): ${jobTimes(context)}.`,
    '',
  ]
}

/** `growth 41 s, side ×6 98 s, ...`: the run's time by job. */
function jobTimes(context: RunContext): string {
  const byName = new Map<string, { runs: number; seconds: number }>()
  for (const timing of context.jobs) {
    const entry = byName.get(timing.name) ?? { runs: 0, seconds: 0 }
    entry.runs += 1
    entry.seconds += timing.seconds
    byName.set(timing.name, entry)
  }
  return [...byName]
    .map(([name, { runs, seconds }]) => `${name}${runs > 1 ? ` ×${runs}` : ''} ${seconds.toFixed(0)} s`)
    .join(', ')
}

/** Row 1: the plugin’s share, per size, and each side’s flatness. */
function appendLines(results: BenchResults): string[] {
  const sizes = appendSizes(results)
  const row = (at: number) => {
    const blocks = appendBlocks(results, at)
    const ratios = appendRatios(results, at)
    const point = results.append[0]!.points.find((entry) => entry.at === at)!
    const perProcess = results.append
      .map((run) =>
        blocksAt(run, at)
          .map((block) => ratio(blockRatio(block)))
          .join(', '),
      )
      .join(' | ')
    return `| ${count(at)} | ${exact(point.range[0])}–${exact(point.range[1])} | ${ms(median(blocks.map(withSide)), 1)} | ${ms(median(blocks.map(hostSide)), 1)} | ${ms(median(appendShares(results, at)), 1)} | ${ratio(median(ratios))} | ${perProcess} |`
  }
  const [first, last] = [sizes[0]!, sizes.at(-1)!]
  const withFlat = appendFlatness(results, withSide, first, last)
  const hostFlat = appendFlatness(results, hostSide, first, last)
  const [firstShare, lastShare] = [median(appendShares(results, first)), median(appendShares(results, last))]
  const blocks = results.append[0]!.points[0]!.blocks.length
  return [
    '## 1. Append cost per 10k events',
    '',
    'The log: ten-event cycles (a `loop/change` create of a fresh id and its delete, then turn/start, step/start, four assistant',
    'chunks, step/end, turn/end), so 20% of events are loop events, each cycle with a fresh id; three standing loops.',
    'Appended with `Session.append` on a live session (every `session/event` listener runs, and the plugin’s projection is applied),',
    'past the plugin’s runtime: a change the runtime appends itself also costs it one decode and fold of that change, which row 4’s',
    'fold times put below 1 µs and which these figures leave out.',
    `timed as process CPU time (user + system, all threads, GC included). Both sides live in one process: a host with the plugin and`,
    `a host without it, taking turns in chunks of ${exact(CHUNK)} events in ABBA order (BAAB every other quad), each chunk after a minor GC`,
    `so its scavenges collect only its own garbage; a block is ${QUADS_PER_BLOCK} quads (${exact(2 * QUADS_PER_BLOCK * CHUNK)} events per side), after one untimed block. A block’s`,
    'ratio, and each side’s cost in it, is the median over its quads: now and then a quad takes a major GC of the whole heap',
    '(hundreds of ms at 1M, where the process holds both copies of the log), charged to whichever side happens to run, and the',
    `median sets that quad aside for both sides alike. ${plural(blocks, 'block')} per size in each of ${plural(results.append.length, 'process')}. The flush after each quad is`,
    `excluded (the same I/O on both sides). At ${count(first)} each quad runs on fresh sessions grown to ${count(first)}; the larger sizes are the grown`,
    `log of rows 2–3, copied and opened on both sides (a long session is a resumed one). Growing the log to ${count(largest(results.growth.drive).at)} took ${results.growth.buildSeconds.toFixed(1)} s.`,
    '',
    '| Log length | Measured over (plugin side) | With plugin | Host alone | Plugin’s share (with − alone) | Ratio (median over blocks) | Ratio per block, by process |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...sizes.map(row),
    '',
    `Flatness in each process (10k at ${count(last)} ÷ 10k at ${count(first)}, medians over its blocks): with the plugin ${ratio(median(withFlat))}`,
    `(${withFlat.map(ratio).join(', ')}), host alone ${ratio(median(hostFlat))} (${hostFlat.map(ratio).join(', ')}). At ${count(last)} the process holds both`,
    'sides’ copies of the log, so the heap is twice what one DSH holds; both sides pay that alike.',
    `The plugin’s share went from ${ms(firstShare, 1)} at ${count(first)} to ${ms(lastShare, 1)} at ${count(last)} per 10k (medians over blocks).`,
    '',
  ]
}

/** Row 2. */
function driveLines(growth: GrowthResult): string[] {
  const repeats = growth.driveRepeats
  const last = largest(growth.drive)
  const first = smallest(growth.drive)
  const blockMedian = (pick: (block: GrowthResult['driveRepeats']['blocks'][number]) => number) =>
    ms(median(repeats.blocks.map(pick)))
  return [
    '## 2. Drive cost after one appended event',
    '',
    'A drive triggered through the public path: one `loop/change` appended by a real `loop_create` or `loop_delete` of a probe loop',
    '(untimed, its flush done), then `loop_list` through the real tool runtime, which queues behind the runtime and reads its fold',
    '(so every full-log read the drive path makes is inside the time). After the log is grown to each size the session is closed',
    'and resumed, so its runtime holds the whole history as after a restart (the bench writer appends past it). The host floor is a bench tool through the',
    'same tool runtime that awaits the same flush barrier and returns nothing, timed back to back with each `loop_list` (order',
    'alternating); the plugin’s share is their difference. "Idle" is `loop_list` again with nothing appended since the previous one.',
    'The from-scratch fold is the plugin’s own fold over `session.events` from empty; `foldScheduleEvents` (DSH’s',
    '`@deepseek-ai/dsh-schedule` 0.1.0-rc.8, which refolds the log on every decision) folds the same log with every loop event',
    'replaced by the equivalent `schedule/change` (same count, same positions). Context table: medians of 21 trials as the log grows.',
    '',
    '| Log length | Drive | Host floor | Plugin’s share | Idle drive | From-scratch fold | foldScheduleEvents |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...growth.drive.map(
      (point) =>
        `| ${count(point.at)} (${exact(point.events)}) | ${ms(point.drive)} | ${ms(point.floor)} | ${ms(point.share)} | ${ms(point.idleDrive)} | ${ms(point.fullFold)} | ${ms(point.scheduleFold)} |`,
    ),
    '',
    `As the log grew from ${count(first.at)} to ${count(last.at)} the host floor went from ${ms(first.floor)} to ${ms(last.floor)} (${ratio(last.floor / first.floor)}): the host’s tool`,
    `runtime and flush barrier in a larger heap, which the plugin does not control. The judged comparison is the ${count(repeats.at)} log against the`,
    `${exact(repeats.referenceEvents)}-event reference session in the same heap, ${repeats.blocks.length} blocks of 21 trials each (medians over blocks):`,
    '',
    `| Session | Drive | Host floor | Plugin’s share |`,
    '| --- | --- | --- | --- |',
    `| ${count(repeats.at)} (${exact(repeats.events)}) | ${blockMedian((block) => block.largeDrive)} | ${blockMedian((block) => block.largeFloor)} | ${blockMedian((block) => block.largeShare)} |`,
    `| reference (${exact(repeats.referenceEvents)}) | ${blockMedian((block) => block.smallDrive)} | ${blockMedian((block) => block.smallFloor)} | ${blockMedian((block) => block.smallShare)} |`,
    '',
    `Share ratio per block: ${repeats.shareRatio.samples.map(ratio).join(', ')}; whole drive per block: ${repeats.driveRatio.samples.map(ratio).join(', ')}.`,
    '',
  ]
}

/** Row 3. */
function createDeleteLines(growth: GrowthResult): string[] {
  const repeats = growth.createDeleteRepeats
  return [
    '## 3. Create + delete latency through the real tool runtime',
    '',
    '`loop_create` then `loop_delete` via `ctx.tools.execute`, each appending one event and waiting for its fsync’d JSONL flush.',
    `Context table: medians of 9 trials as the log grows. Judged: the ${count(repeats.at)} log against the ${exact(repeats.referenceEvents)}-event reference session in the`,
    `same heap, ${repeats.ratio.samples.length} blocks of 9 trials each, alternating: ${repeats.large.map((value) => value.toFixed(2)).join(', ')} ms against ${repeats.small.map((value) => value.toFixed(2)).join(', ')} ms.`,
    '',
    '| Log length | Create + delete | Create | Delete |',
    '| --- | --- | --- | --- |',
    ...growth.createDelete.map(
      (point) =>
        `| ${count(point.at)} (${exact(point.events)}) | ${ms(point.createDelete)} | ${ms(point.create)} | ${ms(point.delete)} |`,
    ),
    '',
  ]
}

/** Row 4. */
function resumeLines(results: BenchResults): string[] {
  const { sides } = results
  const open = sides[0]!.with.open
  const cpus = (pick: (pair: SidePair) => SideResult) => sides.map((pair) => pick(pair).open.cpu)
  const walls = (pick: (pair: SidePair) => SideResult) => sides.map((pair) => pick(pair).open.wall)
  const runtimeFold = median(sides.map((pair) => pair.with.open.runtimeFold))
  const projectionFold = median(sides.map((pair) => pair.with.open.projectionFold))
  const list = (values: readonly number[]) => values.map((value) => value.toFixed(0)).join(', ')
  return [
    '## 4. Cold resume',
    '',
    `Opening the ${exact(open.events)}-event session from its JSONL file as the first work of a fresh process (one per side and pair,`,
    'after their file copy is written back): `ctx.agents.resume`, then the projection snapshot DSH web reads when a session is',
    `selected; with the plugin also its runtime’s first fold (a \`loop_list\` queued behind it, which found ${open.loops} active loops; the host alone`,
    'makes the same probe call through the same tool runtime and flush barrier with the bench’s floor tool, so the probe’s own',
    'cold path is on both sides). A host without the plugin refuses a log holding `loop/change`, so the baseline adds the type to',
    'the persistence catalog exactly as the plugin does.',
    '',
    '| Measure | With plugin (median) | Host alone (median) | Plugin share (median of pairs) | Opens with / without, per pair (ms) |',
    '| --- | --- | --- | --- | --- |',
    `| CPU time (user + system, all threads) | ${ms(median(cpus((pair) => pair.with)), 0)} | ${ms(median(cpus((pair) => pair.without)), 0)} | ${signedPercent(median(sides.map((pair) => pair.with.open.cpu / pair.without.open.cpu - 1)))} | ${list(cpus((pair) => pair.with))} / ${list(cpus((pair) => pair.without))} |`,
    `| Wall time | ${ms(median(walls((pair) => pair.with)), 0)} | ${ms(median(walls((pair) => pair.without)), 0)} | ${signedPercent(median(sides.map((pair) => pair.with.open.wall / pair.without.open.wall - 1)))} | ${list(walls((pair) => pair.with))} / ${list(walls((pair) => pair.without))} |`,
    '',
    'The target is checked on CPU time (the wall times are context). Of the plugin’s work, the runtime’s catch-up fold of the whole',
    `log took ${ms(runtimeFold, 0)} and the projection’s first build ${ms(projectionFold, 0)}, each timed again on the resumed log after the open (the plugin’s`,
    'fold from empty; the projection’s `init` + `apply` over every event, which is what the registry does on the first read).',
    '',
  ]
}

/** Row 5: every run, then the runs of each scenario summarized. */
function latenessLines(results: BenchResults): string[] {
  const rows: string[] = []
  for (const { scenario, runs } of results.lateness) {
    runs.forEach((result, index) => {
      rows.push(
        `| ${scenario.label} | ${index + 1} | ${result.loop.count} | ${result.loop.p50.toFixed(2)} / ${result.loop.p99.toFixed(2)} / ${result.loop.max.toFixed(2)} ms | ${result.bare.p50.toFixed(2)} / ${result.bare.p99.toFixed(2)} / ${result.bare.max.toFixed(2)} ms | ${signed(result.loop.p99 - result.bare.p99)} | ${result.dispatchesPerSecond.toFixed(1)} (${result.offeredPerSecond}) | ${result.flushesPerDispatch.toFixed(2)} | ${result.diskWritesPerDispatch.toFixed(2)} | ${result.flush.p50.toFixed(2)} / ${result.flush.p99.toFixed(2)} ms | ${result.skipped} |`,
      )
    })
  }
  const scenarios = results.lateness
    .map(
      ({ scenario }) =>
        `${scenario.label}: ${scenario.intervalSeconds} s interval, ${scenario.measureSeconds} s window`,
    )
    .join('; ')
  return [
    '## 5. Dispatch lateness',
    '',
    'Real timers, real JSONL persistence (fsync), idle agents whose `send` returns at once. Loops are created through the tool runtime,',
    'paced evenly over one interval so their instants spread out; delays are from `next_at` to `agent.send` for instants inside the',
    'measurement window. The bare baseline arms one plain `setTimeout` per instant the moment the instant is known (the event that',
    'sets it), in the same process and at the same time. Flushes are counted twice: `ctx.sessions.flush` calls (a call with nothing',
    'pending costs no I/O), and fsync’d JSONL writes (the backend’s own appends: one open, write, fsync, close each), which are the',
    `persistence boundary the targets count. Offered: every instant of every loop inside the window. Scenarios: ${scenarios}.`,
    'In the 1,000-loop scenario loops fall due 5 ms apart. A drive sends every loop due at that moment, appends their `dispatch`',
    'records and makes them durable with one write (group commit), so a write carries several records only when loops fell due while',
    'the previous write was in progress: the batches adapt to the disk. On a disk whose fsync takes well under 5 ms each loop gets',
    'its own write (about 1 write per dispatch, the minimum for evenly paced loops that must each be durable before the next is',
    'due); when fsync is slow, batches grow and writes per dispatch fall. Its writes and flush calls per dispatch are therefore',
    'context here (the flush p50 beside them says how fast this disk was); the "writes per dispatch < 0.1" target is judged where',
    'loops fall due together (row 8).',
    '',
    '| Scenario | Run | n | Loop p50 / p99 / max | Bare setTimeout p50 / p99 / max | p99 excess | Dispatches/s (offered) | Flush calls per dispatch | fsync’d writes per dispatch | Flush p50 / p99 | Skipped |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
  ]
}

/** Row 8: 20 overdue loops and the 1,000-loop burst. */
function overdueLines(results: BenchResults): string[] {
  const { overdue, overdueBurst } = results
  const list = (trials: OverdueResult['runtime']) => trials.map((trial) => trial.allSent.toFixed(1)).join(', ')
  const writes = (trials: OverdueResult['runtime']) => median(trials.map((trial) => trial.durableWrites))
  const flushes = (trials: OverdueResult['runtime']) => median(trials.map((trial) => trial.flushes))
  const rows = (burst: OverdueResult) => [
    `| ${exact(burst.loops)} | The plugin’s runtime | ${ms(burst.runtimeMedian, 1)} | ${list(burst.runtime)} | ${writes(burst.runtime)} | ${flushes(burst.runtime)} |`,
    `| ${exact(burst.loops)} | One flush per loop | ${ms(burst.perLoopMedian, 1)} | ${list(burst.perLoop)} | ${writes(burst.perLoop)} | ${flushes(burst.perLoop)} |`,
  ]
  return [
    `## 8. Overdue loops at start: ${overdue.loops}, and a burst of ${exact(overdueBurst.loops)}`,
    '',
    `A session whose hourly loops (${overdue.loops}; and ${exact(overdueBurst.loops)} in the burst) all fell due while DSH was down, opened in a fresh host: time from`,
    'the agent’s creation on resume to the last heartbeat handed to `agent.send`. The baseline, on the same host composition without the',
    'plugin, is a bench-local driver that commits one loop at a time: for each overdue loop in `next_at` order it sends the heartbeat,',
    'appends the `dispatch` record and awaits the flush before the next. The time target sits between one write per loop (1×) and one',
    `write for the whole batch (1/${overdue.loops} = ${ratio(1 / overdue.loops)}), at about their geometric middle: a runtime at or under it commits overdue loops in batches.`,
    'Writes are the fsync’d JSONL writes from the agent’s creation until every `dispatch` record is durable (the bench flushes once',
    `after the last send), minus the host’s own writes on resume (${overdue.hostWrites} for the ${overdue.loops}-loop log, ${overdueBurst.hostWrites} for the burst: the host without the plugin`,
    'resumes the same log and flushes, dispatching nothing); writes per dispatch divide what remains by the loops. Here loops fall due',
    'together, so one drive can send all of them and commit them with one write: the "writes per dispatch < 0.1" target is judged here.',
    `The burst has ${plural(overdueBurst.runtime.length, 'pair')} (its baseline pays ${exact(overdueBurst.loops)} fsyncs per trial); its time ratio is shown as context.`,
    '',
    '| Loops | Side | All sent (median) | Per trial (ms) | fsync’d writes until durable (median) | Flush calls to the last send (median) |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows(overdue),
    ...rows(overdueBurst),
    '',
  ]
}

/** Row 6. */
function memoryLines(memory: MemoryResult): string[] {
  return [
    '## 6. Memory',
    '',
    'Heap after full GCs. Two hosts, with and without the plugin, get the same `loop/change` events; the plugin’s share is the',
    'with-plugin growth minus the host-only growth (the log itself). "One loop record" is the heap of a plain record object of the',
    'same shape with its own id and prompt strings. The used-id set is kept by contract (an id is never reused in a session); its',
    'floor is a `Set` over id strings the log already holds.',
    '',
    '| Measure | Value |',
    '| --- | --- |',
    `| Plugin heap per active loop (${memory.activeLoops} loops, median of ${memory.perLoopSamples.length}: ${memory.perLoopSamples.map((value) => value.toFixed(0)).join(', ')} B) | ${kib(memory.perLoop)} |`,
    `| One loop record alone | ${kib(memory.recordBytes)} |`,
    `| Plugin heap growth after ${count(memory.cycles)} create/delete cycles | ${mib(memory.cycleGrowth)} (${(memory.cycleGrowth / memory.cycles).toFixed(1)} B per cycle) |`,
    `| Used-id set floor for as many ids | ${mib(memory.usedIdSetBytes)} (${(memory.usedIdSetBytes / memory.cycles).toFixed(1)} B per id) |`,
    `| Host-only growth for the same cycles (the log) | ${mib(memory.hostCycleGrowth)} |`,
    '',
  ]
}

/** Row 7. */
function dockLines(dock: DockResult): string[] {
  return [
    '## 7. The dock',
    '',
    '`LoopDock` from src/ui/, bundled with the project’s own build pieces (tsdown, CSS modules) and rendered in jsdom by React 18.3’s',
    'production build (what DSH web ships). jsdom’s DOM is slower than a browser’s, so these are upper bounds for the DOM part.',
    'Render: `root.render` inside `flushSync` until committed (expanded adds the Expand click, which mounts every row). Repaint: the dock’s',
    `own once-a-second interval callback inside \`flushSync\`, with the clock one second later so every countdown changes. ${dock.points[0]!.renderSamples.length} mounts per layout after warm-up; every interval, timeout, animation frame`,
    'and document listener registered while mounted is tracked.',
    '',
    '| Layout | Render (median) | Render (fastest) | One countdown repaint (median) | Repaint (fastest) |',
    '| --- | --- | --- | --- | --- |',
    ...dock.points.map(
      (point) =>
        `| ${point.label} | ${ms(point.render)} | ${ms(Math.min(...point.renderSamples))} | ${ms(point.repaint)} | ${ms(Math.min(...point.repaintSamples))} |`,
    ),
    '',
    `After the last unmount: ${dock.leftAfterUnmount.intervals} intervals, ${dock.leftAfterUnmount.timeouts} timeouts, ${dock.leftAfterUnmount.frames} animation frames and ${dock.leftAfterUnmount.documentListeners} document listeners left (the dock armed ${dock.intervalsArmed} intervals over all mounts).`,
    '',
  ]
}

/** One data-backed note per missed target; "all met" otherwise. */
function missNotes(results: BenchResults, checks: readonly Verdict[]): string[] {
  const { growth, sides, overdue, memory, dock } = results
  const missed = (row: string, text = '') =>
    checks.some((check) => check.row === row && check.status === 'not met' && check.target.includes(text))
  const notes: string[] = []
  for (const burst of [overdue, results.overdueBurst]) {
    if (missed('8', `${exact(burst.loops)} overdue loops at start: fsync’d`)) {
      notes.push(
        `- **Overdue writes, ${exact(burst.loops)} loops**: ${median(burst.runtime.map((trial) => trial.durableWrites))} writes until durable (${burst.hostWrites} of them the host’s own) for ${exact(burst.loops)} dispatches:`,
        '  the runtime does not commit the loops due together with one write.',
      )
    }
  }
  if (missed('1')) {
    const sizes = appendSizes(results)
    notes.push(
      `- **Append**: the plugin’s share per 10k (with − alone, medians over blocks) was ${sizes.map((at) => `${ms(median(appendShares(results, at)), 1)} at ${count(at)}`).join(', ')}.`,
      '  A share that grows with the log is plugin work that is not constant; a flat share with a ratio above 1.3× is constant',
      '  per-event work that is too large for the host’s own per-event cost.',
    )
  }
  if (missed('2')) {
    const repeats = growth.driveRepeats
    notes.push(
      `- **Drive**: in the same heap the plugin’s share was ${ms(median(repeats.blocks.map((block) => block.largeShare)))} at ${count(repeats.at)} against ${ms(median(repeats.blocks.map((block) => block.smallShare)))} at`,
      `  ${exact(repeats.referenceEvents)} events: work in the drive path that grows with the log (a read of \`session.events\` beyond the folded position).`,
    )
  }
  if (missed('3'))
    notes.push(
      '- **Create + delete**: both calls wait for an fsync’d JSONL write, so the ratio follows the disk; compare the blocks above.',
    )
  if (missed('4')) {
    const delta = median(sides.map((pair) => pair.with.open.cpu - pair.without.open.cpu))
    const folds = median(sides.map((pair) => pair.with.open.runtimeFold + pair.with.open.projectionFold))
    notes.push(
      `- **Cold resume**: the plugin added ${ms(delta, 0)} of CPU (median over pairs); its two whole-log folds take ${ms(folds, 0)} together. CPU time`,
      '  counts garbage collection and JIT compilation, and the folds’ allocations make a heap that holds the whole log collect more',
      '  often. What would meet it: one fold on open whose state seeds the other consumer, or a projection checkpoint.',
    )
  }
  for (const { scenario, runs } of results.lateness) {
    // A scenario's own targets name it first or in parentheses (the 2× target names the other scenario at its end).
    const own = (target: string) => target.startsWith(`${scenario.label}:`) || target.endsWith(`(${scenario.label})`)
    if (!checks.some((check) => check.row === '5' && check.status === 'not met' && own(check.target))) continue
    const p99 = median(runs.map((run) => run.loop.p99))
    const bare = median(runs.map((run) => run.bare.p99))
    const writes = median(runs.map((run) => run.diskWritesPerDispatch))
    const flush99 = median(runs.map((run) => run.flush.p99))
    const rate = median(runs.map((run) => run.dispatchesPerSecond))
    notes.push(
      `- **Lateness, ${scenario.label}** (medians over runs): p99 ${p99.toFixed(1)} ms against ${bare.toFixed(1)} ms bare, ${rate.toFixed(1)} of ${runs[0]!.offeredPerSecond} dispatches/s,`,
      `  ${writes.toFixed(2)} fsync’d writes per dispatch, flush p99 ${flush99.toFixed(1)} ms. A session’s drive sends every loop due and makes their`,
      '  records durable with one write (group commit); loops falling due while that write is in progress wait for the next drive, so a',
      '  slow write is paid by the loops behind it: compare the flush p99 and the bare baseline’s own p99 (the event loop’s stalls).',
    )
  }
  if (missed('6')) {
    const perCycle = memory.cycleGrowth / memory.cycles
    const entry = memory.usedIdSetBytes / memory.cycles
    notes.push(
      `- **Memory after cycles**: the plugin grew ${perCycle.toFixed(1)} B per cycle, ${(perCycle / entry).toFixed(2)}× one \`Set\` entry over an existing id string`,
      `  (${entry.toFixed(1)} B): something beyond the used-id set is kept per id.`,
    )
  }
  if (missed('7')) {
    const worst = dock.points
      .filter((point) => point.loops === 100)
      .reduce((left, right) => (right.repaint > left.repaint ? right : left))
    notes.push(
      `- **Dock repaint** (${worst.label}): median ${ms(worst.repaint)}, fastest ${ms(Math.min(...worst.repaintSamples))}.`,
    )
  }
  if (missed('8', 'all sent')) {
    const own = median(overdue.runtime.map((trial) => trial.durableWrites)) - overdue.hostWrites
    const each = median(overdue.perLoop.map((trial) => trial.durableWrites)) - overdue.hostWrites
    const flushMs = (overdue.perLoopMedian - overdue.runtimeMedian) / Math.max(1, each - own)
    notes.push(
      `- **Overdue at start**: the runtime took ${ms(overdue.runtimeMedian, 1)} and ${plural(own, 'write')} of its own for ${overdue.loops} loops, the one-flush-per-loop`,
      `  driver ${ms(overdue.perLoopMedian, 1)} and ${plural(each, 'write')} (medians; host’s own writes excluded).`,
      ...(own <= 1
        ? [
            `  The runtime already commits the batch with one write; each write it saves was worth about ${ms(flushMs, 1)} here, so on a disk`,
            `  this fast the baseline is cheap and the ratio is set by the work both sides share (resume, ${overdue.loops} sends): see the per-trial times.`,
          ]
        : [
            '  The runtime commits the overdue loops with more than one write: the last heartbeat waits for the writes before it.',
            '  What meets it: one drive sends every due loop, then makes all their records durable with one write.',
          ]),
    )
  }
  return notes.length === 0 ? ['Every judged target is met in this run.'] : notes
}

/** The report's sections after the targets and the method, in order. A new row adds its renderer here. */
const SECTIONS: readonly ((results: BenchResults) => string[])[] = [
  appendLines,
  (results) => driveLines(results.growth),
  (results) => createDeleteLines(results.growth),
  resumeLines,
  latenessLines,
  (results) => memoryLines(results.memory),
  (results) => dockLines(results.dock),
  overdueLines,
]

/**
 * Render BENCHMARKS.md.
 * @param context - machine and run facts.
 * @param results - every row.
 * @returns markdown.
 */
export function renderReport(context: RunContext, results: BenchResults): string {
  const checks = verdicts(results)
  const judgedChecks = checks.filter((check) => check.status === 'met' || check.status === 'not met')
  const notJudged = checks.filter((check) => check.status === 'not judged').length
  const lines: string[] = [
    '# Benchmarks',
    '',
    `Generated by \`${context.command}\` on ${context.date}. Do not edit by hand: rerun the command.`,
    '',
    `- Machine: ${context.cpu}, ${context.cores} cores, ${context.memoryGiB} GiB, ${context.platform}`,
    `- Node ${context.node}; code at \`${context.commit}\`${context.dirty ? ' (with uncommitted changes)' : ''} (${context.commitSubject}); plugin code (src/) as of \`${context.sourceCommit}\``,
    `- Load average (1/5/15 min) before ${context.loadBefore.map((value) => value.toFixed(2)).join(' / ')}, after ${context.loadAfter.map((value) => value.toFixed(2)).join(' / ')}; whole run ${context.durationSeconds.toFixed(0)} s`,
    context.quick
      ? '- **Quick run** (`--quick`): smaller sizes, shorter windows, one repeat where a full run has several; a target defined at a size this run does not reach is **not judged**.'
      : '- Full run.',
    '',
    'Every comparison is a ratio of two numbers measured in the same run; absolute times are context only. Hosts are real in-process',
    'DSH hosts (Cordis context, session store, JSONL persistence with zstd on the local disk, agent registry and loop, tool and command',
    "runtimes, projection registry with a change-feed subscriber as DSH web's host-apiproxy has); only the model boundary is fake",
    '(`agent.send` records and returns).',
    '',
    '## Targets',
    '',
    '| Row | Target | Median | Spread (min – max) | |',
    '| --- | --- | --- | --- | --- |',
    ...checks.map(
      (check) => `| ${check.row} | ${check.target} | ${check.measured} | ${check.spread} | ${mark(check.status)} |`,
    ),
    '',
    `${judgedChecks.filter((check) => check.status === 'met').length} of ${judgedChecks.length} judged targets met${notJudged > 0 ? ` (${notJudged} not judged)` : ''}.`,
    '',
    ...methodLines(context, results),
  ]
  for (const section of SECTIONS) lines.push(...section(results))
  lines.push('## Where the time goes where a target is missed', '', ...missNotes(results, checks), '')
  lines.push(
    '## Caveats',
    '',
    '- Verdicts hold only on an otherwise idle machine: other processes inflate wall times and p99s, and a spread that straddles a',
    '  target says the run cannot tell. Compare the load averages above.',
    '- Lateness and the overdue row depend on the disk: every batch of dispatches waits for an fsync’d JSONL write.',
    '',
  )
  return lines.join('\n')
}

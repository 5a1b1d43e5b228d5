/**
 * BENCHMARKS.md from the jobs' results: a header paragraph, one table of targets (each judged on the confidence
 * interval of the median of its repeats, with their spread) and the fixed method text. Every figure comes from the results.
 * @module scripts/bench/report
 */
import { blockPerTenK, blockRatio, type AppendPoint } from './append.ts'
import type { DockResult } from './dock.ts'
import type { DshOpen } from './dsh-open.ts'
import type { GrowthResult } from './growth.ts'
import type { LatenessResult } from './lateness.ts'
import type { MemoryResult } from './memory.ts'
import { HEAP_MIB, type HomeResult, type HomeSide, type ReleaseResult, type ReleaseSide } from './release.ts'
import { median, medianInterval, spread, type MedianInterval, type Spread } from './stats.ts'

/** Every job's results; a partial run (`--only`) leaves some out, and their rows go. */
export interface BenchResults {
  readonly growth?: GrowthResult
  /** Row 1, one entry per process. */
  readonly append?: readonly (readonly AppendPoint[])[]
  /** Row 6 in real `dsh web` processes, one entry per concurrent pair. */
  readonly dshOpen?: readonly { readonly with: DshOpen; readonly without: DshOpen }[]
  /** Row 3, every run in run order. */
  readonly lateness?: readonly LatenessResult[]
  readonly memory?: MemoryResult
  readonly dock?: DockResult
  /** Row 7, every run in run order. */
  readonly release?: ReleaseResult
  readonly home?: HomeResult
}

/** Where and how the run was made: the report's header paragraph. */
export interface RunContext {
  readonly date: string
  readonly machine: string
  readonly node: string
  readonly commit: string
  readonly dirty: boolean
  readonly command: string
  readonly quick: boolean
  readonly loadBefore: readonly number[]
  readonly loadAfter: readonly number[]
  readonly seconds: number
}

/** Context rows carry no target; not judged: a quick run did not reach the size the target is defined at. */
type Status = 'met' | 'not met' | 'cannot tell' | 'not judged' | 'context'

interface Row {
  readonly row: number
  readonly target: string
  readonly median: string
  /** The median's distribution-free confidence interval; absent for a row that is no median of repeats. */
  readonly interval?: string
  readonly spread: string
  readonly status: Status
}

/** The sizes the targets are defined at. */
const FULL = {
  appendSizes: [1_000, 100_000, 1_000_000],
  largest: 1_000_000,
  cycles: 100_000,
  homeSessions: 2_000,
} as const

const ratio = (value: number) => `${value.toFixed(2)}×`
const ms = (value: number, digits = 2) => `${value.toFixed(digits)} ms`
const signedMs = (value: number, digits = 2) => `${value < 0 ? '−' : '+'}${Math.abs(value).toFixed(digits)} ms`
const signedPercent = (value: number) => `${value < 0 ? '−' : '+'}${Math.abs(value * 100).toFixed(1)}%`
const percent = (value: number) => `${(value * 100).toFixed(1)}%`
const kib = (bytes: number) => `${bytes < 0 ? '−' : ''}${Math.abs(bytes / 1024).toFixed(2)} KiB`
const mib = (bytes: number) => `${bytes < 0 ? '−' : ''}${Math.abs(bytes / 2 ** 20).toFixed(2)} MiB`
const size = (events: number) => (events >= 1e6 ? `${events / 1e6}M` : `${events / 1e3}k`)
const range = (value: Spread, format: (value: number) => string, noun: string) =>
  `${format(value.min)} – ${format(value.max)} (${value.count} ${noun}${value.count === 1 ? '' : noun.endsWith('s') ? 'es' : 's'})`

/** A row judged on the median of its repeats. */
interface Judged {
  readonly row: number
  readonly target: string
  readonly samples: readonly number[]
  readonly format: (value: number) => string
  /** What one repeat is: block, pair, run. */
  readonly noun: string
  /** Whether the target holds on the median; none: a context row. */
  readonly holds?: (median: number) => boolean
  /** Shown after the median. */
  readonly note?: string
  /** False when the run did not reach what the target is defined at. */
  readonly judged?: boolean
}

/**
 * The verdict on a target from the median's confidence interval: met when the whole interval
 * holds, not met when none of it does, else the run cannot tell.
 * @param interval - the interval's ends.
 * @param holds - whether the target holds at a value (a threshold: one side holds, the other not).
 * @returns the verdict.
 */
export function verdictOf(interval: Pick<MedianInterval, 'low' | 'high'>, holds: (value: number) => boolean): Status {
  const [low, high] = [holds(interval.low), holds(interval.high)]
  return low && high ? 'met' : !low && !high ? 'not met' : 'cannot tell'
}

function judge({ row, target, samples, format, noun, holds, note = '', judged = true }: Judged): Row {
  const value = spread(samples)
  const interval = medianInterval(samples)
  const status = holds === undefined ? 'context' : !judged ? 'not judged' : verdictOf(interval, holds)
  return {
    row,
    target,
    median: format(value.median) + note,
    interval: `${format(interval.low)} – ${format(interval.high)} (${(interval.confidence * 100).toFixed(1)}%)`,
    spread: range(value, format, noun),
    status,
  }
}

function appendRows(processes: readonly (readonly AppendPoint[])[]): Row[] {
  const at = (points: readonly AppendPoint[], events: number) => points.find((point) => point.at === events)?.blocks
  const rows = FULL.appendSizes.flatMap((events) => {
    const blocks = processes.flatMap((points) => at(points, events) ?? [])
    if (blocks.length === 0) return []
    const target = `append with the plugin ≤ 1.3× the host alone, at ${size(events)} (one process, appends interleaved)`
    return [
      judge({
        row: 1,
        target,
        samples: blocks.map(blockRatio),
        format: ratio,
        noun: 'block',
        holds: (value) => value <= 1.3,
      }),
    ]
  })
  const [first, last] = [FULL.appendSizes[0], FULL.largest]
  if (processes.some((points) => at(points, last) === undefined)) return rows
  // Per process: a side's median 10k at the largest size ÷ at the smallest.
  const flatness = (side: 'with' | 'without') =>
    processes.map((points) => {
      const typical = (events: number) => median(at(points, events)!.map((quads) => blockPerTenK(quads, side)))
      return typical(last) / typical(first)
    })
  rows.push(
    judge({
      row: 1,
      target: `append flat: the plugin’s 10k at ${size(last)} ≤ 1.5× at ${size(first)} (same process)`,
      samples: flatness('with'),
      format: ratio,
      noun: 'process',
      holds: (value) => value <= 1.5,
      note: ` (host alone ${ratio(median(flatness('without')))})`,
    }),
  )
  return rows
}

function driveRows(growth: GrowthResult): Row[] {
  const judged = growth.at === FULL.largest
  const common = { row: 2, noun: 'block', judged, note: judged ? '' : ` (at ${size(growth.at)})` }
  return [
    judge({
      ...common,
      target: 'the plugin’s share of a drive at 1M ≤ 2× its share at 1k (same heap)',
      samples: growth.blocks.map((block) => block.largeShare / block.smallShare),
      format: ratio,
      holds: (value) => value <= 2,
    }),
    judge({
      ...common,
      target: 'drive at 1M ≥ 100× below the from-scratch fold',
      samples: growth.blocks.map((block) => block.fullFold / block.largeDrive),
      format: (value) => `${value.toFixed(0)}×`,
      holds: (value) => value >= 100,
    }),
  ]
}

function latenessRows(runs: readonly LatenessResult[]): Row[] {
  const of = (label: string) => runs.filter((run) => run.label === label)
  const excess = (label: string) => of(label).map((run) => run.p99 - run.bareP99)
  const common = { row: 3, noun: 'run' }
  const rows = ['100 loops, 1 session', '100 sessions x 10 loops'].map((label) =>
    judge({
      ...common,
      target: `lateness p99 ≤ bare setTimeout p99 + 5 ms (${label})`,
      samples: excess(label),
      format: signedMs,
      holds: (value) => value <= 5,
    }),
  )
  const thousand = of('1,000 loops, 1 session')
  if (thousand.length === 0) return rows
  rows.push(
    judge({
      ...common,
      target: '1,000 loops, 1 session: dispatches ≥ 99% of the instants offered',
      samples: thousand.map((run) => run.dispatches / run.offered),
      format: percent,
      holds: (value) => value >= 0.99,
    }),
  )
  // Against the session's own flushes in the same run, not another scenario's p99: the drive flushes once per dispatch (SPEC.md §5 "Runtime"), so
  // this session's lateness is a queue behind its flushes, and only their time says how much of it the disk accounts for.
  // k = 3: a single-server queue that keeps up waits at its p99 a few service times, and a dispatch's service is its flush
  // and a little CPU, so three flush p99s hold the flush in progress and a couple of dispatches behind it; beyond that
  // the delay is the scheduler's own.
  const excessMs = median(excess('1,000 loops, 1 session'))
  const flushP99 = median(thousand.map((run) => run.flushP99))
  rows.push(
    judge({
      ...common,
      target:
        '1,000 loops, 1 session: lateness p99 − bare setTimeout p99 ≤ 3× the p99 of the session’s own flushes (same run)',
      samples: thousand.map((run) => (run.p99 - run.bareP99) / run.flushP99),
      format: ratio,
      holds: (value) => value <= 3,
      note: ` (${signedMs(excessMs)} against a flush p99 of ${ms(flushP99)})`,
    }),
    judge({
      ...common,
      target: '1,000 loops, 1 session: lateness p99 − bare setTimeout p99',
      samples: excess('1,000 loops, 1 session'),
      format: signedMs,
    }),
    judge({
      ...common,
      target: '1,000 loops, 1 session: p99 of the session’s own flushes (those the drive awaits after a dispatch)',
      samples: thousand.map((run) => run.flushP99),
      format: ms,
      note: ` (p50 ${ms(median(thousand.map((run) => run.flushP50)))})`,
    }),
  )
  return rows
}

function memoryRows(memory: MemoryResult): Row[] {
  const judged = memory.cycles >= FULL.cycles
  return [
    judge({
      row: 4,
      target: 'heap per active loop beyond its record < 2 KiB',
      samples: memory.perLoopBeyondRecord,
      format: kib,
      noun: 'trial',
      holds: (value) => value < 2048,
    }),
    {
      row: 4,
      target: 'no growth after 100k create/delete cycles beyond 1 MiB noise',
      median: `${mib(memory.cycleGrowth)}${judged ? '' : ` (after ${size(memory.cycles)})`}`,
      spread: 'one measurement',
      status: !judged ? 'not judged' : memory.cycleGrowth <= 2 ** 20 ? 'met' : 'not met',
    },
  ]
}

function dockRows(dock: DockResult): Row[] {
  const worst = dock.layouts.reduce((left, right) => (median(right.repaints) > median(left.repaints) ? right : left))
  const { intervals, timeouts, frames, documentListeners } = dock.left
  return [
    judge({
      row: 5,
      target: 'countdown repaint with 100 loops < 2 ms (worst layout)',
      samples: worst.repaints,
      format: (value) => ms(value, 3),
      noun: 'mount',
      holds: (value) => value < 2,
      note: ` (${worst.label})`,
    }),
    {
      row: 5,
      target: 'nothing left running after unmount',
      median: `${intervals} intervals, ${timeouts} timeouts, ${frames} frames, ${documentListeners} document listeners`,
      spread: 'exact count',
      status: intervals + timeouts + frames + documentListeners === 0 ? 'met' : 'not met',
    },
  ]
}

function dshOpenRows(pairs: NonNullable<BenchResults['dshOpen']>, at: number): Row[] {
  const added = median(pairs.map((pair) => pair.with.cpu - pair.without.cpu))
  const wall = median(pairs.map((pair) => pair.with.wall / pair.without.wall - 1))
  return [
    judge({
      row: 6,
      target: `cold open of the ${size(FULL.largest)}-event log in \`dsh web\`, as a user opens it: the plugin adds at most 10% CPU time (fresh \`dsh web\` per open, concurrent pairs)`,
      samples: pairs.map((pair) => pair.with.cpu / pair.without.cpu - 1),
      format: signedPercent,
      noun: 'pair',
      holds: (value) => value <= 0.1,
      note: ` (${signedMs(added, 0)} CPU; wall ${signedPercent(wall)}${at === FULL.largest ? '' : `; at ${size(at)}`})`,
      judged: at === FULL.largest,
    }),
    judge({
      row: 6,
      target: 'cold open in `dsh web`: the host alone’s CPU time (every first-party projection unit folds the log)',
      samples: pairs.map((pair) => pair.without.cpu),
      format: (value) => ms(value, 0),
      noun: 'pair',
    }),
  ]
}

function releaseRows(release: ReleaseResult): Row[] {
  const largest = Math.max(...release.logs.map((log) => log.events))
  const smallest = Math.min(...release.logs.map((log) => log.events))
  const judged = largest === FULL.largest
  const runsOf = (side: ReleaseSide, events: number) =>
    release.runs.filter((run) => run.side === side && run.events === events)
  const log = release.logs.find((entry) => entry.events === largest)!
  const common = { row: 7, noun: 'run', judged, note: judged ? '' : ` (at ${size(largest)})` }
  // The n-th run of a side against the n-th floor run at the same size: neighbours in time.
  const ratios = (side: ReleaseSide) =>
    runsOf(side, largest).map((run, index) => run.ms / runsOf('floor', largest)[index]!.ms)
  const rss = (side: ReleaseSide, events: number) => median(runsOf(side, events).map((run) => run.maxRssBytes))
  const memoryNote = (side: ReleaseSide) =>
    `${mib(rss(side, smallest))} at ${size(smallest)}, ${mib(rss(side, largest))} at ${size(largest)}`
  return [
    judge({
      ...common,
      target: `\`dsh-plugin-loop release\` of a ${size(FULL.largest)}-event \`session.jsonl.zstd\`, its read-back check included, ≤ 1.5× a plain frame-by-frame decompress-and-recompress of the same file (own processes, Node's default heap)`,
      samples: ratios('removal'),
      format: ratio,
      holds: (value) => value <= 1.5,
      note: `${common.note} (${ms(median(runsOf('removal', largest).map((run) => run.ms)), 0)} against ${ms(median(runsOf('floor', largest).map((run) => run.ms)), 0)}; ${log.loopRows} of ${log.events} rows marked, ${mib(log.bytes)} on disk)`,
    }),
    judge({
      ...common,
      target: `\`release --for-upgrade\` of the same file, its check included, ≤ 2.5× that floor`,
      samples: ratios('upgrade'),
      format: ratio,
      holds: (value) => value <= 2.5,
      note: `${common.note} (${ms(median(runsOf('upgrade', largest).map((run) => run.ms)), 0)})`,
    }),
    {
      row: 7,
      target: `both releases of the ${size(FULL.largest)}-event log finish with the JS heap capped at ${HEAP_MIB} MiB, as at ${size(smallest)}: memory held does not grow with the log`,
      median: `${release.capped.length} of ${release.capped.length} capped runs finished${common.note}`,
      spread: 'every run (one that fails stops the bench)',
      status: judged ? 'met' : 'not judged',
    },
    ...(['removal', 'upgrade'] as const).map((side) =>
      judge({
        ...common,
        target: `peak RSS of the ${side === 'removal' ? 'release' : 'upgrade release'} at ${size(FULL.largest)} ≤ the floor's (own processes; buffers the GC frees late count)`,
        samples: runsOf(side, largest).map(
          (run, index) => run.maxRssBytes / runsOf('floor', largest)[index]!.maxRssBytes,
        ),
        format: ratio,
        holds: (value) => value <= 1,
        note: `${common.note} (${memoryNote(side)}; the floor ${memoryNote('floor')})`,
      }),
    ),
  ]
}

function homeRows(home: HomeResult): Row[] {
  const judged = home.sessions >= FULL.homeSessions
  const runsOf = (side: HomeSide) => home.runs.filter((run) => run.side === side)
  const floor = runsOf('floor')
  const targets = [
    { side: 'removal', command: '`release`', what: 'every look, kept original and read-back included', bound: 2 },
    { side: 'upgrade', command: '`release --for-upgrade`', what: 'the same included', bound: 2 },
    { side: 'dry-run', command: '`release --dry-run`', what: 'every log read and checked, nothing written', bound: 1 },
  ] as const
  return targets.map(({ side, command, what, bound }) =>
    judge({
      row: 8,
      target: `${command} of a home of ${size(FULL.homeSessions)} sessions of ${kib(home.logBytes)}, loop rows in each, ${what}, ≤ ${bound}× a plain crash-safe rewrite of the same logs (own processes)`,
      // The n-th run of a side against the n-th floor run: neighbours in time.
      samples: runsOf(side).map((run, index) => run.ms / floor[index]!.ms),
      format: ratio,
      noun: 'run',
      holds: (value) => value <= bound,
      judged,
      note: ` (${ms(median(runsOf(side).map((run) => run.ms)), 0)} against ${ms(median(floor.map((run) => run.ms)), 0)}${judged ? '' : `; ${size(home.sessions)} sessions`})`,
    }),
  )
}

/** Hand-written and fixed: what each row isolates and why. No measured figure belongs here. */
const METHOD = `## Method

Hosts are real in-process DSH hosts (Cordis context, session store, JSONL persistence with zstd on the local disk, agent
registry and loop, tool and command runtimes, projection registry with a change-feed subscriber as DSH web's host-apiproxy
has); only the model boundary is fake (\`agent.send\` records and returns). Every judged figure compares two things measured
in the same run, most in the same process; absolute times are never judged. A target is judged on the median of independent
repeats through its distribution-free confidence interval (order statistics, as Go's benchstat: for n repeats the k-th
smallest to the k-th largest, k the largest whose binomial coverage is at least 95%; with too few repeats for 95%, min to
max and the coverage it has, stated): met when the whole interval meets the target, not met when none of it does, else
undecided. A section with an undecided row is measured again, its repeats run once more and added to the ones it has, up
to three rounds in all (\`scripts/bench/rounds.ts\`); a row still undecided then says the run cannot tell. Min – max and
the count are context.
Verdicts hold only on an otherwise idle machine (compare the load averages above).

- **Append (1)**: each process holds a host with the plugin and one without. They append the same ten-event cycles (a
  create and delete of a fresh loop id, then a short turn) in turns of a thousand events, ABBA, each turn after a minor GC,
  timed as process CPU time. This VM's speed drifts between identical batches a second apart by more than the target's
  margin, so only interleaved turns see the same machine. A block's ratio is the median over its quads: a major GC of the
  whole heap lands now and then in one quad, charged to whichever side runs. At 1k every quad uses fresh sessions; at 100k
  and 1M both sides open copies of the grown log. The writer appends past the plugin's runtime, so what an append costs the
  plugin is its projection. Flatness is a side's cost at 1M ÷ at 1k within one process.
- **Drive (2)**: a \`loop/change\` is appended through the real \`loop_create\` or \`loop_delete\` (untimed), then \`loop_list\`
  through the tool runtime queues behind the drive that change requested and reads the fold. The host floor is a bench tool
  through the same runtime and flush barrier that does nothing else, timed back to back; the plugin's share is the
  difference. The 1M log is compared with a 1k session in the same host and heap, in blocks alternating which goes first,
  since a 1M heap slows every call of the host for both. The from-scratch fold is the plugin's fold of the whole log
  from empty, which its runtime makes once when it first reads a session.
- **Lateness (3)**: a fresh process per run, the scenarios' order rotating per round. Loops are created through the tool
  runtime, paced evenly over one interval; delay is from \`next_at\` to \`agent.send\`. The baseline arms a bare \`setTimeout\`
  for every instant the moment the instant is known, in the same process at the same time, so the event loop's stalls (GC,
  fsync callbacks) are in both. A p99 rests on the few worst moments of a window, so one window is one repeat. Every
  \`ctx.sessions.flush\` the plugin awaits is timed too; those that carry events (the flush after a dispatch) are the
  session's own flush time, and the 1,000-loop excess over the bare timer is set against their p99 in the same window:
  one session's dispatches queue behind its flushes, so the disk's speed is in both. Offered instants are every loop's
  instants inside the window.
- **Heap (4)**: \`heapUsed\` after full GCs. Two hosts, with the plugin and without, get the same \`loop/change\` events, then
  close and resume the session; the plugin's share is its host's growth minus the other's (the log itself). Per loop, the
  heap of a plain record object of the same shape is subtracted.
- **Dock (5)**: \`LoopsView\`, bundled by the project's own build pieces, in jsdom with React 18's production build (jsdom is
  slower than a browser: an upper bound). The repaint is the dock's own once-a-second interval callback inside \`flushSync\`
  with the clock one second on, so every countdown changes; the worse of the collapsed and expanded layouts is judged.
- **Cold open (6)**, as a user meets it: pairs of real \`dsh web\` processes, one per side, each on its own
  home holding a fresh copy of the grown log and no projection checkpoint. Both homes have the packed plugin added by
  \`dsh plugin add\`; on the host-alone side a \`--patch\` disables it and loads a plugin that only registers
  \`loop/change\` in the host's event catalog (DSH refuses to open a log holding an unregistered type). Both processes
  boot and settle, then open the session at the same moment, as DSH web does when the user clicks it (\`session.models\`,
  then \`session.history\`), alternating which side's requests go first. A side's CPU time is its process's
  \`utime + stime\` from the first request until it has been idle for 0.5 s, and at least 6 s after the history reply,
  so the projection cache's write lands inside the window on both sides. Either host runs every first-party plugin of
  the web profile; their projection units fold the same log. The ratio is taken within a pair. Wall time to the history
  reply is shown but not judged: of two opens sharing two cores, one ends about 2 s after the other, and the side that
  has more to do is more often the second; opened one at a time, the two sides' wall times do not differ.

- **Leaving loop (7)**: the log is grown by the real host with the plugin (the same cycles as rows 1–2, a fifth of them
  \`loop/change\` rows, one frame per thousand events as DSH flushes a batch at a time). Each run takes a fresh copy of it in a
  Node process of its own, so its peak RSS (\`process.resourceUsage().maxRSS\`) is its own: the floor (walk the frames,
  decompress each, compress it again as one checksummed frame into a file beside it, fsync, rename: what any tool that
  rewrites such a log must do; it makes so little JS garbage that V8 seldom collects and the frames' buffers pile up to
  half a gigabyte, doubling its time in some runs, so it runs a minor collection every 20 frames and holds steady), the
  release, and the upgrade release, each release as users run it: lock, looks for DSH, kept original, read-back check.
  The three alternate, rotating which goes first, with Node's default heap; a ratio pairs the n-th run of a side with the
  n-th floor run. Besides, each release runs once at each size with V8's old space capped (\`--max-old-space-size\`):
  finishing at 1M in it shows that what the process holds does not grow with the log. Peak RSS also counts the frames'
  buffers, which live outside the JS heap and which the GC frees late, more so the more it has freed; it is judged
  against the floor's, which decodes and encodes the same frames.
- **A home of many sessions (8)**: one small log written by the real host (the cycles of rows 1–2, a frame per hundred
  events, as DSH flushes a turn), copied into a home of two thousand session folders. Each run takes a fresh copy of the
  home in a Node process of its own: the floor (every log read, its frames decompressed and compressed again, a temp file
  beside it, fsync, rename, fsync of its folder; synchronous calls, one log after another), the removal, the upgrade and
  the dry run, as users run them (every look for DSH in this machine's real \`/proc\`, kept originals, the read-back
  check), rotating which goes first. A ratio pairs the n-th run of a side with the n-th floor run.

A quick run (\`--quick\`) has smaller sizes, shorter windows and fewer repeats; a target defined at a size it does not
reach is not judged.
`

/** The table's rows from the results at hand. */
function rowsOf(results: BenchResults): Row[] {
  return [
    ...(results.append ? appendRows(results.append) : []),
    ...(results.growth ? driveRows(results.growth) : []),
    ...(results.lateness ? latenessRows(results.lateness) : []),
    ...(results.memory ? memoryRows(results.memory) : []),
    ...(results.dock ? dockRows(results.dock) : []),
    ...(results.dshOpen ? dshOpenRows(results.dshOpen, results.growth?.at ?? 0) : []),
    ...(results.release ? releaseRows(results.release) : []),
    ...(results.home ? homeRows(results.home) : []),
  ]
}

/**
 * Whether any row of these results cannot tell yet: its median's interval straddles the target.
 * @param results - one job's results (or more).
 * @returns true when another round of repeats is wanted.
 */
export function undecided(results: BenchResults): boolean {
  return rowsOf(results).some((row) => row.status === 'cannot tell')
}

/** The whole of BENCHMARKS.md for one run's results. */
export function renderReport(context: RunContext, results: BenchResults): string {
  const rows = rowsOf(results)
  const judged = rows.filter((row) => row.status === 'met' || row.status === 'not met' || row.status === 'cannot tell')
  const met = judged.filter((row) => row.status === 'met').length
  const untold = judged.filter((row) => row.status === 'cannot tell').length
  const load = (values: readonly number[]) => values.map((value) => value.toFixed(2)).join(' / ')
  const verdict = (status: Status) => (status === 'met' || status === 'not met' ? `**${status}**` : status)
  return [
    '# Benchmarks',
    '',
    `Generated by \`${context.command}\` on ${context.date} at commit \`${context.commit}\`${context.dirty ? ' (with uncommitted changes)' : ''};`,
    `${context.machine}, Node ${context.node}; load average (1/5/15 min) ${load(context.loadBefore)} before, ${load(context.loadAfter)} after;`,
    `${context.seconds.toFixed(0)} s in all.${context.quick ? ' **Quick run.**' : ''} ${met} of ${judged.length} judged targets met${untold > 0 ? `, ${untold} the run cannot tell` : ''}. Do not edit by hand: rerun the command.`,
    '',
    '| Row | Target | Median | Median’s interval (confidence) | Min – max (repeats) | Verdict |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      (row) =>
        `| ${row.row} | ${row.target} | ${row.median} | ${row.interval ?? '—'} | ${row.spread} | ${verdict(row.status)} |`,
    ),
    '',
    METHOD,
  ].join('\n')
}

/**
 * `pnpm run bench [-- --quick] [-- --out FILE] [-- --rerender]`: the side-by-side benchmark of issues 9 and 16. Runs
 * each job in its own Node process (clean heap, --expose-gc), one after the
 * other, repeating every judged quantity (REPEATS), and writes BENCHMARKS.md
 * from the results. See BENCHMARKS.md for what each row measures.
 * @module scripts/bench/main
 */
import { execFileSync, spawn, type ChildProcess, type StdioOptions } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { cpus, loadavg, platform, release, tmpdir, totalmem } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { AppendResult } from './append.ts'
import { READY_LINE } from './barrier.ts'
import type { DockResult } from './dock.ts'
import { GROWTH_SIZES, type GrowthResult } from './growth.ts'
import { LATENESS_SCENARIOS, isTargetedScenario, type LatenessResult } from './lateness.ts'
import type { MemoryResult } from './memory.ts'
import { OVERDUE_LOOPS, type OverdueResult } from './overdue.ts'
import {
  renderReport,
  type BenchResults,
  type JobTiming,
  type LatenessRuns,
  type RunContext,
  type SidePair,
} from './report.ts'
import type { SideResult } from './sides.ts'

const HERE = dirname(fileURLToPath(import.meta.url))
const PROJECT = resolve(HERE, '..', '..')
const WORKER = join(HERE, 'worker.ts')

const args = process.argv.slice(2).filter((arg) => arg !== '--')
const quick = args.includes('--quick')
/** `--rerender`: write the report again from the last run's saved results, without measuring. */
const rerender = args.includes('--rerender')
const LAST_RUN = join(PROJECT, 'node_modules', '.cache', 'loop-bench', 'last-run.json')
const outIndex = args.indexOf('--out')
const outFile = resolve(PROJECT, outIndex === -1 ? 'BENCHMARKS.md' : args[outIndex + 1]!)

/**
 * Independent repeats of every judged quantity. Append: processes, each holding both sides and
 * interleaving their appends, in blocks. Sides (the cold open): pairs of processes (with the plugin,
 * host alone) that open at the same moment. Lateness: rounds of the targeted scenarios, one process
 * each, rotating their order. Overdue (20 loops, and the 1,000-loop burst): pairs of trials,
 * alternating.
 */
const REPEATS = quick
  ? { append: 1, appendBlocks: 3, sides: 1, lateness: 1, overdue: 3, overdueBurst: 1 }
  : { append: 3, appendBlocks: 5, sides: 9, lateness: 4, overdue: 11, overdueBurst: 3 }
const timings: JobTiming[] = []
/** Copies of the grown log the growth job leaves for the side jobs; removed at the end, whatever happens. */
const snapshotRoots: string[] = []

let jobNumber = 0

/** The flags every job's Node needs. */
const WORKER_FLAGS = [
  '--experimental-transform-types',
  '--disable-warning=ExperimentalWarning',
  '--expose-gc',
  '--max-old-space-size=8192',
]

/**
 * Start one job in a child Node.
 * @returns the child, and its JSON result once it exits with 0.
 */
function spawnWorker<T>(
  name: string,
  options: object,
  resultFile: string,
  stdio: StdioOptions,
): { readonly child: ChildProcess; readonly result: Promise<T> } {
  const child = spawn(process.execPath, [...WORKER_FLAGS, WORKER, name, JSON.stringify(options), resultFile], {
    cwd: PROJECT,
    stdio,
  })
  const result = new Promise<T>((resolvePromise, reject) => {
    child.on('error', reject)
    child.on('exit', (code, signal) =>
      code === 0
        ? resolvePromise(JSON.parse(readFileSync(resultFile, 'utf8')) as T)
        : reject(new Error(`bench job ${name} failed (${signal ?? `exit ${code}`})`)),
    )
  })
  return { child, result }
}

/** Log a step's start and end and record how long it took. */
async function timed<T>(name: string, label: string, body: () => Promise<T>): Promise<T> {
  console.log(`[bench] ${label}`)
  const started = performance.now()
  const result = await body()
  const seconds = (performance.now() - started) / 1000
  timings.push({ name, label, seconds })
  console.log(`[bench] ${label} done in ${seconds.toFixed(1)} s`)
  return result
}

/** Run one job in a child Node; resolve with its JSON result. */
function job<T>(name: string, options: object, label = name): Promise<T> {
  jobNumber += 1
  const resultFile = join(scratch, `${jobNumber}-${name}.json`)
  return timed(name, label, () => spawnWorker<T>(name, options, resultFile, 'inherit').result)
}

/**
 * Run both sides of a cold-open pair (row 4) at once: each process prepares (copies its log, boots
 * its host) and prints {@link READY_LINE}; when both have, each gets one line on stdin and opens.
 */
function pairJob(
  pair: number,
  pairs: number,
  snapshot: object,
): Promise<{ readonly with: SideResult; readonly without: SideResult }> {
  jobNumber += 1
  const number = jobNumber
  return timed('side', `cold open, both sides at once (pair ${pair + 1} of ${pairs})`, async () => {
    const sides = [true, false].map((loop) => {
      const resultFile = join(scratch, `${number}-side-${loop ? 'with' : 'without'}.json`)
      const worker = spawnWorker<SideResult>('side', { loop, snapshot }, resultFile, ['pipe', 'pipe', 'inherit'])
      const ready = new Promise<void>((resolve) => {
        createInterface({ input: worker.child.stdout! }).on('line', (line) =>
          line === READY_LINE ? resolve() : console.log(line),
        )
      })
      return { ...worker, ready }
    })
    await Promise.all(sides.map((side) => side.ready))
    for (const side of sides) side.child.stdin!.end('go\n')
    const [withResult, withoutResult] = await Promise.all(sides.map((side) => side.result))
    return { with: withResult!, without: withoutResult! }
  })
}

function git(...gitArgs: string[]): string {
  try {
    return execFileSync('git', gitArgs, { cwd: PROJECT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
  } catch {
    return 'unknown'
  }
}

if (rerender) {
  const saved = JSON.parse(readFileSync(LAST_RUN, 'utf8')) as { context: RunContext; results: BenchResults }
  writeFileSync(outFile, renderReport(saved.context, saved.results))
  console.log(`[bench] rewrote ${outFile} from ${LAST_RUN}`)
  process.exit(0)
}

const scratch = mkdtempSync(join(tmpdir(), 'loop-bench-results-'))
const started = performance.now()
const loadBefore = loadavg()
try {
  const growth = await job<GrowthResult>('growth', { quick })
  snapshotRoots.push(...growth.snapshots.map((snapshot) => snapshot.root))
  const sizes = quick ? GROWTH_SIZES.quick : GROWTH_SIZES.full
  const largestSnapshot = growth.snapshots.reduce((left, right) => (right.at > left.at ? right : left))
  const append: AppendResult[] = []
  for (let run = 0; run < REPEATS.append; run += 1) {
    const options = { snapshots: growth.snapshots, firstAt: sizes.append[0]!, blocks: REPEATS.appendBlocks }
    append.push(
      await job<AppendResult>('append', options, `append, both sides interleaved (${run + 1} of ${REPEATS.append})`),
    )
  }
  const sides: SidePair[] = []
  for (let pair = 0; pair < REPEATS.sides; pair += 1) sides.push(await pairJob(pair, REPEATS.sides, largestSnapshot))
  const scenarios = quick ? LATENESS_SCENARIOS.quick : LATENESS_SCENARIOS.full
  const lateness: LatenessRuns[] = scenarios.map((scenario) => ({ scenario, runs: [] }))
  const runScenario = async (entry: LatenessRuns, round: number, rounds: number) =>
    entry.runs.push(
      await job<LatenessResult>(
        'lateness',
        { scenario: entry.scenario },
        `lateness: ${entry.scenario.label} (${round + 1} of ${rounds})`,
      ),
    )
  for (const entry of lateness.filter(({ scenario }) => !isTargetedScenario(scenario))) await runScenario(entry, 0, 1)
  const targeted = lateness.filter(({ scenario }) => isTargetedScenario(scenario))
  for (let round = 0; round < REPEATS.lateness; round += 1) {
    // Rotate the order, so drift in the machine's state does not always land on the same scenario.
    for (let turn = 0; turn < targeted.length; turn += 1)
      await runScenario(targeted[(round + turn) % targeted.length]!, round, REPEATS.lateness)
  }
  const overdue = await job<OverdueResult>(
    'overdue',
    { rounds: REPEATS.overdue, loops: OVERDUE_LOOPS.row },
    `overdue: ${OVERDUE_LOOPS.row} loops`,
  )
  const overdueBurst = await job<OverdueResult>(
    'overdue',
    { rounds: REPEATS.overdueBurst, loops: OVERDUE_LOOPS.burst },
    `overdue: ${OVERDUE_LOOPS.burst} loops`,
  )
  const memory = await job<MemoryResult>(
    'memory',
    quick ? { activeLoops: 1_000, cycles: 20_000 } : { activeLoops: 1_000, cycles: 100_000 },
  )
  const dock = await job<DockResult>('dock', { projectRoot: PROJECT })
  const context: RunContext = {
    date: new Date().toISOString(),
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 1024 ** 3),
    node: process.version,
    platform: `${platform()} ${release()}`,
    commit: git('rev-parse', '--short', 'HEAD'),
    commitSubject: git('log', '-1', '--format=%s'),
    sourceCommit: git('log', '-1', '--format=%h %s', '--', 'src'),
    dirty: git('status', '--porcelain', '--', 'src', 'scripts', 'package.json') !== '',
    quick,
    loadBefore,
    loadAfter: loadavg(),
    durationSeconds: (performance.now() - started) / 1000,
    command: `pnpm run bench${quick ? ' -- --quick' : ''}`,
    jobs: timings,
  }
  const results: BenchResults = { growth, append, sides, lateness, overdue, overdueBurst, memory, dock }
  mkdirSync(dirname(LAST_RUN), { recursive: true })
  writeFileSync(LAST_RUN, JSON.stringify({ context, results }))
  writeFileSync(outFile, renderReport(context, results))
  console.log(`[bench] wrote ${outFile} in ${context.durationSeconds.toFixed(0)} s`)
} finally {
  rmSync(scratch, { recursive: true, force: true })
  for (const root of snapshotRoots) rmSync(root, { recursive: true, force: true })
}

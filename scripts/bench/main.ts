/**
 * `pnpm run bench [-- --quick] [-- --only job,job] [-- --out FILE] [-- --rerender]`: runs each job in its own Node
 * process (clean heap, --expose-gc), one after the other, and writes BENCHMARKS.md from the results. `--only` runs the
 * named jobs (growth, append, dsh-open, lateness, memory, dock, release, home; append and dsh-open also run growth, whose
 * logs they open) and prints the table, writing a file only with `--out`. `--rerender` writes the report again, without
 * measuring, from the results the last run saved (a partial run saves none).
 * @module scripts/bench/main
 */
import { execFileSync, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, platform, release, tmpdir, totalmem } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { AppendPoint } from './append.ts'
import type { DockResult } from './dock.ts'
import { dshOpenPair, prepareDshOpen, type DshOpen } from './dsh-open.ts'
import { GROWTH_SIZES, type GrowthResult } from './growth.ts'
import { latenessScenarios, type LatenessResult } from './lateness.ts'
import type { MemoryResult } from './memory.ts'
import type { HomeResult, ReleaseResult } from './release.ts'
import { renderReport, undecided, type BenchResults, type RunContext } from './report.ts'
import { untilDecided } from './rounds.ts'

const HERE = dirname(fileURLToPath(import.meta.url))
const PROJECT = resolve(HERE, '..', '..')
const LAST_RUN = join(PROJECT, 'node_modules', '.cache', 'loop-bench', 'last-run.json')

const args = process.argv.slice(2).filter((arg) => arg !== '--')
const option = (name: string) => (args.includes(name) ? (args[args.indexOf(name) + 1] ?? '') : undefined)
const quick = args.includes('--quick')
const only = option('--only')?.split(',')
const out = option('--out')
const outFile = out === undefined && only !== undefined ? undefined : resolve(PROJECT, out ?? 'BENCHMARKS.md')
const wants = (...jobs: string[]) => only === undefined || jobs.some((job) => only.includes(job))

/**
 * Independent repeats of every judged quantity: append processes (each holding both sides) and blocks per size in
 * each; concurrent open pairs in real `dsh web` processes (about 20 s a pair; single pairs range over ±15 points, so 24
 * leave the median about 2 points of noise either side of the 10% line); rounds of the lateness scenarios; same-heap
 * drive blocks (in GROWTH_SIZES).
 */
const REPEATS = quick
  ? { append: 1, appendBlocks: 3, dshOpen: 1, lateness: 1, memoryTrials: 3, release: 1, home: 1 }
  : { append: 3, appendBlocks: 5, dshOpen: 24, lateness: 4, memoryTrials: 5, release: 5, home: 8 }

const WORKER_FLAGS = ['--experimental-transform-types', '--disable-warning=ExperimentalWarning', '--expose-gc']

function git(...gitArgs: string[]): string {
  try {
    return execFileSync('git', gitArgs, { cwd: PROJECT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
  } catch {
    return 'unknown'
  }
}

function write(context: RunContext, results: BenchResults): void {
  const report = renderReport(context, results)
  if (outFile === undefined) console.log(report.slice(0, report.indexOf('## Method')))
  else writeFileSync(outFile, report)
  console.log(`[bench] ${outFile === undefined ? 'printed the table (--only without --out)' : `wrote ${outFile}`}`)
}

if (args.includes('--rerender')) {
  const saved = JSON.parse(readFileSync(LAST_RUN, 'utf8')) as { context: RunContext; results: BenchResults }
  write(saved.context, saved.results)
  process.exit(0)
}

const scratch = mkdtempSync(join(tmpdir(), 'loop-bench-results-'))
let jobNumber = 0

/** One job in a child Node; resolves with its JSON result once it exits with 0. */
function spawnJob<T>(name: string, options: object): Promise<T> {
  const resultFile = join(scratch, `${(jobNumber += 1)}-${name}.json`)
  const flags = [...WORKER_FLAGS, '--max-old-space-size=8192', join(HERE, 'worker.ts')]
  const workerArgs = [...flags, name, JSON.stringify(options), resultFile]
  const child = spawn(process.execPath, workerArgs, { cwd: PROJECT, stdio: 'inherit' })
  return new Promise<T>((resolveResult, reject) => {
    child.on('error', reject)
    child.on('exit', (code, signal) =>
      code === 0
        ? resolveResult(JSON.parse(readFileSync(resultFile, 'utf8')) as T)
        : reject(new Error(`bench job ${name} failed (${signal ?? `exit ${code}`})`)),
    )
  })
}

async function step<T>(label: string, body: () => Promise<T>): Promise<T> {
  console.log(`[bench] ${label}`)
  const started = performance.now()
  const result = await body()
  console.log(`[bench] ${label} done in ${((performance.now() - started) / 1000).toFixed(1)} s`)
  return result
}

const job = <T>(name: string, options: object, label = name) => step(label, () => spawnJob<T>(name, options))

/** Rounds of a section's repeats at most: one more, then another, while a row cannot tell (a quick run: one). */
const ROUNDS = quick ? 1 : 3

/**
 * A section measured in rounds until its rows decide ({@link untilDecided}), its samples joined by `merge`;
 * judged beside `context`, the results its rows read besides their own (row 6 is judged only at the size growth reached).
 */
const decided = <K extends keyof BenchResults>(
  key: K,
  measure: () => Promise<NonNullable<BenchResults[K]>>,
  merge: (earlier: NonNullable<BenchResults[K]>, later: NonNullable<BenchResults[K]>) => NonNullable<BenchResults[K]>,
  context: BenchResults = {},
) =>
  untilDecided(
    measure,
    merge,
    (result) => undecided({ ...context, [key]: result }),
    ROUNDS,
    (round) => console.log(`[bench] ${key}: a row cannot tell yet, so round ${round} of at most ${ROUNDS}`),
  )

const started = performance.now()
const loadBefore = loadavg()
let growth: GrowthResult | undefined
try {
  const results: { -readonly [Key in keyof BenchResults]: BenchResults[Key] } = {}
  if (wants('growth', 'append', 'dsh-open')) {
    growth = await decided(
      'growth',
      () => job<GrowthResult>('growth', quick ? GROWTH_SIZES.quick : GROWTH_SIZES.full),
      (earlier, later) => {
        // Rows 1 and 6 open the first round's logs: a later round adds its drive blocks, and its logs go.
        for (const snapshot of later.snapshots) {
          rmSync(snapshot.root, { recursive: true, force: true })
          rmSync(snapshot.cwd, { recursive: true, force: true })
        }
        return { ...earlier, blocks: [...earlier.blocks, ...later.blocks] }
      },
    )
    results.growth = growth
  }
  if (wants('append'))
    results.append = await decided(
      'append',
      async () => {
        const append: AppendPoint[][] = []
        for (let run = 1; run <= REPEATS.append; run += 1) {
          const options = { firstAt: 1_000, snapshots: growth!.snapshots, blocks: REPEATS.appendBlocks }
          const label = `append, both sides interleaved (${run} of ${REPEATS.append})`
          append.push(await job<AppendPoint[]>('append', options, label))
        }
        return append
      },
      (earlier, later) => [...earlier, ...later],
    )
  if (wants('dsh-open')) {
    const rig = await step('dsh web homes for row 6 (pack, plugin add)', prepareDshOpen)
    try {
      const largest = growth!.snapshots.at(-1)!
      results.dshOpen = await decided(
        'dshOpen',
        async () => {
          const pairs: { with: DshOpen; without: DshOpen }[] = []
          for (let pair = 1; pair <= REPEATS.dshOpen; pair += 1) {
            // Alternated: which side's requests go out first.
            const first = pair % 2 === 1 ? 'with' : 'without'
            const label = `dsh web open pair ${pair} of ${REPEATS.dshOpen}`
            const result = await step(label, () => dshOpenPair(rig, largest, first))
            console.log(`  with the plugin ${result.with.cpu} ms CPU, host alone ${result.without.cpu} ms CPU`)
            pairs.push(result)
          }
          return pairs
        },
        (earlier, later) => [...earlier, ...later],
        { growth: growth! },
      )
    } finally {
      await rig.close()
    }
  }
  if (wants('lateness'))
    results.lateness = await decided(
      'lateness',
      async () => {
        const lateness: LatenessResult[] = []
        const scenarios = latenessScenarios(quick)
        for (let round = 0; round < REPEATS.lateness; round += 1) {
          // Rotated, so drift in the machine's state does not always land on the same scenario.
          for (let turn = 0; turn < scenarios.length; turn += 1) {
            const scenario = scenarios[(round + turn) % scenarios.length]!
            const label = `lateness: ${scenario.label} (${round + 1} of ${REPEATS.lateness})`
            lateness.push(await job<LatenessResult>('lateness', scenario, label))
          }
        }
        return lateness
      },
      (earlier, later) => [...earlier, ...later],
    )
  if (wants('memory')) {
    const options = { activeLoops: 1_000, cycles: quick ? 20_000 : 100_000, trials: REPEATS.memoryTrials }
    results.memory = await decided(
      'memory',
      () => job<MemoryResult>('memory', options),
      // The growth over every cycle is one measurement: the first round's.
      (earlier, later) => ({
        ...earlier,
        perLoopBeyondRecord: [...earlier.perLoopBeyondRecord, ...later.perLoopBeyondRecord],
      }),
    )
  }
  if (wants('dock'))
    results.dock = await decided(
      'dock',
      () => job<DockResult>('dock', { projectRoot: PROJECT }),
      (earlier, later) => ({
        layouts: earlier.layouts.map((layout, index) => ({
          label: layout.label,
          repaints: [...layout.repaints, ...later.layouts[index]!.repaints],
        })),
        // Anything either round left running counts.
        left: {
          intervals: earlier.left.intervals + later.left.intervals,
          timeouts: earlier.left.timeouts + later.left.timeouts,
          frames: earlier.left.frames + later.left.frames,
          documentListeners: earlier.left.documentListeners + later.left.documentListeners,
        },
      }),
    )
  if (wants('release')) {
    const options = { sizes: quick ? [10_000, 100_000] : [100_000, 1_000_000], repeats: REPEATS.release }
    results.release = await decided(
      'release',
      () => job<ReleaseResult>('release', options),
      (earlier, later) => ({
        logs: earlier.logs,
        runs: [...earlier.runs, ...later.runs],
        capped: [...earlier.capped, ...later.capped],
      }),
    )
  }
  if (wants('home')) {
    const options = { sessions: quick ? 200 : 2_000, logBytes: 75_000, repeats: REPEATS.home }
    results.home = await decided(
      'home',
      () => job<HomeResult>('home', options),
      (earlier, later) => ({ ...earlier, runs: [...earlier.runs, ...later.runs] }),
    )
  }
  const cpu = cpus()
  const command = `pnpm run bench${quick || only ? ' --' : ''}${quick ? ' --quick' : ''}${only ? ` --only ${only.join(',')}` : ''}`
  const context: RunContext = {
    date: new Date().toISOString(),
    machine: `${cpu[0]?.model ?? 'unknown CPU'}, ${cpu.length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, ${platform()} ${release()}`,
    node: process.version,
    commit: git('rev-parse', '--short', 'HEAD'),
    dirty: git('status', '--porcelain', '--', 'src', 'scripts', 'package.json') !== '',
    command,
    quick,
    loadBefore,
    loadAfter: loadavg(),
    seconds: (performance.now() - started) / 1000,
  }
  if (only === undefined) {
    mkdirSync(dirname(LAST_RUN), { recursive: true })
    writeFileSync(LAST_RUN, JSON.stringify({ context, results }))
  }
  write(context, results)
} finally {
  rmSync(scratch, { recursive: true, force: true })
  for (const snapshot of growth?.snapshots ?? []) {
    rmSync(snapshot.root, { recursive: true, force: true })
    rmSync(snapshot.cwd, { recursive: true, force: true })
  }
}

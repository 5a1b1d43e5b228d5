/**
 * `pnpm run bench [-- --quick] [-- --out FILE] [-- --rerender]`: the side-by-side benchmark of issue 9. Runs
 * each job in its own Node process (clean heap, --expose-gc), one after the
 * other, and writes BENCHMARKS.md from the results. See BENCHMARKS.md for
 * what each row measures.
 * @module scripts/bench/main
 */
import { execFileSync, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, platform, release, tmpdir, totalmem } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { DockResult } from './dock.ts'
import type { FlatnessResult, GrowthResult } from './growth.ts'
import type { LatenessResult } from './lateness.ts'
import type { MemoryResult } from './memory.ts'
import { renderReport, type BenchResults, type RunContext } from './report.ts'
import type { ResumeResult } from './resume.ts'

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
const scratch = mkdtempSync(join(tmpdir(), 'loop-bench-results-'))

/** Run one job in a child Node with the flags every job needs; resolve with its JSON result. */
function job<T>(name: string, options: Record<string, unknown>): Promise<T> {
  const resultFile = join(scratch, `${name}.json`)
  const flags = ['--experimental-transform-types', '--disable-warning=ExperimentalWarning', '--expose-gc', '--max-old-space-size=8192']
  console.log(`[bench] ${name}`)
  const started = performance.now()
  return new Promise<T>((resolvePromise, reject) => {
    const child = spawn(process.execPath, [...flags, WORKER, name, JSON.stringify(options), resultFile], { cwd: PROJECT, stdio: 'inherit' })
    child.on('error', reject)
    child.on('exit', (code, signal) => {
      if (code !== 0) return reject(new Error(`bench job ${name} failed (${signal ?? `exit ${code}`})`))
      console.log(`[bench] ${name} done in ${((performance.now() - started) / 1000).toFixed(1)} s`)
      resolvePromise(JSON.parse(readFileSync(resultFile, 'utf8')) as T)
    })
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

const started = performance.now()
const loadBefore = loadavg()
try {
  const growth = await job<GrowthResult>('growth', { quick })
  const flatness = [await job<FlatnessResult>('flatness', { quick, loop: true }), await job<FlatnessResult>('flatness', { quick, loop: false })] as const
  const resume = await job<ResumeResult>('resume', { root: growth.persisted.root, sessionId: growth.persisted.sessionId, events: growth.persisted.events, rounds: quick ? 3 : 5 })
  rmSync(growth.persisted.root, { recursive: true, force: true })
  const lateness = await job<LatenessResult[]>('lateness', { quick })
  const memory = await job<MemoryResult>('memory', quick ? { activeLoops: 1_000, cycles: 20_000 } : { activeLoops: 1_000, cycles: 100_000 })
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
  }
  const results: BenchResults = { growth, flatness, resume, lateness, memory, dock }
  mkdirSync(dirname(LAST_RUN), { recursive: true })
  writeFileSync(LAST_RUN, JSON.stringify({ context, results }))
  writeFileSync(outFile, renderReport(context, results))
  console.log(`[bench] wrote ${outFile} in ${context.durationSeconds.toFixed(0)} s`)
} finally {
  rmSync(scratch, { recursive: true, force: true })
}

/**
 * One benchmark job in its own process (clean heap, its own GC and JIT state):
 * `node --expose-gc worker.ts <job> <json options> <result file>`.
 * Progress goes to stdout; the result is written as JSON to the result file.
 * A new job is one entry in {@link JOBS} (and one step in main.ts's plan).
 * @module scripts/bench/worker
 */
import { writeFileSync } from 'node:fs'
import { runAppend, type AppendOptions } from './append.ts'
import { signalReady } from './barrier.ts'
import { runDock } from './dock.ts'
import { GROWTH_SIZES, runGrowth } from './growth.ts'
import { runLateness, type LatenessScenario } from './lateness.ts'
import { runMemory } from './memory.ts'
import { runOverdue } from './overdue.ts'
import { runSide, type SideOptions } from './sides.ts'

type Log = (line: string) => void

/** Every job by name: its options (JSON from main.ts) to its JSON-serializable result. */
const JOBS: Record<string, (options: never, log: Log) => Promise<unknown>> = {
  growth: (options: { quick: boolean }, log) => runGrowth(options.quick ? GROWTH_SIZES.quick : GROWTH_SIZES.full, log),
  append: (options: AppendOptions, log) => runAppend(options, log),
  side: (options: SideOptions, log) => runSide(options, log, signalReady),
  lateness: (options: { scenario: LatenessScenario }, log) => runLateness(options.scenario, log),
  overdue: (options: { rounds: number; loops: number }, log) => runOverdue(options.rounds, options.loops, log),
  memory: (options: { activeLoops: number; cycles: number }, log) =>
    runMemory(options.activeLoops, options.cycles, log),
  dock: (options: { projectRoot: string }, log) => runDock(options.projectRoot, log),
}

const [job, rawOptions, resultFile] = process.argv.slice(2)
const run = JOBS[job ?? '']
if (run === undefined) throw new Error(`unknown bench job ${String(job)}`)
writeFileSync(
  resultFile!,
  JSON.stringify(await run(JSON.parse(rawOptions ?? '{}') as never, (line) => console.log(line))),
)
// Hosts are disposed; exit even if a library left a handle open.
process.exit(0)

/**
 * One bench job in a process of its own (clean heap, its own GC and JIT state):
 * `node --expose-gc worker.ts <job> <json options> <result file>`. Progress goes to stdout, the JSON result to the file.
 * @module scripts/bench/worker
 */
import { writeFileSync } from 'node:fs'
import { runAppend } from './append.ts'
import { runDock } from './dock.ts'
import { runGrowth } from './growth.ts'
import { runLateness } from './lateness.ts'
import { runMemory } from './memory.ts'
import { runHomeRelease, runRelease } from './release.ts'

type Log = (line: string) => void

const JOBS: Record<string, (options: never, log: Log) => Promise<unknown>> = {
  growth: runGrowth,
  append: runAppend,
  lateness: runLateness,
  memory: runMemory,
  release: runRelease,
  home: runHomeRelease,
  dock: (options: { projectRoot: string }, log: Log) => runDock(options.projectRoot, log),
}

const [job, options, resultFile] = process.argv.slice(2)
const run = JOBS[job ?? '']
if (run === undefined) throw new Error(`unknown bench job ${String(job)}`)
writeFileSync(resultFile!, JSON.stringify(await run(JSON.parse(options ?? '{}') as never, console.log)))
// Hosts are disposed; exit even if a library left a handle open.
process.exit(0)

/**
 * One benchmark job in its own process (clean heap, its own GC state):
 * `node --expose-gc worker.ts <job> <json options> <result file>`.
 * Progress goes to stdout; the result is written as JSON to the result file.
 * @module scripts/bench/worker
 */
import { writeFileSync } from 'node:fs'
import { runDock } from './dock.ts'
import { GROWTH_SIZES, runFlatness, runGrowth } from './growth.ts'
import { LATENESS_SCENARIOS, runLateness, type LatenessResult } from './lateness.ts'
import { runMemory } from './memory.ts'
import { runResume } from './resume.ts'

const [job, rawOptions, resultFile] = process.argv.slice(2)
const options = JSON.parse(rawOptions ?? '{}') as {
  quick?: boolean
  root?: string
  sessionId?: string
  events?: number
  rounds?: number
  activeLoops?: number
  cycles?: number
  projectRoot?: string
  loop?: boolean
}
const log = (line: string) => console.log(line)

async function run(): Promise<unknown> {
  switch (job) {
    case 'growth':
      return runGrowth(options.quick === true ? GROWTH_SIZES.quick : GROWTH_SIZES.full, log)
    case 'flatness': {
      const sizes = options.quick === true ? GROWTH_SIZES.quick.append : GROWTH_SIZES.full.append
      return runFlatness(options.loop === true, [sizes[0]!, sizes.at(-1)!], log)
    }
    case 'resume':
      return runResume(options.root!, options.sessionId!, options.events!, options.rounds!, log)
    case 'lateness': {
      const results: LatenessResult[] = []
      for (const scenario of options.quick === true ? LATENESS_SCENARIOS.quick : LATENESS_SCENARIOS.full) results.push(await runLateness(scenario, log))
      return results
    }
    case 'memory':
      return runMemory(options.activeLoops!, options.cycles!, log)
    case 'dock':
      return runDock(options.projectRoot!, log)
    default:
      throw new Error(`unknown bench job ${String(job)}`)
  }
}

writeFileSync(resultFile!, JSON.stringify(await run()))
// Hosts are disposed; exit even if a library left a handle open.
process.exit(0)

/**
 * The runtime's promises (SPEC.md §9 "What `loop` promises") over many seeded runs of the simulated world
 * (`world.ts`), judged by the reference model (`model.ts`). CI runs seeds 1–100;
 * `SIM_SEEDS=<n>` runs more, `SIM_SEED=<n>` replays one (`SIM_TRACE=1` prints its trace live),
 * `SIM_SHRINK=<runs>` shrinks a failing seed (`shrink.ts`) and `SIM_CHOICES=<file>` replays what it wrote.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { failsLike, shrink } from './shrink.ts'
import { simulate, type SimResult } from './world.ts'

const replay = process.env['SIM_SEED']
const choicesFile = process.env['SIM_CHOICES']
const sources: (number | readonly number[])[] =
  choicesFile !== undefined
    ? [JSON.parse(readFileSync(choicesFile, 'utf8')) as number[]]
    : replay !== undefined
      ? [Number(replay)]
      : Array.from({ length: Number(process.env['SIM_SEEDS'] ?? 100) }, (_, index) => index + 1)

/** How a failing run is told: its seed, the invariant, the trace up to it; shrunk first when `SIM_SHRINK` asks. */
async function failure(result: SimResult): Promise<string> {
  const name =
    typeof result.source === 'number'
      ? `seed ${result.source} (replay: SIM_SEED=${result.source})`
      : `choices of ${choicesFile} (replay: SIM_CHOICES=${choicesFile})`
  let shown = result
  let shrunk = ''
  const budget = Number(process.env['SIM_SHRINK'] ?? 0)
  if (budget > 0) {
    shown = await shrink(result, 100, failsLike(result), budget)
    const file = join(tmpdir(), `loop-sim-${typeof result.source === 'number' ? result.source : 'choices'}.json`)
    const last = shown.choices.findLastIndex((choice) => choice !== 0)
    writeFileSync(file, JSON.stringify(shown.choices.slice(0, last + 1)))
    shrunk = `\nshrunk to ${nonzero(shown.choices)} of ${nonzero(result.choices)} choices (replay: SIM_CHOICES=${file}): ${shown.violations[0]}`
  }
  const broke = shown.trace.findIndex((line) => line.includes(' VIOLATION '))
  const tail = shown.trace.slice(Math.max(0, broke - 39), broke + 1).join('\n')
  return `${name}: ${result.violations[0]}${shrunk}\n--- the trace up to the violation ---\n${tail}`
}

/** How many choices are not 0: what shrinking lowers. */
function nonzero(choices: readonly number[]): number {
  return choices.filter((choice) => choice !== 0).length
}

describe('the simulated world', () => {
  it(`keeps every promise over ${sources.length === 1 ? 'one run' : `${sources.length} seeds`}`, async () => {
    const totals: Record<string, number> = {}
    for (const source of sources) {
      const result = await simulate(source)
      for (const [key, value] of Object.entries(result.stats)) totals[key] = (totals[key] ?? 0) + value
      if (result.violations.length > 0) expect.fail(await failure(result))
    }
    // What the seeds reached, so a change that makes the world tamer shows.
    if (sources.length >= 10) {
      expect(totals['sends']).toBeGreaterThan(50 * sources.length)
      expect(totals['reloads']).toBeGreaterThan(sources.length)
      expect(totals['jumps']).toBeGreaterThan(sources.length)
      expect(totals['crashes']).toBeGreaterThan(sources.length / 2)
      expect(totals['forks']).toBeGreaterThan(sources.length / 4)
      expect(totals['replacements']).toBeGreaterThan(sources.length / 4)
    }
  }, 600_000)

  it('replays a seed: the same seed, or its choices played back, gives the same trace', async () => {
    const first = await simulate(7, 40)
    const [again, played] = [await simulate(7, 40), await simulate(first.choices, 40)]
    expect(again.trace).toEqual(first.trace)
    expect(played.trace).toEqual(first.trace)
    expect(first.trace.length).toBeGreaterThan(100)
  })

  it('shrinks a run to far fewer choices that still fail the same way', async () => {
    // No seed breaks a promise of the code as it is: "it crashed" stands in for a broken invariant.
    const crashed = (result: SimResult) => result.stats.crashes > 0
    const run = await simulate(1, 40)
    expect(crashed(run)).toBe(true)
    const small = await shrink(run, 40, crashed, 40)
    expect(crashed(small)).toBe(true)
    expect(nonzero(small.choices)).toBeLessThan(nonzero(run.choices) / 10)
    expect(small.trace.filter((line) => / call \d+: /.test(line)).length).toBeLessThan(
      run.trace.filter((line) => / call \d+: /.test(line)).length,
    )
  })

  it('tells one failure from another by its invariant, not its numbers', () => {
    const run = (violations: string[]) => ({ violations }) as unknown as SimResult
    const early = failsLike(run(['step 3: a heartbeat of loop_ab12 before its next_at (12 ms early)']))
    expect(early(run(['step 9: a heartbeat of loop_cd34 before its next_at (400 ms early)']))).toBe(true)
    expect(early(run(['step 9: two heartbeats of loop_cd34 wait in the inbox']))).toBe(false)
    expect(early(run([]))).toBe(false)
  })
})

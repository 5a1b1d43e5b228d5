/**
 * The runtime's promises (SPEC.md §9 "What `loop` promises") over many seeded runs of the simulated world
 * (`world.ts`), judged by the reference model (`model.ts`). CI runs seeds 1–100;
 * `SIM_SEEDS=<n>` runs more, `SIM_SEED=<n>` replays one (`SIM_TRACE=1` prints its trace live), and
 * `SIM_SHRINK=<n>` shrinks a failing seed's choices with fast-check and prints the smallest run.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { simulate } from './world.ts'

const replay = process.env['SIM_SEED']
const seeds =
  replay !== undefined
    ? [Number(replay)]
    : Array.from({ length: Number(process.env['SIM_SEEDS'] ?? 100) }, (_, index) => index + 1)

describe('the simulated world', () => {
  it(`keeps every promise over ${seeds.length === 1 ? `seed ${seeds[0]}` : `${seeds.length} seeds`}`, async () => {
    const totals: Record<string, number> = {}
    for (const seed of seeds) {
      const result = await simulate(seed)
      for (const [key, value] of Object.entries(result.stats)) totals[key] = (totals[key] ?? 0) + value
      if (result.violations.length > 0)
        expect.fail(
          `seed ${seed} (replay: SIM_SEED=${seed}): ${result.violations[0]}\n--- the trace's tail ---\n${result.trace.slice(-40).join('\n')}`,
        )
    }
    if (process.env['SIM_TOTALS'] === '1') console.log(totals)
    // What the seeds reached, so a change that makes the world tamer shows.
    if (seeds.length >= 10) {
      expect(totals['sends']).toBeGreaterThan(50 * seeds.length)
      expect(totals['reloads']).toBeGreaterThan(seeds.length)
      expect(totals['jumps']).toBeGreaterThan(seeds.length)
      expect(totals['crashes']).toBeGreaterThan(seeds.length / 2)
      expect(totals['forks']).toBeGreaterThan(seeds.length / 4)
    }
  }, 600_000)

  it('replays a seed: the same seed, or its choices played back, gives the same trace', async () => {
    const first = await simulate(7, 40)
    const [again, played] = [await simulate(7, 40), await simulate(first.choices, 40)]
    expect(again.trace).toEqual(first.trace)
    expect(played.trace).toEqual(first.trace)
    expect(first.trace.length).toBeGreaterThan(100)
  })

  const shrinking = process.env['SIM_SHRINK']
  if (shrinking !== undefined)
    it(`shrinks seed ${shrinking}'s failure to its fewest, smallest choices`, async () => {
      const failed = await simulate(Number(shrinking))
      expect(failed.violations, `seed ${shrinking} keeps every promise`).not.toEqual([])
      const choices = fc.array(fc.integer({ min: 0, max: 2 ** 32 - 1 }), { maxLength: failed.choices.length })
      const keeps = fc.asyncProperty(choices, async (list) => (await simulate(list)).violations.length === 0)
      // The smallest failing list found within the time given (SIM_SHRINK_MINUTES, 10 unless set).
      const minutes = Number(process.env['SIM_SHRINK_MINUTES'] ?? 10)
      const { counterexample } = await fc.check(keeps, {
        examples: [[failed.choices]],
        numRuns: 1,
        interruptAfterTimeLimit: minutes * 60_000,
      })
      const list = counterexample?.[0] ?? failed.choices
      const smallest = await simulate(list)
      console.log(
        `seed ${shrinking}: ${failed.choices.length} choices shrunk to ${list.length}` +
          `\n${smallest.violations[0]}\n--- its trace ---\n${smallest.trace.join('\n')}`,
      )
      expect(smallest.violations).not.toEqual([])
    }, 3_600_000)
})

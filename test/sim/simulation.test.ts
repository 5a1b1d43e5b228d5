/**
 * The runtime's promises (SPEC.md §9 "What `loop` promises") over many seeded runs of the simulated world
 * (`world.ts`), judged by the reference model (`model.ts`). CI runs seeds 1–100;
 * `SIM_SEEDS=<n>` runs more, `SIM_SEED=<n>` replays one (`SIM_TRACE=1` prints its trace live).
 */
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
})

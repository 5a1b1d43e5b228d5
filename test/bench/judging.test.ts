/**
 * How the benchmark judges a target (BENCHMARKS.md, Method): on a distribution-free confidence
 * interval of the median, from order statistics, as Go's benchstat does; a row that cannot tell
 * is measured again, in rounds up to a cap.
 */
import { describe, expect, it } from 'vitest'
import { verdictOf } from '../../scripts/bench/report.ts'
import { untilDecided } from '../../scripts/bench/rounds.ts'
import { medianInterval } from '../../scripts/bench/stats.ts'

const ranks = (count: number) => Array.from({ length: count }, (_, index) => index + 1)

describe('medianInterval', () => {
  it('takes the k-th smallest to the k-th largest repeat, k the widest with 95% coverage', () => {
    // benchstat's figure for 24 repeats: the 7th to the 18th.
    expect(medianInterval(ranks(24).reverse())).toEqual({ low: 7, high: 18, confidence: expect.closeTo(0.9773, 4) })
    expect(medianInterval(ranks(10))).toEqual({ low: 2, high: 9, confidence: expect.closeTo(0.9785, 4) })
    expect(medianInterval(ranks(6))).toEqual({ low: 1, high: 6, confidence: expect.closeTo(0.9688, 4) })
  })

  it('with too few repeats for 95%, gives min to max and says how sure that is', () => {
    expect(medianInterval([3, 1, 2, 5, 4])).toEqual({ low: 1, high: 5, confidence: 0.9375 })
    expect(medianInterval([2, 1, 3])).toEqual({ low: 1, high: 3, confidence: 0.75 })
    expect(medianInterval([7])).toEqual({ low: 7, high: 7, confidence: 0 })
  })
})

describe('verdictOf', () => {
  const atMost = (limit: number) => (value: number) => value <= limit
  it('decides only when the whole interval is on one side of the target', () => {
    expect(verdictOf(medianInterval(ranks(24)), atMost(20))).toBe('met')
    expect(verdictOf(medianInterval(ranks(24)), atMost(5))).toBe('not met')
    // The median (12.5) meets the target, but its interval straddles it: the run cannot tell.
    expect(verdictOf(medianInterval(ranks(24)), atMost(15))).toBe('cannot tell')
    // One outlier among 24 moves the min–max, not the interval: still met.
    expect(verdictOf(medianInterval([...ranks(23), 1_000]), atMost(20))).toBe('met')
  })
})

describe('untilDecided', () => {
  const atMost15 = (samples: readonly number[]) => verdictOf(medianInterval(samples), (value) => value <= 15)
  const rounds = (batches: readonly (readonly number[])[], cap: number) => {
    const told: number[] = []
    let next = 0
    const result = untilDecided(
      async () => batches[next++]!,
      (earlier, later) => [...earlier, ...later],
      (samples) => atMost15(samples) === 'cannot tell',
      cap,
      (round) => void told.push(round),
    )
    return result.then((samples) => ({ samples, told, verdict: atMost15(samples) }))
  }

  it('decides a clear row in one round', async () => {
    expect(await rounds([[1, 2, 3, 4, 5, 6]], 3)).toEqual({ samples: [1, 2, 3, 4, 5, 6], told: [], verdict: 'met' })
  })

  it('repeats a straddling row, and stops as soon as it decides', async () => {
    // 6 repeats from 10 to 16 straddle 15 (min to max); with six more below, the 3rd to the 10th of 12 is within.
    const result = await rounds([[10, 11, 12, 13, 14, 16], [1, 2, 3, 4, 5, 6], [99]], 3)
    expect(result.told).toEqual([2])
    expect(result.verdict).toBe('met')
    expect(result.samples).toHaveLength(12)
  })

  it('says "cannot tell" only once the cap of rounds is reached', async () => {
    const straddling = [10, 12, 14, 16, 18, 20]
    const result = await rounds([straddling, straddling, straddling, straddling], 3)
    expect(result.told).toEqual([2, 3])
    expect(result.samples).toHaveLength(18)
    expect(result.verdict).toBe('cannot tell')
  })
})

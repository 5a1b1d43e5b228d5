/**
 * Statistics and timing shared by the bench jobs.
 * @module scripts/bench/stats
 */

/** Quantile of a non-empty list by linear interpolation between closest ranks. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((left, right) => left - right)
  const position = (sorted.length - 1) * q
  const lower = Math.floor(position)
  return sorted[lower]! + (sorted[Math.ceil(position)]! - sorted[lower]!) * (position - lower)
}

export const median = (values: readonly number[]): number => quantile(values, 0.5)

/** A quantity measured in independent repeats: the median a target is judged on, and its spread. */
export interface Spread {
  readonly median: number
  readonly min: number
  readonly max: number
  readonly count: number
}

export function spread(samples: readonly number[]): Spread {
  return { median: median(samples), min: Math.min(...samples), max: Math.max(...samples), count: samples.length }
}

/** A distribution-free interval of the median: the k-th smallest to the k-th largest repeat, and its confidence. */
export interface MedianInterval {
  readonly low: number
  readonly high: number
  /** The interval's coverage: 0.95 or more when the repeats allow it, else the widest's (min to max). */
  readonly confidence: number
}

/**
 * The median's confidence interval from order statistics, as Go's benchstat reports it: for n
 * repeats, the largest k whose interval [x(k), x(n+1-k)] still covers the median with at least
 * `confidence` (the binomial B(n, ½) below k on each side); with too few repeats for that, the
 * widest there is, min to max, with the confidence it has.
 * @param samples - the repeats.
 * @param confidence - the coverage asked for.
 * @returns the interval.
 */
export function medianInterval(samples: readonly number[], confidence = 0.95): MedianInterval {
  const sorted = [...samples].sort((left, right) => left - right)
  const n = sorted.length
  // P(B ≤ j) for B ~ Binomial(n, ½), built up term by term.
  let term = 0.5 ** n
  let below = term
  let k = 1
  // Widening by one rank on each side: coverage = 1 − 2·P(B ≤ k − 1).
  while (k < n + 1 - k) {
    const nextBelow = below + (term *= (n - k + 1) / k)
    if (1 - 2 * nextBelow < confidence) break
    below = nextBelow
    k += 1
  }
  return { low: sorted[k - 1]!, high: sorted[n - k]!, confidence: 1 - 2 * below }
}

/** Full GCs (every bench worker runs with --expose-gc). */
export function collectGarbage(): void {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc === undefined) throw new Error('run the bench workers with --expose-gc')
  gc()
  gc()
}

/** Wall ms of a body. */
export async function time(body: () => unknown): Promise<number> {
  const start = performance.now()
  await body()
  return performance.now() - start
}

/** Wall ms of a synchronous body. */
export function timeSync(body: () => unknown): number {
  const start = performance.now()
  body()
  return performance.now() - start
}

/** Process CPU ms (user + system, every thread, so GC helpers count) since `start`. */
export function cpuSince(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start)
  return (used.user + used.system) / 1000
}

/** Epoch ms with sub-millisecond resolution. */
export const preciseNow = (): number => performance.timeOrigin + performance.now()

/** Run `first` then `second`, or the other way round when `swap`; resolve with their results in argument order. */
export async function alternate<T>(swap: boolean, first: () => Promise<T>, second: () => Promise<T>): Promise<[T, T]> {
  if (!swap) return [await first(), await second()]
  const later = await second()
  return [await first(), later]
}

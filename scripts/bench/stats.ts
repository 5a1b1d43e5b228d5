/**
 * Small statistics and timing helpers shared by the benchmark rows.
 * @module scripts/bench/stats
 */

/** Median of a non-empty list. */
export function median(values: readonly number[]): number {
  return quantile(values, 0.5)
}

/**
 * Quantile by linear interpolation between closest ranks.
 * @param values - samples (not modified).
 * @param q - 0..1.
 * @returns the quantile.
 */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((left, right) => left - right)
  const position = (sorted.length - 1) * q
  const lower = Math.floor(position)
  const upper = Math.ceil(position)
  return sorted[lower]! + (sorted[upper]! - sorted[lower]!) * (position - lower)
}

/** Largest sample. */
export function max(values: readonly number[]): number {
  return values.reduce((left, right) => Math.max(left, right), Number.NEGATIVE_INFINITY)
}

/** Collect garbage when node runs with --expose-gc (every bench worker does). */
export function collectGarbage(): void {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc === undefined) throw new Error('run the bench workers with --expose-gc')
  gc()
  gc()
}

/**
 * Time a synchronous or asynchronous body in milliseconds.
 * @param body - work to time.
 * @returns elapsed ms.
 */
export async function time(body: () => unknown): Promise<number> {
  const start = performance.now()
  await body()
  return performance.now() - start
}

/** Time a synchronous body in milliseconds. */
export function timeSync(body: () => unknown): number {
  const start = performance.now()
  body()
  return performance.now() - start
}

/** Process CPU time (user + system, all threads) of a synchronous body, in milliseconds. */
export function cpuTimeSync(body: () => unknown): number {
  const start = process.cpuUsage()
  body()
  const used = process.cpuUsage(start)
  return (used.user + used.system) / 1000
}

/** Wall-clock now in epoch milliseconds with sub-millisecond resolution. */
export function preciseNow(): number {
  return performance.timeOrigin + performance.now()
}

/** A quantity measured in independent repeats: its median (what a target is judged on) and its spread. */
export interface Spread {
  readonly median: number
  readonly min: number
  readonly max: number
  /** Every repeat's value, in run order. */
  readonly samples: readonly number[]
}

/** The {@link Spread} of a non-empty list of repeats. */
export function spread(samples: readonly number[]): Spread {
  return { median: median(samples), min: Math.min(...samples), max: Math.max(...samples), samples: [...samples] }
}

/** Process CPU time (user + system, all threads) of an asynchronous body, in milliseconds. */
export async function cpuTime(body: () => unknown): Promise<number> {
  const start = process.cpuUsage()
  await body()
  const used = process.cpuUsage(start)
  return (used.user + used.system) / 1000
}

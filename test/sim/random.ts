/**
 * The simulation's one source of chance: a seeded generator (mulberry32), so a seed names a run;
 * or a list of choices played back, so fast-check can shrink a failing run to its fewest and
 * smallest choices. Every draw leans the same way as its choice shrinks toward 0: no fault, the
 * lowest number, the first option.
 */

/** One 32-bit choice as a float in [0, 1). */
const SCALE = 4_294_967_296

/** Draws from one seed, or from a list of choices; the same source draws the same sequence. */
export class Random {
  private state: number
  private readonly choices: readonly number[] | undefined
  /** Every draw so far, as a choice: a seeded run played back from these is the same run. */
  readonly drawn: number[] = []

  /** @param source - a 32-bit seed, or the choices to play back (0 once they run out). */
  constructor(source: number | readonly number[]) {
    this.state = typeof source === 'number' ? source >>> 0 : 0
    this.choices = typeof source === 'number' ? undefined : source
  }

  /** A float in [0, 1). */
  next(): number {
    const choice = this.choices === undefined ? this.mulberry32() : (this.choices[this.drawn.length] ?? 0)
    this.drawn.push(choice)
    return choice / SCALE
  }

  private mulberry32(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0
    let t = this.state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return (t ^ (t >>> 14)) >>> 0
  }

  /** True with probability `p`; a choice of 0 is false. */
  chance(p: number): boolean {
    return this.next() >= 1 - p
  }

  /** An integer in [low, high]. */
  int(low: number, high: number): number {
    return low + Math.floor(this.next() * (high - low + 1))
  }

  /** One of `items` (not empty). */
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!
  }

  /** One key of `weights`, drawn by weight. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
    const entries = Object.entries(weights) as [K, number][]
    let left = this.next() * entries.reduce((sum, [, weight]) => sum + weight, 0)
    for (const [key, weight] of entries) {
      left -= weight
      if (left < 0) return key
    }
    return entries.at(-1)![0]
  }
}

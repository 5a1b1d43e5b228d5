/**
 * A failing run shrunk by fast-check to a smaller one that fails the same way: its choices
 * (`random.ts`) with blocks of them set to 0, which is "nothing happens" for every draw. Blocks
 * go from the whole list down to single choices, the latest first, so what happened before a
 * zeroed block happens again as it did.
 */
import fc from 'fast-check'
import { simulate, type SimResult } from './world.ts'

/** Where a pass of zeroing stands: the block size, and the end of the next block to try. */
interface Position {
  readonly size: number
  readonly end: number
}

/**
 * Choice lists, never generated (a seed draws them), shrunk by zeroing blocks. A successful shrink
 * carries its position, so the next pass goes on from there instead of trying every block again.
 */
class ChoicesArbitrary extends fc.Arbitrary<readonly number[]> {
  private tried = 0

  /** @param budget - how many smaller lists to try in all: each is a whole run. */
  constructor(private readonly budget: number) {
    super()
  }

  generate(): fc.Value<readonly number[]> {
    throw new Error('choices are drawn by a seed, never generated')
  }

  canShrinkWithoutContext(value: unknown): value is readonly number[] {
    return Array.isArray(value)
  }

  shrink(value: readonly number[], context: unknown): fc.Stream<fc.Value<readonly number[]>> {
    const start = (context as Position | undefined) ?? { size: value.length, end: value.length }
    return new fc.Stream(this.candidates(value, start))
  }

  private *candidates(choices: readonly number[], start: Position): Generator<fc.Value<readonly number[]>> {
    for (let size = start.size; size >= 1; size = Math.floor(size / 2)) {
      for (let end = size === start.size ? start.end : choices.length; end > 0; end -= size) {
        const begin = Math.max(0, end - size)
        if (choices.slice(begin, end).every((choice) => choice === 0)) continue
        if ((this.tried += 1) > this.budget) return
        const smaller = [...choices.slice(0, begin), ...new Array<number>(end - begin).fill(0), ...choices.slice(end)]
        yield new fc.Value(smaller, { size, end: begin } satisfies Position)
      }
    }
  }
}

/** A violation with its step, numbers and loop ids left out: what "fails the same way" compares. */
function violationKind(violation: string): string {
  return violation
    .replace(/^step \d+: /, '')
    .replace(/loop_[A-Za-z0-9_-]+/g, 'loop')
    .replace(/-?\d+/g, 'N')
}

/** Whether a run breaks the invariant `failing` broke first. */
export function failsLike(failing: SimResult): (result: SimResult) => boolean {
  const kind = violationKind(failing.violations[0] ?? '')
  return (result) => result.violations.some((violation) => violationKind(violation) === kind)
}

/**
 * Shrink a failing run's choices to a smaller run that still fails.
 * @param failing - the failing run.
 * @param steps - its steps before the calm tail, as it was simulated.
 * @param fails - what failing is: breaking the same invariant ({@link failsLike}).
 * @param budget - how many smaller runs to try at most.
 * @returns the smallest failing run found (the failing run itself if none smaller fails).
 */
export async function shrink(
  failing: SimResult,
  steps: number,
  fails: (result: SimResult) => boolean,
  budget: number,
): Promise<SimResult> {
  const details = await fc.check(
    fc.asyncProperty(new ChoicesArbitrary(budget), async (choices) => !fails(await simulate(choices, steps))),
    { examples: [[failing.choices]], numRuns: 1 },
  )
  const smallest = details.counterexample?.[0]
  return smallest === undefined ? failing : await simulate(smallest, steps)
}

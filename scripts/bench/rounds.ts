/**
 * Repeats until decided (BENCHMARKS.md, Method): a section whose rows cannot tell yet is measured
 * again, its samples added to the ones it has, up to a cap of rounds; only then does a row say so.
 * @module scripts/bench/rounds
 */

/**
 * Measure a section in rounds until none of its rows cannot tell, or the cap is reached.
 * @param measure - one round of the section's repeats.
 * @param merge - the samples of two rounds as one result.
 * @param undecided - whether a result leaves a row that cannot tell.
 * @param cap - the most rounds.
 * @param log - told before each round past the first.
 * @returns every round's samples as one result.
 */
export async function untilDecided<T>(
  measure: () => Promise<T>,
  merge: (earlier: T, later: T) => T,
  undecided: (result: T) => boolean,
  cap: number,
  log: (round: number) => void,
): Promise<T> {
  let result: T = await measure()
  for (let round = 2; round <= cap && undecided(result); round += 1) {
    log(round)
    result = merge(result, await measure())
  }
  return result
}

/**
 * Whether a home's disk has room for a release, judged before it writes anything (SPEC.md §13
 * "Leaving loop"): each log is written anew beside itself before its original goes; an upgrade
 * keeps every original, a removal only those of the logs it releases between two looks.
 * @module dsh-plugin-loop/release/room
 */

/**
 * The bytes a release may need free beside the logs at once.
 * @param logSizes - the size of each log it may rewrite.
 * @param keepsOriginals - an upgrade: every original stays beside its replacement.
 * @param atOnce - logs released at once.
 * @returns the bytes.
 */
export function roomNeeded(logSizes: readonly number[], keepsOriginals: boolean, atOnce: number): number {
  const largestFirst = [...logSizes].sort((a, b) => b - a)
  // A removal holds at most two looks' worth of originals (one due, one since) beside their replacements.
  const held = keepsOriginals ? largestFirst : largestFirst.slice(0, 2 * atOnce)
  return held.reduce((sum, size) => sum + size, 0)
}

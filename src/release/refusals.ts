/**
 * Why a release leaves a log as it was, as values the code around a log's release catches: the
 * log refused (its reason a user reads), or already migrated by a later DSH (SPEC.md §13 "Leaving loop").
 * @module dsh-plugin-loop/release/refusals
 */

/** A log a release refuses to touch, with the reason a user reads. */
export class LogRefusal extends Error {
  /**
   * @param message - what is wrong with the log, and where.
   */
  constructor(message: string) {
    super(message)
    this.name = 'LogRefusal'
  }
}

/**
 * The refusal of a log whose end was cut short.
 * @returns the refusal, saying how to repair it.
 */
export function cutShort(): LogRefusal {
  return new LogRefusal(
    "its last write was cut short (DSH stopped while saving): open the session once in DSH with loop installed, which repairs the log's end, then run the release again",
  )
}

/** A log a later DSH already migrated (its format is above 0): there is nothing to release. */
export class LaterFormat extends Error {
  /**
   * @param sessionId - the session its header names.
   * @param version - its session format.
   */
  constructor(
    readonly sessionId: string,
    readonly version: number,
  ) {
    super(`session format ${version}`)
    this.name = 'LaterFormat'
  }
}

/**
 * The one instant every test reads as now: the fake clock's start in the host
 * suites, the `now` of the pure-logic and browser-module tests, the start of
 * the jsdom tests' fake timers. Derived instants are offsets from it.
 * @module test/support/epoch
 */

/** The fixed instant every test starts at, epoch ms (2026-11-30T00:00:00.000Z). */
export const NOW = Date.parse('2026-11-30T00:00:00Z')

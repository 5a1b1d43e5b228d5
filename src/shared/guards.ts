/**
 * The shape guards for untrusted values (tool arguments, log records,
 * messages, host replies). Host-free, so both bundles and the release share them.
 * @module dsh-plugin-loop/guards
 */

/**
 * Whether a value is a plain object whose fields can be read (not null, not an array).
 * @param value - untrusted.
 * @returns the narrowing.
 */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * Whether a value is a whole number from 0 that a double holds exactly: a seq, a count of
 * events, an instant in epoch milliseconds.
 * @param value - untrusted.
 * @returns the narrowing.
 */
export function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
}

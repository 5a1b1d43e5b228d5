/**
 * The one shape guard for untrusted values (tool arguments, log records,
 * messages, host replies). Host-free, so both bundles share it.
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

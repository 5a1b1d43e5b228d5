/**
 * The key of the `loop` session projection: the host half registers the
 * projection under it and the dock and heartbeat row read it by it. Host-free
 * (no imports), so the browser bundle takes it from here.
 * @module dsh-plugin-loop/projection-key
 */

/** The `loop` projection's key, in DSH's projection registry and in every `useProjection` call. */
export const LOOP_PROJECTION_KEY = 'loop'

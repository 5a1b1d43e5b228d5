/**
 * Durable, model-facing and projected `loop` value types, and the decision a tool call hands the runtime.
 * @module dsh-plugin-loop/types
 */
import type {} from '@deepseek-ai/dsh-session/types'
import type { LoopError } from './errors.ts'

/** One active recurring prompt, as the session log and the `loop` projection hold it. */
export interface LoopRecord {
  /**
   * Session-local identity, never reused within a session. Any `loop_` and 1–64
   * ASCII letters, digits, `_` or `-` is read; this build writes `loop_` and
   * 8–13 lowercase hex digits.
   */
  readonly id: string
  /** Trimmed prompt delivered inside every heartbeat. */
  readonly prompt: string
  /** Positive safe-integer interval; seconds are the only public unit. */
  readonly time_in_seconds: number
  /** Next due occurrence in Unix epoch milliseconds. */
  readonly next_at: number
}

/** Timing state derived at read time from `next_at <= now` (the runtime's clock); never persisted. */
export type LoopState = 'scheduled' | 'overdue'

/** What `loop_create` and `loop_list` return for one loop. */
export interface LoopView extends LoopRecord {
  /** Whether the next occurrence is still in the future. */
  readonly state: LoopState
  /** Ownership, not a routing option: heartbeats never leave the owning session. */
  readonly delivery_mode: 'session-local'
}

/** The `loop` session projection: only the active records, in creation order. */
export interface LoopProjection {
  readonly loops: LoopRecord[]
}

/** What `loop_delete` returns. */
export interface LoopDeleteResult {
  readonly deleted: true
  readonly id: string
}

/** Appends a new active loop. */
export interface LoopCreateChange {
  readonly version: 1
  readonly operation: 'create'
  readonly loop: LoopRecord
}

/** Retires one active loop. */
export interface LoopDeleteChange {
  readonly version: 1
  readonly operation: 'delete'
  readonly id: string
}

/** Moves one loop's schedule: after a heartbeat was sent or coalesced, or when a clock correction reschedules it. */
export interface LoopDispatchChange {
  readonly version: 1
  readonly operation: 'dispatch'
  readonly id: string
  readonly next_at: number
}

/**
 * Written once by a fork whose log still shows loops it inherited: they are not
 * this session's, so a reading of the whole log (DSH web's history of a session
 * that is not open) drops each one that is active. A fold from the seed boundary finds none active.
 */
export interface LoopForkChange {
  readonly version: 1
  readonly operation: 'fork'
  readonly ids: readonly string[]
}

/** The durable `loop/change` union that this build writes. */
export type LoopChange = LoopCreateChange | LoopDeleteChange | LoopDispatchChange | LoopForkChange

/**
 * The previous build's `update` record, read for compatibility only: it replaced
 * one active record and could carry the since-removed `title` and `allow_steer`.
 */
export interface LegacyLoopUpdateChange {
  readonly version: 1
  readonly operation: 'update'
  readonly loop: LoopRecord
}

/** Everything the decoder accepts from a log: the v1 union plus legacy `update`. */
export type StoredLoopChange = LoopChange | LegacyLoopUpdateChange

declare module '@deepseek-ai/dsh-session/types' {
  interface SessionEventMap {
    /** Versioned loop mutation; this plugin validates the whole stream when it folds it. */
    'loop/change': StoredLoopChange
  }
}

/**
 * What one state-changing tool call decides over the fold: a plain value, which
 * the runtime carries out. Either only a result, or a result and one durable
 * change (a tool creates or deletes) with what goes with it.
 */
export type LoopTransaction<T> =
  | {
      /** What the tool returns. */
      readonly result: T
      /** Nothing to append. */
      readonly change?: undefined
    }
  | {
      /** What the tool returns once the change is durable. */
      readonly result: T
      /** The change to append. */
      readonly change: LoopCreateChange | LoopDeleteChange
      /**
       * The loop whose waiting heartbeats leave the inbox right before the append
       * (a delete's), so the removals and the change are durable with one flush.
       */
      readonly withdrawLoopId?: string
      /** The caller's error when the change is appended but its flush fails, in the tool's words. */
      readonly notSaved: (error: unknown) => LoopError
    }

/**
 * The one error class every `loop` failure uses, with stable codes.
 * @module dsh-plugin-loop/errors
 */
import { HarnessError } from '@deepseek-ai/dsh-llm'

/** Closed set of machine-routable failure codes; route on these, never on message text. */
export type LoopErrorCode =
  | 'invalid_arguments'
  | 'invalid_prompt'
  | 'invalid_interval'
  | 'invalid_id'
  | 'prompt_too_long'
  | 'too_many_loops'
  | 'loop_not_found'
  | 'cancelled'
  | 'corrupt_loop_log'
  | 'persistence_failed'
  | 'agent_unavailable'
  | 'runtime_failed'

/**
 * A `loop` failure. Extends the host's `HarnessError`, so a tool that throws it
 * reports `{ isError: true, error: { message, info: { name, code } } }`.
 */
export class LoopError extends HarnessError {
  /** Stable failure code. */
  declare readonly code: LoopErrorCode

  /**
   * @param code - stable failure code.
   * @param message - diagnostic a user can act on.
   * @param options - optional underlying cause.
   */
  constructor(code: LoopErrorCode, message: string, options?: ErrorOptions) {
    super(message, code, options)
    this.name = 'LoopError'
  }
}

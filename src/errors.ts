/**
 * The one error class every `loop` failure uses, with stable codes.
 * @module dsh-plugin-loop/errors
 */
import { HarnessError } from '@deepseek-ai/dsh-llm'

/**
 * Closed set of machine-routable failure codes; route on these, never on message text.
 * Each member's comment is when it is thrown: the README's error table quotes it (`test/docs.test.ts`).
 */
export type LoopErrorCode =
  /** the arguments are an object that holds a key the tool does not take (a wrong type or a missing field is the registry's argument error) */
  | 'invalid_arguments'
  /** the prompt has no non-whitespace content, or holds a character XML 1.0 cannot carry (a control character other than tab, line feed and carriage return, a lone surrogate, U+FFFE or U+FFFF) */
  | 'invalid_prompt'
  /** `time_in_seconds` is not a positive whole number, or its first heartbeat would fall after +275760-09-13, the last date a timestamp holds */
  | 'invalid_interval'
  /** the id does not have the form of a loop id: `loop_` and 1–64 letters, digits, `_` or `-` */
  | 'invalid_id'
  /** the prompt is longer than `maxPromptLength` UTF-16 code units */
  | 'prompt_too_long'
  /** the session already holds `maxLoopsPerSession` loops, or has used every loop id */
  | 'too_many_loops'
  /** the id has the form of a loop id, but no active loop of this session has it */
  | 'loop_not_found'
  /** the call was cancelled before its change was saved; nothing was saved */
  | 'cancelled'
  /** a `loop/change` record of the session cannot be read; its loops are stopped */
  | 'corrupt_loop_log'
  /** the session could not be saved; the message says whether the change is live */
  | 'persistence_failed'
  /** the calling agent is not the session's live agent (replaced or shutting down) */
  | 'agent_unavailable'
  /** the session's loops stopped after an unexpected failure */
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

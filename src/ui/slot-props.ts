/**
 * What the dock reads from the props DSH's slot renderer assembles for a
 * `conversation.input.dock` entry, typed locally: the published
 * `@deepseek-ai/dsh-client-ui-slots` stops at 0.1.0-rc.6 while the rc.8
 * client runtime's types import it. Mirrors rc.8's `UseProjection`
 * (`@deepseek-ai/dsh-client-runtime`, `sessions/projection-store.d.ts`)
 * narrowed to the `loop` key, the `t` seat of the `loop` locale namespace,
 * plus this plugin's own `inject(sessionId)` face.
 * The renderer passes more (`sessionId`, `useSession`, `inputActions`, …);
 * the dock deliberately declares and reads none of it.
 * @module dsh-plugin-loop/ui/slot-props
 */
import type { LOOP_PROJECTION_KEY } from '../shared/projection-key.ts'
import type { LoopProjection } from '../types.ts'
import type { LoopTranslate } from './locales.ts'

/** `useProjection` for the `loop` key: `undefined` until the projection arrives. */
export interface UseLoopProjection {
  (key: typeof LOOP_PROJECTION_KEY): LoopProjection | undefined
  <S>(
    key: typeof LOOP_PROJECTION_KEY,
    selector: (value: LoopProjection | undefined) => S,
    eq?: (a: S, b: S) => boolean,
  ): S
}

/** What this plugin's `inject(sessionId)` adds to the props: the session's command executor. */
export interface LoopsViewInjected {
  /**
   * Run one slash-command line in this entry's session through
   * `ctx.remote.commands.execute(sessionId, line, [])`; resolves with the
   * host's `RemoteResult<CommandExecution | undefined>`, read defensively.
   */
  readonly executeCommand: (line: string) => Promise<unknown>
}

/** The props the dock uses. */
export interface LoopsViewProps extends LoopsViewInjected {
  readonly useProjection: UseLoopProjection
  /** The `loop` namespace's translate seat; a new function after every language switch. */
  readonly t: LoopTranslate
}

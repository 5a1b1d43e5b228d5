/**
 * A call of `loop_create`, `loop_list` or `loop_delete` in the conversation,
 * registered in DSH's `tool.call.toolview` slot under each tool's name (a
 * keyed hit replaces DSH's generic row): `↻ Create loop · every 5m · Check
 * whether CI is green`, in the user's language, a button that expands to the
 * text the tool returned to the model. A failed call shows its first error
 * line in place of the summary, as DSH's rows do; the state is also said in
 * words for assistive technology. The contract is the project's `ui.md`.
 * @module dsh-plugin-loop/ui/ToolCallRow
 */
import { DisclosurePart, DisclosureRow } from './DisclosureRow.tsx'
import type { LoopTranslate } from './locales.ts'
import {
  LOOP_TOOL_TITLES,
  firstLine,
  toolCallArgs,
  toolCallOutput,
  toolCallState,
  toolCallSummary,
  type LoopToolName,
  type ToolCallBlockLike,
} from './tool-call.ts'
import styles from './ToolCallRow.module.css'

/** What the row's entry injects: which of the plugin's tools the entry is keyed by. */
export interface ToolCallRowInjected {
  readonly loopTool: LoopToolName
}

/** The props the row reads: DSH's call block (owner props), the `loop` seat, and the injected tool. */
export interface ToolCallRowProps extends ToolCallRowInjected {
  readonly block: ToolCallBlockLike
  readonly t: LoopTranslate
}

const STATUS_KEYS = { running: 'tool.running', error: 'tool.failed', stopped: 'tool.stopped' } as const

/**
 * Render one loop tool call.
 * @param props - the injected tool, the call block and the `loop` seat.
 * @returns the row.
 */
export function ToolCallRow({ loopTool: tool, block, t }: ToolCallRowProps) {
  const state = toolCallState(block)
  const output = toolCallOutput(block)
  const failure = state === 'error' && output !== null ? firstLine(output) : undefined
  const parts = failure === undefined ? toolCallSummary(t, tool, toolCallArgs(block)) : [failure]
  const status = state === 'ok' ? undefined : t(STATUS_KEYS[state])
  return (
    <DisclosureRow
      attributes={{ 'data-loop-tool': tool, 'data-state': state }}
      title={t(LOOP_TOOL_TITLES[tool])}
      text={output}
      textLabel={t('tool.result')}
      classes={{ text: styles.body }}
    >
      {parts.map((part, index) => (
        <DisclosurePart
          key={index}
          cut
          className={failure === undefined ? styles.part : `${styles.part} ${styles.failed}`}
          title={part}
        >
          {part}
        </DisclosurePart>
      ))}
      {status === undefined ? null : <span className={styles.status}>{status}</span>}
    </DisclosureRow>
  )
}

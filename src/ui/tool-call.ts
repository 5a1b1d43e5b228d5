/**
 * What a call of one of this plugin's tools shows in DSH's conversation, read
 * from the call block DSH's tool view passes (`tool.call.toolview`, keyed by
 * tool name): its state, its parsed arguments and its result text. DSH web
 * rc.8 draws every tool without a keyed view as `Tool call · <name> · <first
 * string argument>` and never reads a generic `presentCall` title, so these
 * rows are how `Create loop · every 5m · Check whether CI is green` reaches
 * the conversation (in the user's language).
 * @module dsh-plugin-loop/ui/tool-call
 */
import type { LoopLocaleKey, LoopTranslate } from './locales.ts'
import { localInterval } from './locales.ts'

/** The three model tools, each with its row title. */
export const LOOP_TOOL_TITLES = {
  loop_create: 'tool.create',
  loop_list: 'tool.list',
  loop_delete: 'tool.delete',
} as const satisfies Readonly<Record<string, LoopLocaleKey>>

/** One of this plugin's tool names. */
export type LoopToolName = keyof typeof LOOP_TOOL_TITLES

/**
 * A call block as rc.8's client runtime hands it to a tool view
 * (`RunningToolCall | ToolResultNode`, typed locally and read defensively).
 */
export interface ToolCallBlockLike {
  readonly callId: string
  /** Running call: the wire arguments so far. */
  readonly argsRaw?: string
  /** Settled call: present, `'tool-result'`. */
  readonly kind?: string
  /** Settled call: the call head, null when the window dropped it. */
  readonly call?: { readonly argsRaw: string } | null
  readonly content?: readonly { readonly type: string; readonly text?: string }[]
  readonly isError?: boolean
  readonly error?: { readonly name: string; readonly code: string }
}

/** Where a call stands, as DSH's tool rows name it. */
export type ToolCallState = 'running' | 'ok' | 'error' | 'stopped'

/**
 * The call's state: running until a result arrives, then ok, failed, or stopped (interrupted).
 * @param block - the call block.
 * @returns the state.
 */
export function toolCallState(block: ToolCallBlockLike): ToolCallState {
  if (block.kind === undefined) return 'running'
  if (block.error?.code === 'interrupted') return 'stopped'
  return block.isError === true ? 'error' : 'ok'
}

/**
 * The call's arguments, or an empty object while they stream or when they do not parse.
 * @param block - the call block.
 * @returns the parsed argument object.
 */
export function toolCallArgs(block: ToolCallBlockLike): Readonly<Record<string, unknown>> {
  const raw = block.kind === undefined ? block.argsRaw : block.call?.argsRaw
  try {
    const parsed: unknown = JSON.parse(raw ?? '')
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : {}
  } catch {
    return {}
  }
}

/**
 * The text the tool returned to the model (text blocks verbatim, others as JSON), as DSH's rows flatten it.
 * @param block - the call block.
 * @returns the result text, or null while running or when there is none.
 */
export function toolCallOutput(block: ToolCallBlockLike): string | null {
  if (block.kind === undefined) return null
  const parts = (block.content ?? []).map((part) =>
    part.type === 'text' ? (part.text ?? '') : JSON.stringify(part, null, 2),
  )
  if (parts.length === 0 && block.error !== undefined) parts.push(`${block.error.name}: ${block.error.code}`)
  const text = parts.join('\n')
  return text === '' ? null : text
}

/** The first line of a text. */
export function firstLine(text: string): string {
  const end = text.indexOf('\n')
  return end === -1 ? text : text.slice(0, end)
}

/**
 * The parts after the title, in the active language: for `loop_create` the
 * interval (when it is a whole number of seconds) and the prompt's first line;
 * for `loop_delete` the loop id; nothing for `loop_list`.
 * @param t - the `loop` seat.
 * @param tool - the tool name.
 * @param args - the parsed arguments.
 * @returns the summary parts, possibly none.
 */
export function toolCallSummary(
  t: LoopTranslate,
  tool: LoopToolName,
  args: Readonly<Record<string, unknown>>,
): string[] {
  if (tool === 'loop_create') {
    const seconds = args.time_in_seconds
    const prompt = typeof args.prompt === 'string' ? firstLine(args.prompt.trim()) : ''
    return [
      ...(typeof seconds === 'number' && Number.isSafeInteger(seconds) && seconds > 0
        ? [localInterval(t, seconds)]
        : []),
      ...(prompt === '' ? [] : [prompt]),
    ]
  }
  if (tool === 'loop_delete') return typeof args.id === 'string' && args.id !== '' ? [args.id] : []
  return []
}

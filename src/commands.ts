/**
 * The `/loop` command: a strict parser and delegation to the registered tools,
 * so a command behaves exactly like the model's tool call.
 * @module dsh-plugin-loop/commands
 */
import { randomUUID } from 'node:crypto'
import type { Context } from '@deepseek-ai/cordis'
import type { Agent } from '@deepseek-ai/dsh-agent'
import type { CommandResult } from '@deepseek-ai/dsh-commands'
import { CallId } from '@deepseek-ai/dsh-llm'
import type { LoopClock } from './clock.ts'
import { describeNextDue, formatInstant, formatInterval, promptOnOneLine } from './shared/format.ts'
import type { LoopDeleteResult, LoopView } from './types.ts'

/** The reply to anything the grammar does not accept. */
const LOOP_USAGE = 'Usage: /loop <seconds> <prompt> | /loop list | /loop delete <id>'

/** One parsed `/loop` line. */
export type LoopCommand =
  | { readonly kind: 'create'; readonly time_in_seconds: number; readonly prompt: string }
  | { readonly kind: 'list' }
  | { readonly kind: 'delete'; readonly id: string }
  | { readonly kind: 'usage' }

/**
 * Parse the text after `/loop`. Seconds are plain digits; the whole remainder is the prompt.
 * Range checks are the tool's: `/loop 0 x` parses and `loop_create` rejects it.
 * @param rawInput - the command's raw input, separator whitespace included.
 * @returns the parsed command, or `usage`.
 */
export function parseLoopCommand(rawInput: string): LoopCommand {
  const input = rawInput.trim()
  if (input === 'list') return { kind: 'list' }
  const deletion = /^delete\s+(\S+)$/.exec(input)
  if (deletion !== null) return { kind: 'delete', id: deletion[1]! }
  const creation = /^(\d+)\s+(\S[\s\S]*)$/.exec(input)
  if (creation !== null) return { kind: 'create', time_in_seconds: Number(creation[1]), prompt: creation[2]! }
  return { kind: 'usage' }
}

/** The reply to a successful create, one line. */
function formatCreated(loop: LoopView, now: number): string {
  return `Created ${loop.id}: ${formatInterval(loop.time_in_seconds)}, ${describeNextDue(loop.next_at, now).text}. Prompt: ${loop.prompt}`
}

/**
 * The reply to `/loop list`: one line per loop with id, interval, next due and the prompt on
 * one line (line breaks as `⏎`, cut to a readable width).
 */
export function formatList(loops: readonly LoopView[], now: number): string {
  if (loops.length === 0) return 'No active loops in this session. Create one with /loop <seconds> <prompt>.'
  const lines = loops.map((loop) => {
    const due = describeNextDue(loop.next_at, now).text
    return `${loop.id}  ${formatInterval(loop.time_in_seconds)}  ${due} (${formatInstant(loop.next_at)})  ${promptOnOneLine(loop.prompt)}`
  })
  return [`${loops.length} active loop${loops.length === 1 ? '' : 's'}:`, ...lines].join('\n')
}

/** Run one loop tool for the invoking agent through the real tool runtime. */
async function runTool(ctx: Context, agent: Agent, name: string, args: Record<string, unknown>, signal: AbortSignal) {
  return ctx.tools.execute({ callId: CallId(`loop-command-${randomUUID()}`), name, arguments: args, agent, signal })
}

/**
 * Register the `/loop` of a host `loop` does not run on (`judgeHost`): every line, whatever it
 * asks, is answered with why nothing was done.
 * @param ctx - plugin context carrying `commands`.
 * @param message - the host check's message.
 * @returns disposer.
 */
export function registerInactiveLoopCommand(ctx: Context, message: string): () => void {
  return ctx.commands.register({
    name: 'loop',
    description: 'Explain why loops are inactive in this DSH',
    handler: (): CommandResult => ({ kind: 'error', text: message }),
  })
}

/**
 * Register `/loop` on the host command runtime.
 * @param ctx - plugin context carrying `commands` and `tools`.
 * @param clock - what "due in" replies are measured from.
 * @returns disposer.
 */
export function registerLoopCommand(ctx: Context, clock: LoopClock): () => void {
  return ctx.commands.register({
    name: 'loop',
    description: 'Schedule a recurring prompt in this session, list its loops, or delete one',
    input: { hint: '<seconds> <prompt> | list | delete <id>' },
    async handler({ agent, rawInput, signal }): Promise<CommandResult> {
      const command = parseLoopCommand(rawInput)
      if (command.kind === 'usage') return { kind: 'error', text: LOOP_USAGE }
      const [name, args] =
        command.kind === 'create'
          ? ['loop_create', { prompt: command.prompt, time_in_seconds: command.time_in_seconds }]
          : command.kind === 'list'
            ? ['loop_list', {}]
            : ['loop_delete', { id: command.id }]
      const outcome = await runTool(ctx, agent, name, args, signal)
      if (outcome.isError) return { kind: 'error', text: outcome.error.message }
      // The registry validated the value against our own tool's output schema.
      const value: unknown = outcome.value
      const now = clock.now()
      if (command.kind === 'create') return { kind: 'success', text: formatCreated(value as LoopView, now) }
      if (command.kind === 'list') return { kind: 'success', text: formatList(value as LoopView[], now) }
      return { kind: 'success', text: `Deleted ${(value as LoopDeleteResult).id}.` }
    },
  })
}

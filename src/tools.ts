/**
 * The three agent-scoped tools. Every command and dock action goes through them,
 * so validation, ownership and persistence live here once.
 * @module dsh-plugin-loop/tools
 */
import type { Context } from '@deepseek-ai/cordis'
import type { Agent } from '@deepseek-ai/dsh-agent'
import { defineTool } from '@deepseek-ai/dsh-tools'
import type { LoopConfig } from './config.ts'
import { LoopError } from './errors.ts'
import { createChange, deleteChange, nextLoopId } from './fold.ts'
import type { LoopRuntime } from './loop.ts'
import { cutToWidth, describeError, formatInterval } from './shared/format.ts'
import { firstOccurrence } from './shared/timing.ts'
import type { LoopDeleteResult, LoopRecord, LoopView } from './types.ts'
import {
  assertIntervalFits,
  assertRoomForLoop,
  noLoopIdLeft,
  requireActiveLoop,
  validateCreateInput,
  validateDeleteInput,
  validateListInput,
} from './validation.ts'

/** What `loop_create` returns and `loop_list` returns a list of: a {@link LoopView}. */
const VIEW_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    id: { type: 'string', required: true },
    prompt: { type: 'string', required: true },
    time_in_seconds: { type: 'integer', required: true },
    next_at: { type: 'integer', required: true },
    state: { type: 'string', enum: ['scheduled', 'overdue'], required: true },
    delivery_mode: { type: 'string', const: 'session-local', required: true },
  },
} as const

/** The model-facing view of an active record at `now` ({@link VIEW_SCHEMA}): its derived state and delivery mode added. */
export function toLoopView(loop: LoopRecord, now: number): LoopView {
  return { ...loop, state: loop.next_at <= now ? 'overdue' : 'scheduled', delivery_mode: 'session-local' }
}

/** What `loop_delete` returns: a {@link LoopDeleteResult}. */
const DELETE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    deleted: { type: 'boolean', const: true, required: true },
    id: { type: 'string', required: true },
  },
} as const

/** What the model sees for `loop_create` in a long-lived host. */
const CREATE_DESCRIPTION = [
  'Schedule a recurring prompt in this session.',
  'Every time_in_seconds seconds the prompt arrives as a <heartbeat> user message:',
  'at the next step if you are working, as a new turn if idle',
  '(at most one heartbeat per loop in a turn; while one waits during your work, later occurrences are skipped).',
  'Returns the loop with its id; use loop_delete to stop it.',
].join(' ')

/** Why nothing fires in a one-shot host's run; appended to what the model reads there. */
const ONE_SHOT_NOTE = [
  'This is a one-shot run (dsh --profile headless): loops are saved in this session but nothing fires in this run;',
  'they start when the session is opened in a long-lived DSH (dsh web).',
].join(' ')

/** What the model sees for `loop_list`. */
const LIST_DESCRIPTION =
  'List the active loops of this session with id, prompt, interval in seconds, next_at (epoch ms) and state.'

/** What the model sees for `loop_delete`. */
const DELETE_DESCRIPTION = 'Stop one active loop of this session by the id that loop_create or loop_list returned.'

/** Deterministic model-facing content: the canonical JSON value. */
function renderJson(_args: unknown, value: unknown) {
  return [{ type: 'text' as const, text: JSON.stringify(value) }]
}

/** The JSON value, then the one-shot note on its own line (providers join text blocks without a separator). */
function renderJsonWithOneShotNote(_args: unknown, value: unknown) {
  return [{ type: 'text' as const, text: `${JSON.stringify(value)}\n${ONE_SHOT_NOTE}` }]
}

/**
 * The card title of a `loop_create` call: what it does, the interval in words and
 * the prompt on one line, e.g. `Create loop · every 5m · Check whether CI is green`.
 */
function presentCreateTitle(prompt: string, seconds: number): string {
  // Whitespace runs (line breaks included) fold to one space: a title is a glance, not a listing.
  return ['Create loop', formatInterval(seconds), cutToWidth(prompt.trim().replace(/\s+/g, ' '), 80)].join(' · ')
}

/**
 * The error of a change appended but not saved: it is live in this process and
 * `loop_list` shows it (a read does not flush), but it may not survive a restart.
 * @param tool - the tool that made the change.
 * @param id - the loop it changed.
 * @param state - what the loop is now.
 * @returns the error, given the flush's failure.
 */
function notSaved(tool: string, id: string, state: 'active' | 'deleted'): (error: unknown) => LoopError {
  return (error) =>
    new LoopError(
      'persistence_failed',
      `${tool} changed ${id} in this session (${id} is ${state} now, as loop_list shows), but saving the change failed, so it may not survive a restart; do not repeat the call. ${describeError(error)}`,
      { cause: error },
    )
}

/** Refuse calls that do not come from the agent these tools belong to. */
function assertOwner(agent: Agent, caller: Agent | undefined): void {
  if (caller !== agent)
    throw new LoopError('agent_unavailable', 'Loop tools act only for the agent of the session that owns them.')
}

/** What the tools need from the plugin. */
export interface LoopToolOptions {
  /** The current configuration, read at every call so settings edits apply live. */
  readonly config: () => LoopConfig
  /** Whether this is a one-shot host, where loops are saved but never fire. */
  readonly oneShotHost: boolean
}

/**
 * Register `loop_create`, `loop_list` and `loop_delete` in one agent's scope.
 * @param agentCtx - the agent's own context, so the tools unwind with it and no other agent sees them.
 * @param runtime - the agent's runtime, whose queue orders every read and write and whose clock stamps them.
 * @param options - configuration and host facts.
 * @returns disposer for the three registrations.
 */
export function registerLoopTools(agentCtx: Context, runtime: LoopRuntime, options: LoopToolOptions): () => void {
  const agent = runtime.agent
  const { config, oneShotHost } = options
  const definitions = [
    defineTool({
      name: 'loop_create',
      description: oneShotHost ? `${CREATE_DESCRIPTION} ${ONE_SHOT_NOTE}` : CREATE_DESCRIPTION,
      parameters: {
        prompt: {
          type: 'string',
          required: true,
          description: 'What to do on every occurrence; sent verbatim inside the heartbeat.',
        },
        time_in_seconds: {
          type: 'integer',
          required: true,
          description: 'Interval in whole seconds (a positive integer), for example 30.',
        },
      },
      output: { schema: VIEW_SCHEMA, render: oneShotHost ? renderJsonWithOneShotNote : renderJson },
      async execute(args, exec): Promise<LoopView> {
        assertOwner(agent, exec.agent)
        // Bad input is refused before the call waits in the queue.
        const input = validateCreateInput(args, config().maxPromptLength, runtime.clock.now())
        return runtime.transact('loop_create', exec.signal, (fold) => {
          assertRoomForLoop(fold, config().maxLoopsPerSession)
          const now = runtime.clock.now()
          // The call may have waited in the queue: the first occurrence must still be a date at this instant.
          assertIntervalFits(input.time_in_seconds, now)
          const { prompt, time_in_seconds: seconds } = input
          const loop: LoopRecord = {
            id: nextLoopId(fold, agent.id) ?? noLoopIdLeft(),
            prompt,
            time_in_seconds: seconds,
            next_at: firstOccurrence(seconds, now),
          }
          return {
            result: toLoopView(loop, now),
            change: createChange(loop),
            notSaved: notSaved('loop_create', loop.id, 'active'),
          }
        })
      },
      presentCall: (args) => ({
        card: 'generic',
        kind: 'other',
        title: presentCreateTitle(args.prompt, args.time_in_seconds),
        rawInput: args.prompt,
      }),
    }),
    defineTool({
      name: 'loop_list',
      description: LIST_DESCRIPTION,
      parameters: {},
      output: { schema: { type: 'array', items: VIEW_SCHEMA }, render: renderJson },
      async execute(args, exec): Promise<LoopView[]> {
        assertOwner(agent, exec.agent)
        validateListInput(args)
        return runtime.read('loop_list', exec.signal, (fold) => {
          const now = runtime.clock.now()
          return fold.loops.map((loop) => toLoopView(loop, now))
        })
      },
      presentCall: () => ({ card: 'generic', kind: 'read', title: 'List loops' }),
    }),
    defineTool({
      name: 'loop_delete',
      description: DELETE_DESCRIPTION,
      parameters: { id: { type: 'string', required: true, description: 'The loop id, for example loop_1a2b3c4d.' } },
      output: { schema: DELETE_SCHEMA, render: renderJson },
      async execute(args, exec): Promise<LoopDeleteResult> {
        assertOwner(agent, exec.agent)
        const id = validateDeleteInput(args)
        return runtime.transact('loop_delete', exec.signal, (fold) => {
          requireActiveLoop(fold, id)
          // The delete says what it does to the inbox: the loop's waiting heartbeat leaves with it, in the same flush.
          return {
            result: { deleted: true, id },
            change: deleteChange(id),
            withdrawLoopId: id,
            notSaved: notSaved('loop_delete', id, 'deleted'),
          }
        })
      },
      presentCall: (args) => ({ card: 'generic', kind: 'delete', title: `Delete loop · ${args.id}` }),
    }),
  ]
  const disposers: (() => void)[] = []
  const disposeAll = (): void => {
    // Idempotent: each disposer leaves the list as it runs.
    while (disposers.length > 0) disposers.pop()!()
  }
  try {
    for (const definition of definitions) disposers.push(agentCtx.tools.register(definition))
  } catch (error) {
    // A partial registration never survives: roll back what was registered.
    disposeAll()
    throw error
  }
  return disposeAll
}

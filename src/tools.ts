/**
 * The three agent-scoped tools. Every command and dock action goes through them,
 * so validation, ownership and persistence live here once.
 * @module dsh-plugin-loop/tools
 */
import { randomBytes } from 'node:crypto'
import type { Context } from '@deepseek-ai/cordis'
import type { Agent } from '@deepseek-ai/dsh-agent'
import { defineTool } from '@deepseek-ai/dsh-tools'
import {
  allocateLoopId,
  createChange,
  createLoopRecord,
  deleteChange,
  requireActiveLoop,
  toLoopView,
  validateCreateInput,
  validateDeleteInput,
  validateListInput,
} from './domain.ts'
import { LoopError } from './errors.ts'
import type { LoopRuntime } from './loop.ts'
import type { LoopDeleteResult, LoopView } from './types.ts'

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

const DELETE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    deleted: { type: 'boolean', const: true, required: true },
    id: { type: 'string', required: true },
  },
} as const

/** What the model sees for `loop_create`. */
const CREATE_DESCRIPTION =
  'Schedule a recurring prompt in this session. Every time_in_seconds seconds the prompt arrives as a <heartbeat> user message: at the next step if you are working, as a new turn if idle. Returns the loop with its id; use loop_delete to stop it.'

/** What the model sees for `loop_list`. */
const LIST_DESCRIPTION = 'List the active loops of this session with id, prompt, interval in seconds, next_at (epoch ms) and state.'

/** What the model sees for `loop_delete`. */
const DELETE_DESCRIPTION = 'Stop one active loop of this session by the id that loop_create or loop_list returned.'

/** Deterministic model-facing content: the canonical JSON value. */
function renderJson(_args: unknown, value: unknown) {
  return [{ type: 'text' as const, text: JSON.stringify(value) }]
}

/** Random suffix for a new id. */
function randomHex(): string {
  return randomBytes(4).toString('hex')
}

/** Refuse calls that do not come from the agent these tools belong to. */
function assertOwner(agent: Agent, caller: Agent | undefined): void {
  if (caller !== agent) throw new LoopError('agent_unavailable', 'Loop tools act only for the agent of the session that owns them.')
}

/**
 * Register `loop_create`, `loop_list` and `loop_delete` in one agent's scope.
 * @param agentCtx - the agent's own context, so the tools unwind with it and no other agent sees them.
 * @param runtime - the agent's runtime, whose queue orders every read and write.
 * @returns disposer for the three registrations.
 */
export function registerLoopTools(agentCtx: Context, runtime: LoopRuntime): () => void {
  const agent = runtime.agent
  const disposers = [
    agentCtx.tools.register(
      defineTool({
        name: 'loop_create',
        description: CREATE_DESCRIPTION,
        parameters: {
          prompt: { type: 'string', required: true, description: 'What to do on every occurrence; sent verbatim inside the heartbeat.' },
          time_in_seconds: { type: 'integer', required: true, description: 'Interval in whole seconds, at least 1.' },
        },
        output: { schema: VIEW_SCHEMA, render: renderJson },
        async execute(args, exec): Promise<LoopView> {
          assertOwner(agent, exec.agent)
          // Reject bad input before queueing; validate again at the decision instant, since the
          // representable-time bound depends on `now`.
          validateCreateInput(args, Date.now())
          return runtime.transact('loop_create', (state) => {
            const now = Date.now()
            const loop = createLoopRecord(validateCreateInput(args, now), allocateLoopId(state, randomHex), now)
            return { result: toLoopView(loop, now), change: createChange(loop) }
          })
        },
      }),
    ),
    agentCtx.tools.register(
      defineTool({
        name: 'loop_list',
        description: LIST_DESCRIPTION,
        parameters: {},
        output: { schema: { type: 'array', items: VIEW_SCHEMA }, render: renderJson },
        async execute(args, exec): Promise<LoopView[]> {
          assertOwner(agent, exec.agent)
          validateListInput(args)
          return runtime.transact('loop_list', (state) => {
            const now = Date.now()
            return { result: state.loops.map((loop) => toLoopView(loop, now)) }
          })
        },
      }),
    ),
    agentCtx.tools.register(
      defineTool({
        name: 'loop_delete',
        description: DELETE_DESCRIPTION,
        parameters: { id: { type: 'string', required: true, description: 'The loop id, for example loop_1a2b3c4d.' } },
        output: { schema: DELETE_SCHEMA, render: renderJson },
        async execute(args, exec): Promise<LoopDeleteResult> {
          assertOwner(agent, exec.agent)
          const id = validateDeleteInput(args)
          return runtime.transact('loop_delete', (state) => {
            requireActiveLoop(state, id)
            return { result: { deleted: true, id }, change: deleteChange(id) }
          })
        },
      }),
    ),
  ]
  return () => {
    for (const dispose of disposers.reverse()) dispose()
  }
}

/**
 * `loop`: recurring session-local prompts for DeepSeek Harness.
 * @module dsh-plugin-loop
 */
import type { Context } from '@deepseek-ai/cordis'
import type { Agent } from '@deepseek-ai/dsh-agent'
import { registerLoopCommand } from './commands.ts'
import { LoopRuntime } from './loop.ts'
import { registerLoopEventType } from './persistence.ts'
import { registerLoopProjection } from './projection.ts'
import { registerLoopTools } from './tools.ts'

export type * from './types.ts'

/** Cordis plugin name. */
export const name = 'loop'

/** Services required before any root agent can get loops; `sessionProjections` is optional. */
export const inject = ['agents', 'sessions', 'tools', 'commands']

/**
 * Register the event type, projection and command, then give every live and
 * future root agent its runtime and tools.
 * @param ctx - plugin context.
 */
export async function apply(ctx: Context): Promise<void> {
  await registerLoopEventType(process.argv[1])
  registerLoopProjection(ctx)
  registerLoopCommand(ctx)

  const cleanups = new Map<Agent, () => Promise<void>>()

  /** Attach a runtime and tools to one root agent, unwinding with the agent. */
  const adopt = (agent: Agent): void => {
    if (!ctx.agents.roots().includes(agent)) return
    const runtime = new LoopRuntime(ctx, agent)
    const cleanup = agent.ctx.effect(() => {
      const disposeTools = registerLoopTools(agent.ctx, runtime)
      runtime.start()
      return async () => {
        disposeTools()
        await runtime.dispose()
        cleanups.delete(agent)
      }
    }, 'loop.runtime()')
    cleanups.set(agent, cleanup)
  }

  ctx.effect(() => {
    const stopCreated = ctx.on('agent/created', ({ agent }) => adopt(agent))
    // Agents already live (a hot reload, a late install) get no agent/created.
    for (const agent of ctx.agents.roots()) adopt(agent)
    return async () => {
      stopCreated()
      const pending = [...cleanups.values()]
      cleanups.clear()
      await Promise.allSettled(pending.map((cleanup) => cleanup()))
    }
  }, 'loop.lifecycle()')
}

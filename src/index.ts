/**
 * `loop`: recurring session-local prompts for DeepSeek Harness.
 * @module dsh-plugin-loop
 */
import type { Context } from '@deepseek-ai/cordis'
import type { Agent } from '@deepseek-ai/dsh-agent'
import { registerInactiveLoopCommand, registerLoopCommand } from './commands.ts'
import { Config, DEFAULT_LOOP_CONFIG, watchLoopConfig, type LoopConfig } from './config.ts'
import { admitByLog } from './delivery.ts'
import { realClock } from './clock.ts'
import { inspectHost } from './host.ts'
import { OTHER_LOOP_PLUGIN_MESSAGE, isLoopCommandTaken, judgeHost } from './host-support.ts'
import { LoopRuntime } from './loop.ts'
import { registerLoopEventType } from './persistence.ts'
import { registerLoopProjection } from './projection.ts'
import { createReport } from './report.ts'
import { registerLoopTools } from './tools.ts'

export type * from './types.ts'
export type { LoopConfig } from './config.ts'
export { Config }

/** Cordis plugin name. */
export const name = 'loop'

/** Services required before any root agent can get loops; `sessionProjections` and `settings` are optional. */
export const inject = ['agents', 'sessions', 'tools', 'commands']

/**
 * The service DSH's one-shot host (`dsh --profile headless "task"`) provides.
 * Its presence is how the plugin knows the process exits when the task's turn ends.
 */
const ONE_SHOT_HOST_SERVICE = 'headlessStartup'

/**
 * Check the host, register the event type, then, on the DSH `loop` is built for,
 * the command and projection, and give every live and future root agent its
 * runtime and tools. On any other DSH only the event type (sessions holding loops
 * still open) and a `/loop` that explains are registered; beside another plugin
 * that holds `/loop`, only the event type.
 * @param ctx - plugin context.
 * @param config - the plugin row's `config:` (validated against {@link Config}).
 */
export async function apply(ctx: Context, config: LoopConfig = DEFAULT_LOOP_CONFIG): Promise<void> {
  const report = createReport(ctx.logger('loop'))
  /** Runtimes by exact agent, not session, so a predecessor's cleanup never removes its replacement's entry. */
  const runtimes = new Map<Agent, LoopRuntime>()
  // Registered before anything is awaited (one microtask after a hot reload's dispose of the old
  // plugin, not after the host's inspection): a step DSH claims and checks while no hook of this
  // plugin is in place enters as claimed, a loop deleted meanwhile included. A plugin that stays
  // inactive removes them. No `session/event` listener: the host runs every listener on every
  // append of every session, and the runtime needs none of it. It folds the changes it appends
  // itself, and the open turn comes from here: DSH takes a message out of the inbox, naming the
  // turn, before it logs it as the step's user message.
  const stopClaimed = ctx.on('agent/inbox/claimed', ({ agent, message, turn }) =>
    runtimes.get(agent)?.noteClaimed(message, turn),
  )
  // Outermost (prepend) and after every inner hook (`await next()`), so nothing this plugin
  // did not see can change the step's input between this check and DSH logging it.
  const stopPreStep = ctx.on(
    'agent/pre-step',
    async ({ agent, messages, turn }, next) => {
      const decision = await next()
      const runtime = runtimes.get(agent)
      if (runtime !== undefined) return runtime.admitStep(messages, decision, turn)
      // No runtime of this plugin serves the agent now: a hot reload went on while the hooks ran,
      // before or after this plugin's runtime joined. Neither it nor a successor checks this step.
      const { events, header } = agent.session
      return admitByLog(messages, decision, events, header.seedLength ?? 0)
    },
    { prepend: true },
  )
  const stopStepHooks = () => {
    stopClaimed()
    stopPreStep()
  }
  const host = await inspectHost(process.argv[1])
  const registration = registerLoopEventType(host.hostSessionModule)
  const support = judgeHost(host.facts)
  if (!support.supported) {
    stopStepHooks()
    report.error(support.message)
    try {
      registerInactiveLoopCommand(ctx, support.message)
    } catch (error) {
      // Another plugin's `/loop` answers instead; the line above still says why loop is off.
      if (!isLoopCommandTaken(error)) throw error
    }
    return
  }
  if (!registration.hostResolved) {
    report.warn(
      `could not resolve the host's @deepseek-ai/dsh-session from its entry point (${String(process.argv[1])}); ` +
        `only the plugin's own copy knows "loop/change", so sessions holding loops may fail to reopen after a restart ` +
        `if the host uses another copy`,
    )
  }
  // One clock for the runtimes, their tools and the command; the process's own in every host.
  const clock = realClock
  // First, so that with another implementation of the specification installed (it registers
  // the same command, tools and projection, and sends the same heartbeats) nothing is left registered.
  try {
    registerLoopCommand(ctx, clock)
  } catch (error) {
    if (!isLoopCommandTaken(error)) throw error
    stopStepHooks()
    report.error(OTHER_LOOP_PLUGIN_MESSAGE)
    return
  }
  const currentConfig = watchLoopConfig(ctx, config, report)
  registerLoopProjection(ctx)

  const cleanups = new Map<Agent, () => Promise<void>>()

  /**
   * Attach a runtime and tools to one root agent of the user's, unwinding with the agent. A
   * delegated session is not the user's: DSH marks it `origin: 'subagent'` (its sidebar hides it),
   * and a background sub-agent is a root without an owner, so being a root is not enough.
   */
  const attach = (agent: Agent, joinedLive: boolean): void => {
    if (!ctx.agents.roots().includes(agent) || agent.session.header.origin === 'subagent') return
    // A root being disposed is still listed while its fiber is gone (a hot reload in that instant).
    if (agent.ctx.fiber.uid === null) return
    const oneShotHost = ctx.get(ONE_SHOT_HOST_SERVICE) !== undefined
    const runtime = new LoopRuntime(ctx, agent, { oneShotHost, clock, joinedLive })
    const cleanup = agent.ctx.effect(() => {
      const disposeTools = registerLoopTools(agent.ctx, runtime, { config: currentConfig, oneShotHost })
      runtimes.set(agent, runtime)
      runtime.start()
      return async () => {
        runtimes.delete(agent)
        disposeTools()
        await runtime.dispose()
        cleanups.delete(agent)
      }
    }, 'loop.runtime()')
    cleanups.set(agent, cleanup)
  }

  ctx.effect(() => {
    const stopCreated = ctx.on('agent/created', ({ agent }) => attach(agent, false))
    // Agents already live (a hot reload, a late install) get no agent/created.
    for (const agent of ctx.agents.roots()) attach(agent, true)
    return async () => {
      stopCreated()
      const pending = [...cleanups.values()]
      cleanups.clear()
      await Promise.allSettled(pending.map((cleanup) => cleanup()))
    }
  }, 'loop.lifecycle()')
}

/**
 * The real in-process DSH host composition, free of vitest so the benchmark
 * (scripts/bench/host.ts) boots the same host the tests do (test/support/host.ts):
 * a real Cordis context with DSH's own plugins in DSH's order, JSONL persistence
 * under a root, and the loop plugin last. Nothing here is faked; the model
 * boundary is installed by each caller's agent `setup`.
 * @module harness/compose-host
 */
import { join } from 'node:path'
import { Context } from '@deepseek-ai/cordis'
import * as agentPlugin from '@deepseek-ai/dsh-agent'
import type { AgentHandle } from '@deepseek-ai/dsh-agent'
import * as agentLoopPlugin from '@deepseek-ai/dsh-agent-loop'
import * as commandsPlugin from '@deepseek-ai/dsh-commands'
import * as llmPlugin from '@deepseek-ai/dsh-llm'
import * as deepseekPlugin from '@deepseek-ai/dsh-llm-deepseek'
import * as sessionPlugin from '@deepseek-ai/dsh-session'
import { SessionId } from '@deepseek-ai/dsh-session'
import type {} from '@deepseek-ai/dsh-session-persistence'
import * as jsonlPlugin from '@deepseek-ai/dsh-session-persistence-jsonl'
import * as projectionPlugin from '@deepseek-ai/dsh-session-projection'
import * as settingsFilePlugin from '@deepseek-ai/dsh-settings-file'
import * as storagePlugin from '@deepseek-ai/dsh-storage'
import * as storageDomainPlugin from '@deepseek-ai/dsh-storage-domain'
import * as storageJsonPlugin from '@deepseek-ai/dsh-storage-json'
import * as systemPromptPlugin from '@deepseek-ai/dsh-system-prompt'
import * as toolsPlugin from '@deepseek-ai/dsh-tools'
import * as workspacePlugin from '@deepseek-ai/dsh-workspace'
import * as loopPlugin from '../src/index.ts'

/** A Cordis plugin module as `ctx.plugin` takes it. */
export type PluginModule = Parameters<Context['plugin']>[0]

/** Agent options every test and bench agent uses; the provider is never reached. */
export const AGENT_OPTIONS = { provider: 'deepseek-official', model: 'deepseek-chat' } as const

/** What {@link composeHost} mounts. */
export interface CompositionOptions {
  /** Persistence root (JSONL logs live under it); agents' `cwd`. */
  readonly root: string
  /** Environment variable the provider reads its (fake) key from. */
  readonly apiKeyEnv: string
  /** Provider base URL; a closed port unless a test points it at the mock server. */
  readonly baseURL?: string
  /** Mount JSONL persistence (default true). */
  readonly persistence?: boolean
  /** Its write-behind window (DSH's default unless given): a simulation's is longer than its run. */
  readonly writeBatchMaxDelayMs?: number
  /** Mount the projection registry (default true). */
  readonly projections?: boolean
  /** Mount DSH's file settings provider on this settings document (off by default). */
  readonly settingsPath?: string
  /** Let that provider watch the document, as `dsh web` does (default false: no file watcher). */
  readonly settingsWatch?: boolean
  /** Provide DSH's one-shot service, as `dsh --profile headless "task"` does. */
  readonly oneShotHost?: boolean
  /** Mount DSH web's workspace registry (its archive set) over JSON storage under the root (off by default). */
  readonly workspace?: boolean
  /** Load the loop plugin (default true). */
  readonly loop?: boolean
  /** The loop plugin row's `config:` (passed as given). */
  readonly loopConfig?: unknown
}

/**
 * Compose a real host with the plugins DSH composes, in DSH's order.
 * @param options - what to mount.
 * @returns the context, every plugin applied.
 */
export async function composeHost(options: CompositionOptions): Promise<Context> {
  process.env[options.apiKeyEnv] ??= 'test-key'
  const ctx = new Context()
  const plugins: [unknown, unknown?][] = [
    [llmPlugin],
    [sessionPlugin],
    [systemPromptPlugin],
    [toolsPlugin],
    [agentPlugin],
    [deepseekPlugin, { baseURL: options.baseURL ?? 'http://127.0.0.1:9/v1', apiKeyEnv: options.apiKeyEnv }],
  ]
  if (options.persistence !== false)
    plugins.push([jsonlPlugin, { root: options.root, writeBatchMaxDelayMs: options.writeBatchMaxDelayMs }])
  if (options.projections !== false) plugins.push([projectionPlugin])
  if (options.settingsPath !== undefined)
    plugins.push([settingsFilePlugin, { path: options.settingsPath, watch: options.settingsWatch === true }])
  if (options.workspace === true)
    plugins.push(
      [storagePlugin],
      [storageJsonPlugin, { root: join(options.root, 'storages') }],
      [storageDomainPlugin, { backend: 'json' }],
      [workspacePlugin],
    )
  plugins.push([commandsPlugin], [agentLoopPlugin, { agents: [] }])
  if (options.oneShotHost === true) ctx.provide('headlessStartup', { task: 'one task' })
  for (const [plugin, config] of plugins) {
    // Service packages export their class as default; function plugins are the namespace itself.
    const module = (plugin as { default?: unknown }).default ?? plugin
    await ctx.plugin(module as PluginModule, config as never)
  }
  if (options.loop !== false) await ctx.plugin(loopPlugin as PluginModule, options.loopConfig as never)
  return ctx
}

/** An agent's `setup` hook: runs on the agent's context before the agent is published. */
export type AgentSetup = (agentCtx: Context) => void

/**
 * Create a root agent on a new session (`cwd` is the root), its boundary installed by `setup`.
 * @param ctx - composed host.
 * @param root - the host's root.
 * @param id - session id.
 * @param setup - installs the fake model boundary.
 * @returns the agent's handle.
 */
export function createRootAgent(ctx: Context, root: string, id: string, setup: AgentSetup): Promise<AgentHandle> {
  return ctx.agents.create({ sessionId: SessionId(id), meta: { cwd: root }, agentOptions: AGENT_OPTIONS, setup })
}

/**
 * Resume a persisted session as a root agent, its boundary installed by `setup`.
 * @param ctx - composed host.
 * @param id - session id.
 * @param setup - installs the fake model boundary.
 * @returns the agent's handle.
 */
export function resumeRootAgent(ctx: Context, id: string, setup: AgentSetup): Promise<AgentHandle> {
  return ctx.agents.resume({ resumeSessionId: SessionId(id), agentOptions: AGENT_OPTIONS, setup })
}

/**
 * A real in-process DSH host for the bench: the tests' composition (harness/compose-host.ts: Cordis context,
 * session store, JSONL persistence, agent registry and loop, tool and command runtimes, projection registry), without
 * vitest. Only the model boundary is fake: `agent.send` records and returns.
 * @module scripts/bench/host
 */
import { closeSync, cpSync, fsyncSync, openSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Context } from '@deepseek-ai/cordis'
import type { Agent } from '@deepseek-ai/dsh-agent'
import { CallId } from '@deepseek-ai/dsh-llm'
import { KNOWN_SESSION_EVENT_TYPES } from '@deepseek-ai/dsh-session'
import { defineTool } from '@deepseek-ai/dsh-tools'
import { composeHost, createRootAgent, resumeRootAgent } from '../../harness/compose-host.ts'
import { tempDir } from '../../harness/temp-dir.ts'

export interface Host {
  readonly ctx: Context
  readonly root: string
  dispose(): Promise<void>
}

export interface HostOptions {
  /** Persistence root; a fresh temp dir (removed on dispose) when omitted. */
  readonly root?: string
  /** Keep a fresh root after dispose. */
  readonly keepRoot?: boolean
  /** Mount the loop plugin (default true). */
  readonly loop?: boolean
  readonly loopConfig?: Record<string, unknown>
}

/** A private, written-back copy of a persistence root, so no job changes the file another opens. */
export function copyRoot(root: string): string {
  const copy = tempDir('loop-bench-copy-')
  cpSync(root, copy, { recursive: true })
  // Written back now, so no writeback of the copy runs during a timed section.
  for (const entry of readdirSync(copy, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue
    const fd = openSync(join(entry.parentPath, entry.name), 'r')
    fsyncSync(fd)
    closeSync(fd)
  }
  return copy
}

export async function bootHost(options: HostOptions = {}): Promise<Host> {
  const root = options.root ?? tempDir('loop-bench-')
  const ownsRoot = options.root === undefined && options.keepRoot !== true
  const loop = options.loop !== false
  const ctx = await composeHost({
    root,
    apiKeyEnv: 'LOOP_BENCH_DEEPSEEK_KEY',
    loop,
    loopConfig: options.loopConfig ?? {},
  })
  // A change-feed subscriber, as DSH web's host-apiproxy has for connected clients: the registry then validates every
  // changed view, which is part of the per-event cost.
  ctx.sessionProjections.onChanged(() => {})
  // The host alone must still open a log holding `loop/change`: its catalog refuses unknown types.
  if (!loop) (KNOWN_SESSION_EVENT_TYPES as Set<string>).add('loop/change')
  const dispose = async () => {
    await ctx.fiber.dispose()
    if (ownsRoot) rmSync(root, { recursive: true, force: true })
  }
  return { ctx, root, dispose }
}

/** A real agent whose model boundary is fake: it stays idle and `send` calls {@link onSend}. */
export interface FakeAgent {
  readonly agent: Agent
  onSend: (message: unknown) => void
  dispose(): Promise<void>
}

function boundary(): { fake: Pick<FakeAgent, 'onSend'>; setup: (agentCtx: Context) => void } {
  const fake = { onSend: (_message: unknown) => {} }
  const setup = (agentCtx: Context) => {
    const agent = agentCtx.agent!
    const send = (message: unknown) => fake.onSend(message)
    for (const name of ['send', 'steer', 'followup'])
      Object.defineProperty(agent, name, { value: send, configurable: true })
    Object.defineProperty(agent, 'status', { get: () => 'idle', configurable: true })
  }
  return { fake, setup }
}

export async function createAgent(host: Host, id: string): Promise<FakeAgent> {
  const { fake, setup } = boundary()
  const handle = await createRootAgent(host.ctx, host.root, id, setup)
  return Object.assign(fake, { agent: handle.agent, dispose: () => handle.dispose() })
}

export async function resumeAgent(host: Host, id: string): Promise<FakeAgent> {
  const { fake, setup } = boundary()
  const handle = await resumeRootAgent(host.ctx, id, setup)
  return Object.assign(fake, { agent: handle.agent, dispose: () => handle.dispose() })
}

let callNumber = 0

/** A tool call through the real tool runtime; throws when the tool reports an error. */
export async function runTool(host: Host, agent: Agent, name: string, args: unknown): Promise<unknown> {
  callNumber += 1
  const result = await host.ctx.tools.execute({
    callId: CallId(`bench-call-${callNumber}`),
    name,
    arguments: args,
    signal: new AbortController().signal,
    agent,
  })
  if (result.isError) throw new Error(`${name} failed: ${result.error.message}`)
  return result.value
}

export const FLOOR_TOOL = 'bench_flush'

/**
 * The host floor of a drive: a tool through the same tool runtime as `loop_list` that awaits the same
 * `ctx.sessions.flush` barrier and does nothing else. `loop_list` minus this call, timed back to back in the same
 * session, is the plugin's own share (its queue, its fold, its result); what the host and the heap cost is in both.
 */
export function registerFloorTool(host: Host): void {
  const ctx = host.ctx
  ctx.tools.register(
    defineTool({
      name: FLOOR_TOOL,
      description: 'Benchmark floor: flush the session and return nothing.',
      parameters: {},
      output: {
        schema: { type: 'array', items: { type: 'string' } },
        render: () => [{ type: 'text' as const, text: '[]' }],
      },
      async execute(_args, exec): Promise<string[]> {
        await ctx.sessions.flush(exec.agent!.session)
        return []
      },
    }),
  )
}

/**
 * A real in-process DSH host for the benchmark: the tests' composition
 * (test/support/compose-host.ts: real Cordis context, session store, JSONL
 * persistence, agent registry and loop, tool and command runtimes, projection
 * registry) plus the bench's counters, without vitest: the model boundary is a
 * plain recording function, nothing else is faked.
 * @module scripts/bench/host
 */
import { closeSync, cpSync, fsyncSync, openSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Context } from '@deepseek-ai/cordis'
import type { Agent, AgentStatus } from '@deepseek-ai/dsh-agent'
import { CallId } from '@deepseek-ai/dsh-llm'
import { KNOWN_SESSION_EVENT_TYPES } from '@deepseek-ai/dsh-session'
import { defineTool } from '@deepseek-ai/dsh-tools'
import {
  composeHost,
  createRootAgent,
  resumeRootAgent,
  tempDir as makeTempDir,
} from '../../test/support/compose-host.ts'

const API_KEY_ENV = 'LOOP_BENCH_DEEPSEEK_KEY'

/** Options for {@link bootHost}. */
export interface HostOptions {
  /** Persistence root; a fresh temp dir when omitted, removed on dispose unless {@link keepRoot}. */
  readonly root?: string
  /** Keep a fresh temp root after dispose (the grown session is resumed by a later job). */
  readonly keepRoot?: boolean
  /** Load the loop plugin (default true). */
  readonly loop?: boolean
  /** The loop plugin's config (its row in the DSH patch). */
  readonly loopConfig?: Record<string, unknown>
}

/** A booted host and its counters. */
export interface Host {
  readonly ctx: Context
  readonly root: string
  /** `ctx.sessions.flush` calls so far. */
  readonly flushes: () => number
  /** How long each `ctx.sessions.flush` call took to settle, ms, in call order. */
  readonly flushDurations: number[]
  /** Batches the JSONL backend appended (each is one open, write, fsync, close). */
  readonly diskWrites: () => number
  dispose(): Promise<void>
}

/** A fresh temp directory. */
export function tempDir(prefix = 'loop-bench-'): string {
  return makeTempDir(prefix)
}

/**
 * A private copy of a persistence root (a session snapshot), so a job that appends to a
 * resumed log never changes the file another job opens.
 * @param root - the snapshot.
 * @returns the copy's root; the caller removes it.
 */
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

/**
 * Let a host without the plugin open a log that holds `loop/change`: the persistence catalog
 * refuses unknown types, so the baseline adds the type exactly as the plugin does on start.
 */
export function allowLoopEvents(): void {
  ;(KNOWN_SESSION_EVENT_TYPES as Set<string>).add('loop/change')
}

/**
 * Boot a real host with the plugins DSH composes, in DSH's order.
 * @param options - what to mount.
 * @returns the host.
 */
export async function bootHost(options: HostOptions = {}): Promise<Host> {
  const ownsRoot = options.root === undefined && options.keepRoot !== true
  const root = options.root ?? tempDir()
  const ctx = await composeHost({
    root,
    apiKeyEnv: API_KEY_ENV,
    loop: options.loop !== false,
    loopConfig: options.loopConfig ?? {},
  })
  // Subscribed to the projection change feed, as DSH web's host-apiproxy does for connected clients:
  // the registry then validates every changed view with its schema, which is part of the per-event cost.
  ctx.sessionProjections.onChanged(() => {})
  if (options.loop === false) allowLoopEvents()
  let flushes = 0
  const flushDurations: number[] = []
  const flush = ctx.sessions.flush.bind(ctx.sessions)
  ctx.sessions.flush = (session) => {
    flushes += 1
    const started = performance.now()
    const settled = () => void flushDurations.push(performance.now() - started)
    const result = flush(session)
    result.then(settled, settled)
    return result
  }
  let diskWrites = 0
  // A passthrough counter on the backend's own append (one fsync'd batch per call).
  const backend = ctx.sessionPersistence as unknown as { appendLines(meta: unknown, events: unknown): Promise<void> }
  const appendLines = backend.appendLines.bind(backend)
  backend.appendLines = (meta, events) => {
    diskWrites += 1
    return appendLines(meta, events)
  }
  const dispose = async () => {
    await ctx.fiber.dispose()
    if (ownsRoot) rmSync(root, { recursive: true, force: true })
  }
  return { ctx, root, flushes: () => flushes, flushDurations, diskWrites: () => diskWrites, dispose }
}

/** The fake model boundary installed on one real agent: `send` records and returns at once. */
export interface FakeAgent {
  readonly agent: Agent
  /** Called synchronously inside every `agent.send`, with the message. */
  onSend: (message: unknown) => void
  /** How many sends so far. */
  readonly sends: () => number
  setStatus(status: AgentStatus): void
  /** Dispose the agent (its session stays stored, to be resumed). */
  dispose(): Promise<void>
}

/** Replace the model-facing methods of a real agent before it is published. */
function boundarySetup() {
  let status: AgentStatus = 'idle'
  let sends = 0
  const fake = {
    onSend: (_message: unknown) => {},
    sends: () => sends,
    setStatus: (next: AgentStatus) => {
      status = next
    },
  }
  const setup = (agentCtx: Context) => {
    const agent = agentCtx.agent!
    const send = (message: unknown) => {
      sends += 1
      fake.onSend(message)
    }
    Object.defineProperty(agent, 'send', { value: send, configurable: true })
    Object.defineProperty(agent, 'steer', { value: send, configurable: true })
    Object.defineProperty(agent, 'followup', { value: send, configurable: true })
    Object.defineProperty(agent, 'status', { get: () => status, configurable: true })
  }
  return { fake, setup }
}

/**
 * Create a root agent on a new session with the fake boundary.
 * @param host - booted host.
 * @param id - session id.
 * @returns the agent and its boundary.
 */
export async function createAgent(host: Host, id: string): Promise<FakeAgent> {
  const { fake, setup } = boundarySetup()
  const handle = await createRootAgent(host.ctx, host.root, id, setup)
  return Object.assign(fake, { agent: handle.agent, dispose: () => handle.dispose() })
}

/**
 * Resume a persisted session as a root agent with the fake boundary.
 * @param host - booted host.
 * @param id - session id.
 * @param onSend - the boundary's first `onSend`.
 * @returns the agent and its boundary.
 */
export async function resumeAgent(host: Host, id: string, onSend?: (message: unknown) => void): Promise<FakeAgent> {
  const { fake, setup } = boundarySetup()
  // A runtime may send while the resume is still settling: the boundary must be in place first.
  if (onSend !== undefined) fake.onSend = onSend
  const handle = await resumeRootAgent(host.ctx, id, setup)
  return Object.assign(fake, { agent: handle.agent, dispose: () => handle.dispose() })
}

let callNumber = 0

/**
 * Execute a tool through the real tool runtime on behalf of an agent.
 * @param host - booted host.
 * @param agent - calling agent.
 * @param name - tool name.
 * @param args - arguments.
 * @returns the runtime's result; throws when the tool reported an error.
 */
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

/** Name of the bench's own tool: the host floor of a tool call (see {@link registerFloorTool}). */
export const FLOOR_TOOL = 'bench_flush'

/**
 * Register the host floor of a drive: a tool that goes through the same tool runtime as
 * `loop_list` and awaits the same `ctx.sessions.flush` barrier, and does nothing else. A
 * `loop_list` minus this call, timed back to back in the same session, is the plugin's own
 * share of a drive (its queue, its fold read, its result); what the host does per call, and
 * what the heap costs every call, is in both.
 * @param host - booted host.
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

/**
 * A real in-process DSH host for tests: real Cordis context, session store,
 * JSONL persistence, agent registry and loop, tool and command runtimes and
 * projection registry. The model boundary is the only fake: agents are real,
 * but `send`, `steer` and `followup` are spies and `status` is controllable.
 * The composition itself is harness/compose-host.ts (shared with the bench).
 *
 * A file's set-up is one call: {@link useFakeHost} (a fresh fake-clock host and
 * agent per test, with `create`/`tool`/`command` on them), {@link useHosts} (hosts
 * a test boots itself, disposed after it), {@link useMockModel} (hosts against the
 * mock LLM on loopback) or, for one host per file, {@link startFakeHost}.
 */
import type { Context } from '@deepseek-ai/cordis'
import type { Agent, AgentHandle, AgentStatus } from '@deepseek-ai/dsh-agent'
import { SessionId } from '@deepseek-ai/dsh-session'
import { CallId, createUserMessage } from '@deepseek-ai/dsh-llm'
import { startMockLlmServer, type MockLlmServer, type MockLlmServerOptions } from '@deepseek-ai/dsh-llm-mock-server'
import { afterEach, beforeEach, vi, type Mock } from 'vitest'
import type { LoopClock } from '../../src/clock.ts'
import { LoopRuntime } from '../../src/loop.ts'
import type { LoopChange, LoopCreateChange } from '../../src/types.ts'
import { AGENT_OPTIONS, composeHost, createRootAgent, resumeRootAgent } from '../../harness/compose-host.ts'
import { NOW } from './epoch.ts'
import { tempDir } from '../../harness/temp-dir.ts'

export { AGENT_OPTIONS }

/** Environment variable holding the (fake) provider key. */
const API_KEY_ENV = 'LOOP_TEST_DEEPSEEK_KEY'

/** Options for {@link bootHost}. */
export interface HostOptions {
  /** Persistence root; a fresh temp dir when omitted. */
  readonly root?: string
  /** Load the loop plugin (default true). */
  readonly loop?: boolean
  /** Mount JSONL persistence (default true). */
  readonly persistence?: boolean
  /** Mount the projection registry (default true). */
  readonly projections?: boolean
  /** Provider base URL; a closed port unless a test points it at the mock server. */
  readonly baseURL?: string
  /** Mount DSH's file settings provider on this settings document (off by default). */
  readonly settingsPath?: string
  /** Let that provider watch the document, as `dsh web` does (default false: no file watcher). */
  readonly settingsWatch?: boolean
  /** The loop plugin row's `config:` (default none: the schema's defaults). */
  readonly loopConfig?: Record<string, unknown>
  /** Provide DSH's one-shot service, as `dsh --profile headless "task"` does. */
  readonly oneShotHost?: boolean
  /** Mount DSH web's workspace registry, with its archive set (off by default). */
  readonly workspace?: boolean
}

/** A booted host. */
export interface Host {
  readonly ctx: Context
  readonly root: string
  dispose(): Promise<void>
}

/**
 * Boot a real host with the plugins DSH composes, in DSH's order.
 * @param options - what to mount.
 * @returns the host.
 */
export async function bootHost(options: HostOptions = {}): Promise<Host> {
  const root = options.root ?? tempDir()
  const ctx = await composeHost({ ...options, root, apiKeyEnv: API_KEY_ENV })
  trackFlushes(ctx)
  return { ctx, root, dispose: () => ctx.fiber.dispose() }
}

let pendingFlushes = 0

/** Count in-flight flushes (a passthrough wrapper) so {@link settle} can wait for real I/O. */
function trackFlushes(ctx: Context): void {
  const sessions = ctx.sessions
  const flush = sessions.flush.bind(sessions)
  sessions.flush = (session) => {
    pendingFlushes += 1
    let result: Promise<boolean>
    try {
      result = flush(session)
    } catch (error) {
      pendingFlushes -= 1
      throw error
    }
    return result.finally(() => {
      pendingFlushes -= 1
    })
  }
}

/** The fake model boundary installed on one real agent. */
export interface FakeAgent {
  readonly agent: Agent
  readonly handle: AgentHandle
  readonly send: Mock<Agent['send']>
  readonly steer: Mock<Agent['steer']>
  readonly followup: Mock<Agent['followup']>
  setStatus(status: AgentStatus): void
}

/** Replace the model-facing methods of a real agent before it is published. */
function installBoundary(agent: Agent) {
  let status: AgentStatus = 'idle'
  const send = vi.fn<Agent['send']>()
  const steer = vi.fn<Agent['steer']>()
  const followup = vi.fn<Agent['followup']>()
  Object.defineProperty(agent, 'send', { value: send, configurable: true })
  Object.defineProperty(agent, 'steer', { value: steer, configurable: true })
  Object.defineProperty(agent, 'followup', { value: followup, configurable: true })
  Object.defineProperty(agent, 'status', { get: () => status, configurable: true })
  return {
    send,
    steer,
    followup,
    setStatus: (next: AgentStatus) => {
      status = next
    },
  }
}

/** Shared setup hook: captures the agent and installs the boundary before publication. */
function boundarySetup() {
  let boundary: ReturnType<typeof installBoundary> | undefined
  return {
    setup: (agentCtx: Context) => {
      boundary = installBoundary(agentCtx.agent!)
    },
    finish: (handle: AgentHandle): FakeAgent => ({ agent: handle.agent, handle, ...boundary! }),
  }
}

/**
 * Create a root agent on a new session with the fake boundary.
 * @param host - booted host.
 * @param id - session id.
 * @returns the agent and its spies.
 */
export async function createFakeAgent(host: Host, id: string): Promise<FakeAgent> {
  const { setup, finish } = boundarySetup()
  return finish(await createRootAgent(host.ctx, host.root, id, setup))
}

/**
 * Create an agent with the fake boundary through another agent's context (a child,
 * not a root) or seeded with a parent's log as DSH seeds a fork.
 * @param host - booted host.
 * @param id - the new session id.
 * @param relation - `child` of `parent`, or a `fork` of `parent`'s session (a root).
 * @param parent - the agent it relates to.
 * @returns the agent and its spies.
 */
export async function createRelatedFakeAgent(
  host: Host,
  id: string,
  relation: 'child' | 'fork',
  parent: Agent,
): Promise<FakeAgent> {
  const { setup, finish } = boundarySetup()
  if (relation === 'child') {
    const handle = await parent.ctx.agents.create({
      sessionId: SessionId(id),
      meta: { cwd: host.root },
      agentOptions: AGENT_OPTIONS,
      setup,
    })
    return finish(handle)
  }
  const seed = parent.session.events
  const handle = await host.ctx.agents.create({
    sessionId: SessionId(id),
    meta: { cwd: host.root, parentSession: parent.id, seedLength: seed.length },
    seed,
    agentOptions: AGENT_OPTIONS,
    setup,
  })
  return finish(handle)
}

/**
 * Resume a persisted session as a root agent with the fake boundary.
 * @param host - booted host.
 * @param id - session id.
 * @returns the agent and its spies.
 */
export async function resumeFakeAgent(host: Host, id: string): Promise<FakeAgent> {
  const { setup, finish } = boundarySetup()
  return finish(await resumeRootAgent(host.ctx, id, setup))
}

/**
 * Every `loop/change` payload in a session, in log order: the one place a test reads them as the
 * records this build writes (a test that writes a malformed one reads `agent.session.events`).
 */
export function loopChanges(agent: Agent): LoopChange[] {
  return agent.session.events.filter((event) => event.type === 'loop/change').map((event) => event.data as LoopChange)
}

/**
 * The creates among loop changes.
 * @param changes - payloads, in log order.
 * @returns the creates, in order.
 */
export function createsOf(changes: readonly LoopChange[]): LoopCreateChange[] {
  return changes.filter((change): change is LoopCreateChange => change.operation === 'create')
}

// Captured before any test fakes the clock: real waits let persistence I/O finish.
const realSetTimeout = globalThis.setTimeout

/** Let queued promise work and real persistence I/O settle without moving the fake clock. */
export async function settle(): Promise<void> {
  // Quiet means no flush in flight for several consecutive real-time rounds.
  for (let quiet = 0, round = 0; quiet < 4 && round < 500; round += 1) {
    await vi.advanceTimersByTimeAsync(0)
    await new Promise<void>((resolve) => realSetTimeout(resolve, 1))
    quiet = pendingFlushes === 0 ? quiet + 1 : 0
  }
}

/**
 * Move the fake clock forward in steps, settling real I/O after each, so that a
 * timer re-armed after a flush is in place before the clock passes its target.
 * @param ms - total milliseconds to advance.
 * @param step - step size; keep it at or below the shortest interval under test.
 */
export async function advance(ms: number, step = 250): Promise<void> {
  await settle()
  for (let elapsed = 0; elapsed < ms;) {
    const next = Math.min(step, ms - elapsed)
    await vi.advanceTimersByTimeAsync(next)
    elapsed += next
    await settle()
  }
}

/**
 * The `loop/change` payloads that reached disk, read through the persistence's own raw reader.
 * @param host - booted host with JSONL persistence.
 * @param id - session id.
 * @returns payloads in log order.
 */
export async function persistedLoopChanges(host: Host, id: string): Promise<LoopChange[]> {
  const raw = await host.ctx.sessionPersistence.readRaw(SessionId(id))
  if (raw === undefined) return []
  return raw.content
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as { type: string; data: LoopChange })
    .filter((record) => record.type === 'loop/change')
    .map((record) => record.data)
}

/** A fresh abort signal. */
export function signal(): AbortSignal {
  return new AbortController().signal
}

let callNumber = 0

/**
 * Execute a tool through the real tool runtime on behalf of an agent.
 * @param host - booted host.
 * @param agent - calling agent (its scope decides visibility).
 * @param name - tool name.
 * @param args - arguments.
 * @returns the runtime's materialized result.
 */
export function runTool(host: Host, agent: Agent | undefined, name: string, args: unknown) {
  callNumber += 1
  return host.ctx.tools.execute({
    callId: CallId(`test-call-${callNumber}`),
    name,
    arguments: args,
    signal: signal(),
    ...(agent === undefined ? {} : { agent }),
  })
}

/** A tool call's outcome as the runtime materializes it. */
export type ToolOutcome = Awaited<ReturnType<typeof runTool>>

/**
 * A tool outcome as one value, for one assertion: its error when the call failed, its value when it did not.
 * @param outcome - the outcome.
 * @returns the error or the value.
 */
export function outcomeOf(outcome: ToolOutcome): unknown {
  return outcome.isError ? outcome.error : outcome.value
}

/**
 * The text of each message a fake agent was sent, in order.
 * @param target - the fake agent.
 * @returns the texts.
 */
export function sentTexts(target: FakeAgent): string[] {
  return target.send.mock.calls.map(([message]) => (message.content[0] as { text: string }).text)
}

/** A failed tool call's error as the caller sees it. */
export interface ToolFailure {
  readonly message: string
  readonly info?: unknown
}

/**
 * A tool outcome's error, for asserting a refusal; the word `succeeded` when the call did not fail.
 * @param outcome - the outcome.
 * @returns the error, or `succeeded`.
 */
export function failureOf(outcome: ToolOutcome): ToolFailure | 'succeeded' {
  return outcome.isError ? outcome.error : 'succeeded'
}

/**
 * A tool outcome's error message; the word `succeeded` when the call did not fail.
 * @param outcome - the outcome.
 * @returns the message, or `succeeded`.
 */
export function failureMessageOf(outcome: ToolOutcome): string {
  return outcome.isError ? outcome.error.message : 'succeeded'
}

/**
 * One field of each loop a `loop_list` outcome lists, or its error's message.
 * @param outcome - the outcome.
 * @param field - the field of the listed view.
 * @returns the field's values in order, or the message.
 */
export function listedOf(outcome: ToolOutcome, field: 'id' | 'prompt'): string[] | string {
  return outcome.isError
    ? outcome.error.message
    : (outcome.value as Record<string, string>[]).map((loop) => loop[field]!)
}

/**
 * Run a slash line through the real command runtime.
 * @param host - booted host.
 * @param agent - the agent whose UI received the line.
 * @param line - full line, e.g. `/loop list`.
 * @returns the command result.
 */
export async function runCommand(host: Host, agent: Agent, line: string) {
  const execution = await host.ctx.commands.execute(agent, line, [], signal())
  if (execution === undefined) throw new Error(`no command matched ${line}`)
  return execution.result
}

/** Fake timers and Date only: persistence I/O stays real. */
function useFakeClock(now: number = NOW): void {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now })
}

/**
 * Create a loop through the real `loop_create` tool.
 * @param host - booted host.
 * @param agent - the agent whose session gets the loop.
 * @param prompt - the loop's prompt.
 * @param seconds - its interval.
 * @returns the new loop's id; a refusal throws its message.
 */
export async function createLoop(host: Host, agent: Agent, prompt: string, seconds: number): Promise<string> {
  const result = await runTool(host, agent, 'loop_create', { prompt, time_in_seconds: seconds })
  if (result.isError) throw new Error(result.error.message)
  return (result.value as { id: string }).id
}

/**
 * Fake the clock, boot a real host and create one fake-boundary root agent: for
 * a file whose tests share one host (a `beforeAll`); per test, {@link useFakeHost}.
 * @param sessionId - the agent's session id.
 * @returns the host and the agent.
 */
export async function startFakeHost(sessionId: string): Promise<{ host: Host; fake: FakeAgent }> {
  useFakeClock()
  const host = await bootHost()
  return { host, fake: await createFakeAgent(host, sessionId) }
}

/** Dispose a host started by {@link startFakeHost} and restore real timers. */
export async function stopFakeHost(host: Host): Promise<void> {
  await host.dispose()
  vi.useRealTimers()
}

/** What {@link useHosts} hands a test file. */
export interface Hosts {
  /** Fake the clock ({@link useFakeClock}), then boot a host that is disposed after the test. */
  boot(options?: HostOptions): Promise<Host>
  /** Boot a host on whatever timers are in place (real ones unless the test faked them), disposed after the test. */
  bootKeepingTimers(options?: HostOptions): Promise<Host>
  /** Dispose a host now (a process that ends mid-test) and forget it. */
  dispose(host: Host): Promise<void>
}

/**
 * Per-file host bookkeeping (registers an `afterEach`): every host it saw is
 * disposed after each test and real timers come back.
 * @returns ways to boot and dispose hosts.
 */
export function useHosts(): Hosts {
  const hosts: Host[] = []
  afterEach(async () => {
    for (const host of hosts.splice(0)) await host.dispose()
    vi.useRealTimers()
  })
  const bootKeepingTimers = async (options: HostOptions = {}): Promise<Host> => {
    const host = await bootHost(options)
    hosts.push(host)
    return host
  }
  return {
    boot: (options) => {
      useFakeClock()
      return bootKeepingTimers(options)
    },
    bootKeepingTimers,
    dispose: async (host) => {
      const index = hosts.indexOf(host)
      if (index !== -1) hosts.splice(index, 1)
      await host.dispose()
    },
  }
}

/**
 * A runtime the test builds itself for one agent, as `src/index.ts` builds it in a long-lived
 * host, on the test's `clock` if given; not started. On a host booted without the plugin it is
 * the agent's only runtime.
 * @param host - the host whose context it runs in.
 * @param agent - the exact agent it serves.
 * @param clock - time and timers, when the test drives its own.
 * @returns the runtime; the test starts and disposes it.
 */
export function ownRuntime(host: Host, agent: Agent, clock?: LoopClock): LoopRuntime {
  return new LoopRuntime(host.ctx, agent, { oneShotHost: false, clock })
}

/** What {@link useFakeHost} hands a test file: the current test's host and agent, and helpers on them. */
export interface HostFixture {
  /** The test's host, booted on the fake clock before the test. */
  readonly host: Host
  /** The test's root agent on the fixture's session; a test that reopens the session may put the new agent here. */
  fake: FakeAgent
  /** Boot another host on the same (already fake) clock, disposed after the test: a bare host, a restart on `host.root`. */
  boot(options?: HostOptions): Promise<Host>
  /** Dispose the test's host and put a fresh one booted with `options` in its place (the clock is left as it is). */
  reboot(options?: HostOptions): Promise<Host>
  /** {@link createLoop} on the test's host, for `target` (the test's agent unless given). */
  create(prompt: string, seconds: number, target?: FakeAgent): Promise<string>
  /** {@link runTool} on the test's host, for `target` (the test's agent unless given). */
  tool(name: string, args: unknown, target?: FakeAgent): ReturnType<typeof runTool>
  /** {@link runCommand} on the test's host, for `target` (the test's agent unless given). */
  command(line: string, target?: FakeAgent): ReturnType<typeof runCommand>
}

/**
 * The host set-up of a file whose tests each run on a fresh host (registers a
 * `beforeEach` and an `afterEach`): before each test the clock is faked at
 * {@link NOW} (test/support/epoch.ts), a host booted with `options` and a
 * fake-boundary root agent created on `sessionId`; after it every host the test
 * booted is disposed and real timers come back.
 * @param sessionId - the session id of the test's agent.
 * @param options - how to boot the test's host.
 * @returns the fixture; read `host` and `fake` inside a test or hook, not at load.
 */
export function useFakeHost(sessionId: string, options: HostOptions = {}): HostFixture {
  const hosts = useHosts()
  let host: Host | undefined
  let fake: FakeAgent | undefined
  beforeEach(async () => {
    host = await hosts.boot(options)
    fake = await createFakeAgent(host, sessionId)
  })
  const current = (): FakeAgent => {
    if (fake === undefined) throw new Error(`no agent on ${sessionId}: reboot() leaves the fixture without one`)
    return fake
  }
  return {
    get host() {
      return host!
    },
    get fake() {
      return current()
    },
    set fake(next) {
      fake = next
    },
    boot: hosts.bootKeepingTimers,
    reboot: async (next = {}) => {
      await hosts.dispose(host!)
      fake = undefined
      host = await hosts.bootKeepingTimers(next)
      return host
    },
    create: (prompt, seconds, target = current()) => createLoop(host!, target.agent, prompt, seconds),
    tool: (name, args, target = current()) => runTool(host!, target.agent, name, args),
    command: (line, target = current()) => runCommand(host!, target.agent, line),
  }
}

/** What {@link useMockModel} hands a test file. */
export interface MockModel {
  /** The mock model server the test started (the first {@link MockModel.start} starts it). */
  readonly server: MockLlmServer
  /** Start the mock model on loopback with `script` unless one runs, and boot a host (real timers) pointed at it on `root`. */
  start(script: Omit<MockLlmServerOptions, 'port'>, root?: string, options?: HostOptions): Promise<Host>
  /** Dispose a host now (a process that ends mid-test). */
  dispose(host: Host): Promise<void>
}

/**
 * The set-up of a file that runs the real agent loop against DSH's published
 * mock LLM server on loopback (registers `afterEach` hooks): after each test
 * every host it booted is disposed, then the server is closed.
 * @returns the test's server and a way to boot hosts against it.
 */
export function useMockModel(): MockModel {
  let server: MockLlmServer | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })
  const hosts = useHosts()
  return {
    get server() {
      if (server === undefined) throw new Error('no mock model: start() one first')
      return server
    },
    start: async (script, root = tempDir(), options = {}) => {
      server ??= await startMockLlmServer({ port: 0, ...script })
      return hosts.bootKeepingTimers({ ...options, root, baseURL: `${server.baseURL}/v1` })
    },
    dispose: hosts.dispose,
  }
}

/**
 * Create a real root agent: real `send`, real inbox, real turns against the host's provider.
 * @param host - booted host.
 * @param id - session id.
 * @returns the agent.
 */
export async function createRealAgent(host: Host, id: string): Promise<Agent> {
  return (
    await host.ctx.agents.create({ sessionId: SessionId(id), meta: { cwd: host.root }, agentOptions: AGENT_OPTIONS })
  ).agent
}

/** Queue a user's task as the composer does: for the next turn, waking the agent. */
export function sendTask(agent: Agent, text: string): void {
  agent.send(createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'user' } }), 'next-turn', true)
}

/**
 * `/loop <seconds> <prompt>` through the real command runtime.
 * @param host - booted host.
 * @param agent - the agent whose UI received the line.
 * @param seconds - the interval.
 * @param prompt - the prompt.
 * @returns the id the reply names.
 */
export async function createLoopByCommand(host: Host, agent: Agent, seconds: number, prompt: string): Promise<string> {
  const reply = await runCommand(host, agent, `/loop ${seconds} ${prompt}`)
  const id = /^Created (loop_[0-9a-f]{8}):/.exec(reply.text ?? '')?.[1]
  if (id === undefined) throw new Error(`unexpected create reply: ${reply.text}`)
  return id
}

/**
 * Poll on real timers until a condition holds.
 * @param what - what is awaited, for the failure.
 * @param condition - checked every 20 ms.
 * @param timeoutMs - how long to wait before failing.
 */
export async function until(what: string, condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => realSetTimeout(resolve, 20))
  }
}

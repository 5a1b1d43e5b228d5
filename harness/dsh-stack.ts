/**
 * Drives a real `dsh` process (the @deepseek-ai/dsh CLI installed as a dev
 * dependency) the way a user runs it: an isolated DSH_HOME, the plugin added from
 * its packed tarball with `dsh plugin add`, the rc.8 boot patch, and a model on
 * loopback. Shared by the demo, the end-to-end suite and the browser test.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'

/** The project root. */
export const PROJECT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const BIN = join(PROJECT, 'node_modules', '.bin')
/** The Node 22 binary from the `node` package; `.bin/node` is a wrapper that would not forward signals. */
export const NODE22 = realpathSync(join(PROJECT, 'node_modules', 'node', 'bin', 'node'))
/** The CLI entry, as the `.bin/dsh` shim passes it. */
export const DSH_ENTRY = join(PROJECT, 'node_modules', '@deepseek-ai', 'dsh', 'lib', 'bin.js')
/** The rc.8 workaround patch shipped with the project. */
export const RC8_PATCH = join(PROJECT, 'scripts', 'patches', 'rc8-boot.yml')

/** The NODE_PATH the `.bin/dsh` shim exports, so the process sees what a shell user's would. */
function shimNodePath(): string | undefined {
  return /export NODE_PATH="([^"$]*)"/.exec(readFileSync(join(BIN, 'dsh'), 'utf8'))?.[1]
}

/** Where the model is. */
export interface ModelEndpoint {
  /** Provider base URL including `/v1`; omit for the real provider. */
  readonly baseURL?: string
  /** API key; a placeholder for the mock. */
  readonly apiKey: string
}

/**
 * Environment for every dsh child: Node 22 and pnpm first on PATH (`dsh plugin`
 * spawns pnpm), an isolated home, telemetry off, and the model endpoint.
 */
export function dshEnv(home: string, model?: ModelEndpoint): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env }
  delete env.NODE_OPTIONS
  delete env.NODE_PATH
  delete env.DEEPSEEK_BASE_URL
  Object.assign(env, {
    PATH: `${BIN}:${process.env.PATH ?? ''}`,
    DSH_HOME: home,
    DSH_TELEMETRY_DISABLED: '1',
    NO_COLOR: '1',
  })
  const nodePath = shimNodePath()
  if (nodePath !== undefined) env.NODE_PATH = nodePath
  if (model !== undefined) {
    env.DEEPSEEK_API_KEY = model.apiKey
    if (model.baseURL !== undefined) env.DEEPSEEK_BASE_URL = model.baseURL
  }
  return env
}

/**
 * Create an isolated DSH_HOME with the welcome dialog already dismissed.
 * @param dir - the home directory, or a fresh temp dir when omitted.
 * @returns the home path.
 */
export function prepareHome(dir?: string): string {
  mkdirSync(join(PROJECT, 'artifacts'), { recursive: true })
  const home = dir ?? mkdtempSync(join(PROJECT, 'artifacts', 'dsh-home-'))
  mkdirSync(home, { recursive: true })
  writeFileSync(join(home, 'settings.yaml'), 'ui-onboarding:\n  welcomeNoticeVersion: 2026-08-13.1\n')
  return home
}

/**
 * Build and pack the plugin; returns the tarball path under artifacts/.
 * A unique file name per pack, because `dsh plugin add` of an unchanged path keeps the old content.
 * @param parent - where the per-pack directory goes (default `artifacts/packs`).
 */
export function packPlugin(parent: string = join(PROJECT, 'artifacts', 'packs')): string {
  const out = join(parent, String(Date.now()))
  mkdirSync(out, { recursive: true })
  run(join(BIN, 'pnpm'), ['run', 'build'], PROJECT)
  run(join(BIN, 'pnpm'), ['pack', '--pack-destination', out], PROJECT)
  const tarball = readdirSync(out).find((name) => name.endsWith('.tgz'))
  if (tarball === undefined) throw new Error(`pnpm pack left no tarball in ${out}`)
  return join(out, tarball)
}

/** Run a command to completion, throwing with its output on failure. */
function run(command: string, args: readonly string[], cwd: string, env?: NodeJS.ProcessEnv): string {
  const result = spawnSync(command, args, { cwd, env: env ?? process.env, encoding: 'utf8' })
  if (result.status !== 0)
    throw new Error(`${command} ${args.join(' ')} failed (${result.status}):\n${result.stdout}\n${result.stderr}`)
  return result.stdout
}

/**
 * `dsh plugin --profile <profile> <verb> <spec>` exactly as a user runs it.
 * @returns the CLI's output.
 */
export function dshPlugin(home: string, profile: string, verb: 'add' | 'remove', spec: string): string {
  return run(NODE22, [DSH_ENTRY, 'plugin', '--profile', profile, verb, spec], PROJECT, dshEnv(home))
}

/**
 * `dsh plugin --profile <profile> exec <bin> …`, the conventional way to run a bin of an
 * installed plugin, as a user runs it; it may fail.
 * @returns how it exited and what it printed.
 */
export function dshPluginExec(
  home: string,
  profile: string,
  args: readonly string[],
): { code: number | null; stdout: string; stderr: string } {
  const result = spawnSync(NODE22, [DSH_ENTRY, 'plugin', '--profile', profile, 'exec', ...args], {
    cwd: PROJECT,
    env: dshEnv(home),
    encoding: 'utf8',
  })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

/** The profile manifest after an install. */
export function profileManifest(
  home: string,
  profile: string,
): { dependencies?: Record<string, string>; dsh?: { profile?: { bundles?: string[] } } } {
  return JSON.parse(readFileSync(join(home, 'profiles', profile, 'package.json'), 'utf8'))
}

/** A running `dsh web`. */
export interface DshWeb {
  readonly url: string
  readonly child: ChildProcess
  /** Everything the process printed so far. */
  output(): string
  /** Stop with a signal (SIGTERM by default) and wait for exit; SIGKILL after a grace period. */
  stop(signal?: NodeJS.Signals): Promise<void>
}

/** Every dsh child still running; killed if this process exits without stopping them (a crashed test worker, an uncaught error). */
const liveChildren = new Set<ChildProcess>()
process.once('exit', () => {
  for (const child of liveChildren) child.kill('SIGKILL')
})

/** Options for {@link startWeb}. */
export interface WebOptions {
  readonly home: string
  readonly model: ModelEndpoint
  readonly port?: number
  readonly cwd?: string
  readonly timeoutMs?: number
  /** Pass stdout/stderr through as well as capturing them. */
  readonly echo?: boolean
  /** Further `--patch` files, applied after the rc.8 workarounds. */
  readonly patches?: readonly string[]
  /** The CLI entry to run (default {@link DSH_ENTRY}): a copy of it sees the packages beside the copy first. */
  readonly entry?: string | undefined
  /** Node options before the entry, as a shell alias or a service file gives them (`--max-old-space-size=…`). */
  readonly nodeOptions?: readonly string[]
}

/**
 * Start `dsh web` on 127.0.0.1 and wait until it answers HTTP 200 (the URL line
 * is printed before plugins finish loading).
 */
export async function startWeb(options: WebOptions): Promise<DshWeb> {
  const started = Date.now()
  const timeoutMs = options.timeoutMs ?? 60_000
  const patches = [RC8_PATCH, ...(options.patches ?? [])].flatMap((patch) => ['--patch', patch])
  const args = [
    ...(options.nodeOptions ?? []),
    options.entry ?? DSH_ENTRY,
    'web',
    ...patches,
    '--no-open',
    '--host',
    '127.0.0.1',
    '--port',
    String(options.port ?? 0),
  ]
  const child = spawn(NODE22, args, {
    cwd: options.cwd ?? PROJECT,
    env: dshEnv(options.home, options.model),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  liveChildren.add(child)
  child.once('exit', () => liveChildren.delete(child))
  let output = ''
  const collect = (chunk: Buffer) => {
    output += chunk.toString()
    if (options.echo === true) process.stdout.write(chunk)
  }
  child.stdout!.on('data', collect)
  child.stderr!.on('data', collect)
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()))
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill(signal)
    const force = setTimeout(() => child.kill('SIGKILL'), 8_000)
    await exited
    clearTimeout(force)
  }
  const fail = async (reason: string): Promise<never> => {
    await stop('SIGKILL')
    throw new Error(`dsh web ${reason}:\n${output}`)
  }
  let url: string | undefined
  while (url === undefined) {
    url = /dsh web: (http:\/\/\S+)/.exec(output)?.[1]?.replace(/\/$/, '')
    if (url !== undefined) break
    if (child.exitCode !== null || child.signalCode !== null) await fail('exited during boot')
    if (Date.now() - started > timeoutMs) await fail('printed no URL')
    await sleep(25)
  }
  for (;;) {
    const status = await fetch(`${url}/`).then(
      (response) => response.status,
      () => 0,
    )
    if (status === 200) break
    if (child.exitCode !== null || child.signalCode !== null) await fail('exited before answering')
    if (Date.now() - started > timeoutMs) await fail('never answered HTTP 200')
    await sleep(25)
  }
  return { url, child, output: () => output, stop }
}

/** How a one-shot `dsh --profile <p> "<task>"` run ended. */
export interface OneShotRun {
  /** Exit code, or null when a signal ended it. */
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  /** What it printed on stdout (the task's answer) and on stderr. */
  readonly stdout: string
  readonly stderr: string
  /** Wall time from spawn to exit. */
  readonly durationMs: number
  /** True when the hard timeout killed it. */
  readonly timedOut: boolean
}

/** Options for {@link runOneShot}. */
export interface OneShotOptions {
  readonly home: string
  readonly model: ModelEndpoint
  readonly task: string
  /** The profile the run boots (default `headless`). */
  readonly profile?: string
  readonly cwd?: string
  /** Hard timeout: SIGTERM, then SIGKILL 5 s later; the run always ends. */
  readonly timeoutMs: number
  /** Sees the output as it arrives (for a report while the run still hangs). */
  readonly onOutput?: (chunk: string) => void
}

/**
 * `dsh --profile headless --patch <rc8> "<task>"` exactly as a user runs a one-shot
 * task: resolves when the process has exited, whether by itself or by the hard timeout.
 */
export async function runOneShot(options: OneShotOptions): Promise<OneShotRun> {
  const started = Date.now()
  const args = [DSH_ENTRY, '--profile', options.profile ?? 'headless', '--patch', RC8_PATCH, options.task]
  const child = spawn(NODE22, args, {
    cwd: options.cwd ?? PROJECT,
    env: dshEnv(options.home, options.model),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  liveChildren.add(child)
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString()
    options.onOutput?.(chunk.toString())
  })
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
    options.onOutput?.(chunk.toString())
  })
  let timedOut = false
  let force: ReturnType<typeof setTimeout> | undefined
  const deadline = setTimeout(() => {
    timedOut = true
    child.kill('SIGTERM')
    force = setTimeout(() => child.kill('SIGKILL'), 5_000)
  }, options.timeoutMs)
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolveExit) =>
    child.once('exit', (...ended) => resolveExit(ended)),
  )
  clearTimeout(deadline)
  clearTimeout(force)
  liveChildren.delete(child)
  return { code, signal, stdout, stderr, durationMs: Date.now() - started, timedOut }
}

/** The ids of the sessions stored in a home, in no particular order. */
export function storedSessionIds(home: string): string[] {
  const root = join(home, 'sessions')
  if (!existsSync(root)) return []
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isDirectory() && entry.name.startsWith('session-'))
    .map((entry) => entry.name)
}

/** One record of a session's durable JSONL log, as the backend wrote it. */
export interface DurableRecord {
  readonly type: string
  readonly seq: number
  readonly time: number
  readonly data: unknown
}

/** The real JSONL session backend, as loaded by {@link withStoredSessions}. */
type StoredSessions = InstanceType<typeof import('@deepseek-ai/dsh-session-persistence-jsonl').default>

/**
 * Run `use` against the real JSONL backend of a home's stored sessions, in a host context of its
 * own (disposed after), without opening any session: it works while a dsh process owns the home,
 * and after it stopped or was killed.
 * @returns what `use` returns.
 */
export async function withStoredSessions<T>(
  home: string,
  use: (backend: StoredSessions, sessionModule: typeof import('@deepseek-ai/dsh-session')) => Promise<T>,
): Promise<T> {
  // Loaded on first use, so the demo and the browser test do not pay for a host they never boot.
  const [{ Context }, sessionModule, jsonlModule] = await Promise.all([
    import('@deepseek-ai/cordis'),
    import('@deepseek-ai/dsh-session'),
    import('@deepseek-ai/dsh-session-persistence-jsonl'),
  ])
  await import('@deepseek-ai/dsh-session-persistence')
  const ctx = new Context()
  try {
    await ctx.plugin(sessionModule.default)
    await ctx.plugin(jsonlModule.default, { root: join(home, 'sessions') })
    return await use(ctx.sessionPersistence as StoredSessions, sessionModule)
  } finally {
    await ctx.fiber.dispose()
  }
}

/**
 * What reached disk for one session: the log text read through the real JSONL
 * backend's own `readRaw` (committed frames only, as a restart would see them).
 * @returns the event records in log order (the header line and packed chunk rows left out).
 */
export function readDurableLog(home: string, sessionId: string): Promise<DurableRecord[]> {
  return withStoredSessions(home, async (backend, { SessionId }) => {
    const raw = await backend.readRaw(SessionId(sessionId))
    if (raw === undefined) throw new Error(`no stored log for ${sessionId} in ${home}`)
    return raw.content
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as Partial<DurableRecord>)
      .filter((record): record is DurableRecord => typeof record.type === 'string' && typeof record.seq === 'number')
  })
}

let rpcNumber = 0

/**
 * Call the web API: `POST /api/<method>` with the client-request envelope.
 * @returns the unwrapped `value`; throws with the error body otherwise.
 */
export async function call<T = unknown>(url: string, method: string, payload: unknown): Promise<T> {
  rpcNumber += 1
  const response = await fetch(`${url}/api/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'client-request', rpcId: `r${rpcNumber}`, method, payload }),
  })
  const text = await response.text()
  if (response.status !== 200) throw new Error(`${method}: HTTP ${response.status}: ${text}`)
  const body = JSON.parse(text) as { result?: { ok: boolean; value?: T; error?: unknown } }
  if (body.result?.ok !== true) throw new Error(`${method} failed: ${JSON.stringify(body.result?.error ?? body)}`)
  return body.result.value as T
}

/** A command's reply. */
export interface CommandReply {
  readonly kind: 'success' | 'error'
  readonly text?: string
}

/** Create a session in `cwd`; returns its id. */
export async function createSession(url: string, cwd: string = PROJECT): Promise<string> {
  return (await call<{ sessionId: string }>(url, 'session.create', { cwd })).sessionId
}

/** The composer's model list for a session: the current selection and every model it may choose. */
export interface SessionModels {
  readonly current: { readonly provider: string; readonly model: string }
  readonly groups: readonly { readonly id: string; readonly models: readonly { readonly id: string }[] }[]
}

/**
 * Open a session as DSH web does when the user clicks it in the sidebar: the composer asks for its
 * model list (`session.models`), which brings a stored session live through the host's own resolver.
 * @returns the model list.
 */
export async function openSession(url: string, sessionId: string): Promise<SessionModels> {
  return call<SessionModels>(url, 'session.models', { sessionId })
}

/** Reopen (resume) an existing session after a restart without starting a turn. */
export async function reopenSession(url: string, sessionId: string, cwd: string = PROJECT): Promise<void> {
  await call(url, 'session.create', { sessionId, cwd })
}

/** Run a slash line for a session through the host command API. */
export async function runCommand(url: string, sessionId: string, line: string): Promise<CommandReply> {
  const value = await call<{ result: CommandReply } | undefined>(url, 'commands/execute', {
    args: { agentId: sessionId, line, images: [] },
  })
  if (value === undefined) throw new Error(`no command matched ${line}`)
  return value.result
}

/** Queue a user prompt, as the composer does. */
export async function prompt(url: string, sessionId: string, text: string): Promise<void> {
  await call(url, 'session.prompt', { sessionId, mode: 'queue', content: [{ type: 'text', text }] })
}

/** One session event as the history API returns it. */
export interface HistoryEvent {
  readonly type: string
  readonly seq: number
  readonly time: number
  readonly data: unknown
}

/**
 * A session's events and projection values.
 * @param options.maxMessages - page size; the host's default page holds the last 50 messages.
 */
export async function history(
  url: string,
  sessionId: string,
  options: { readonly maxMessages?: number } = {},
): Promise<{ events: HistoryEvent[]; projections: Record<string, unknown> }> {
  const payload = options.maxMessages === undefined ? { sessionId } : { sessionId, maxMessages: options.maxMessages }
  const value = await call<{ events: { event: HistoryEvent }[]; projections?: { values?: Record<string, unknown> } }>(
    url,
    'session.history',
    payload,
  )
  return { events: value.events.map((entry) => entry.event), projections: value.projections?.values ?? {} }
}

/**
 * The text of every user message of a chat request, in order, but DSH's runtime-context message.
 * @param body - the request body the model server received.
 * @returns the texts.
 */
export function userTexts(body: unknown): string[] {
  const messages = (body as { messages?: { role: string; content: unknown }[] }).messages ?? []
  return messages
    .filter((message) => message.role === 'user')
    .map((message) =>
      typeof message.content === 'string'
        ? message.content
        : (message.content as { type: string; text?: string }[]).map((part) => part.text ?? '').join(''),
    )
    .filter((text) => !text.startsWith('Current runtime context.'))
}

/**
 * The text of a chat request's last user message, but DSH's runtime-context message.
 * @param body - the request body the model server received.
 * @returns the text, or `undefined` when there is none.
 */
export function lastUserText(body: unknown): string | undefined {
  return userTexts(body).at(-1)
}

/** Poll until `check` returns a value, or fail with `what` after the deadline. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(50)
  }
}

/** The endpoint of a mock model server (`startMockLlmServer` returns its base URL without `/v1`). */
export function mockEndpoint(server: { readonly baseURL: string }): ModelEndpoint {
  return { baseURL: `${server.baseURL}/v1`, apiKey: 'sk-mock' }
}

/** The text parts of a `user/message` or `assistant/message` event, joined; tool calls are left out. */
export function messageText(event: HistoryEvent): string {
  const data = event.data as { content?: unknown; message?: { content?: unknown } }
  const content = (event.type === 'assistant/message' ? data.message?.content : data.content) ?? []
  return (content as { type: string; text?: string }[])
    .filter((part) => part.type === 'text')
    .map((part) => part.text ?? '')
    .join('')
}

/** A `<heartbeat>` user message the loop plugin delivered. */
export interface HeartbeatMessage {
  readonly seq: number
  readonly time: number
  /** The message id, shared with the `agent/inbox/spliced` event that admitted it. */
  readonly id: string
  readonly loopId: string
  readonly text: string
}

/** The heartbeat user messages in a session's events, in log order. */
export function heartbeatsIn(events: readonly HistoryEvent[]): HeartbeatMessage[] {
  return events.flatMap((event) => {
    if (event.type !== 'user/message') return []
    const data = event.data as { id: string; source?: { kind?: string; plugin?: string } }
    if (data.source?.kind !== 'plugin' || data.source.plugin !== 'loop') return []
    const text = messageText(event)
    const loopId = /<loop_id>([^<]*)<\/loop_id>/.exec(text)?.[1] ?? ''
    return [{ seq: event.seq, time: event.time, id: data.id, loopId, text }]
  })
}

/** How the agent's inbox admitted a message (`agent/inbox/spliced`): `next-turn` or `next-step`. */
export function spliceTarget(events: readonly HistoryEvent[], messageId: string): string | undefined {
  for (const event of events) {
    if (event.type !== 'agent/inbox/spliced') continue
    const data = event.data as { target: string; inserted?: { id?: string }[] }
    if (data.inserted?.some((message) => message.id === messageId) === true) return data.target
  }
  return undefined
}

/** True when every started turn has ended (the agent is idle as far as the log shows). */
export function turnsSettled(events: readonly HistoryEvent[]): boolean {
  const count = (type: string) => events.filter((event) => event.type === type).length
  return count('turn/start') === count('turn/end')
}

/** Remove a home directory (best effort). */
export function removeHome(home: string): void {
  if (existsSync(home)) rmSync(home, { recursive: true, force: true })
}

/**
 * The end-to-end fixture: one fresh DSH_HOME with the packed plugin added, one
 * mock model on loopback, and `dsh web` processes (and one-shot `dsh` runs)
 * started and stopped on that home. Everything a test starts is stopped when it
 * ends, whatever the outcome; a failing test prints every DSH process's output
 * and keeps its home.
 */
import { startMockLlmServer, type MockLlmServerOptions } from '@deepseek-ai/dsh-llm-mock-server'
import { rmSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { expect, inject, test as base } from 'vitest'
import {
  dshPlugin,
  heartbeatsIn,
  history,
  lastUserText,
  mockEndpoint,
  prepareHome,
  removeHome,
  runCommand,
  runOneShot,
  startWeb,
  turnsSettled,
  waitFor,
  withStoredSessions,
  type DshWeb,
  type HeartbeatMessage,
  type HistoryEvent,
  type OneShotRun,
} from '../../harness/dsh-stack.ts'

export const PLUGIN = 'dsh-plugin-loop'
export const PROFILE = 'web'
/** What the mock model answers to every request unless a test scripts otherwise. */
export const REPLY = 'Heartbeat received: nothing new to report.'

/** Mock model options a test may set; the default is a fast `success` for every request. */
export type ModelScript = Partial<Omit<MockLlmServerOptions, 'host' | 'port'>>

/** What a rig needs from a model on loopback: the published mock server, or several behind a router. */
export interface ModelServer {
  /** Base URL without `/v1`. */
  readonly baseURL: string
  /** Every chat request received, in arrival order. */
  readonly requests: readonly { readonly attempt: number; readonly behavior: string; readonly body: unknown }[]
  close(): Promise<void>
}

/** Options of the `rig` fixture beyond the model script. */
export interface RigOptions {
  /** A model the test started itself (the rig closes it); replaces the scripted mock. */
  readonly model?: ModelServer
  /** Add the plugin to the web profile and start `dsh web` right away (default true). */
  readonly start?: boolean
}

/** One home, one model, and the dsh processes run on them. */
export class Rig {
  /** Every process started, in order, with its label, for the failure report. */
  private readonly processes: { label: string; output: () => string; stop: () => Promise<void> }[] = []
  private current: DshWeb | undefined

  constructor(
    readonly home: string,
    readonly model: ModelServer,
    readonly tarball: string,
  ) {}

  /** The running process's base URL. */
  get url(): string {
    if (this.current === undefined) throw new Error('dsh web is not running')
    return this.current.url
  }

  /** The running process. */
  get web(): DshWeb {
    if (this.current === undefined) throw new Error('dsh web is not running')
    return this.current
  }

  /** Boot `dsh web` on this home (ephemeral loopback port), with further `--patch` files, another CLI entry and Node options if given. */
  async start(patches: readonly string[] = [], entry?: string, nodeOptions: readonly string[] = []): Promise<DshWeb> {
    if (this.current !== undefined) throw new Error('dsh web is already running')
    const label = `process #${this.processes.length + 1}: dsh web`
    // A process that fails to boot is reported too: startWeb throws with its output.
    const web = await startWeb({ home: this.home, model: mockEndpoint(this.model), patches, entry, nodeOptions }).catch(
      (error: unknown) => {
        this.processes.push({
          label: `${label} (failed to boot)`,
          output: () => String(error),
          stop: async () => undefined,
        })
        throw error
      },
    )
    this.processes.push({ label: `${label} (${web.url})`, output: web.output, stop: () => web.stop('SIGTERM') })
    this.current = web
    return web
  }

  /**
   * Stop the running process and wait until it is gone.
   * @returns when it stopped, and how it exited.
   */
  async stop(
    signal: NodeJS.Signals = 'SIGTERM',
  ): Promise<{ at: number; code: number | null; signal: NodeJS.Signals | null }> {
    const web = this.web
    this.current = undefined
    await web.stop(signal)
    return { at: Date.now(), code: web.child.exitCode, signal: web.child.signalCode }
  }

  /** `dsh plugin --profile <profile> <verb>` for this plugin, as a user runs it (the web profile by default). */
  plugin(verb: 'add' | 'remove', profile: string = PROFILE): string {
    return dshPlugin(this.home, profile, verb, verb === 'add' ? this.tarball : PLUGIN)
  }

  /**
   * One-shot `dsh --profile headless "<task>"` on this home; always ends (hard timeout).
   * @returns how it ended and what it printed.
   */
  async oneShot(task: string, timeoutMs: number): Promise<OneShotRun> {
    let output = ''
    const entry = {
      label: `process #${this.processes.length + 1}: dsh --profile headless ${JSON.stringify(task)}`,
      output: () => output,
      stop: async () => undefined,
    }
    this.processes.push(entry)
    const run = await runOneShot({
      home: this.home,
      model: mockEndpoint(this.model),
      task,
      timeoutMs,
      onOutput: (chunk) => (output += chunk),
    })
    entry.label += ` (exit ${run.code ?? run.signal} after ${run.durationMs} ms${run.timedOut ? ', killed by the hard timeout' : ''})`
    return run
  }

  /** Everything every process printed, labelled. */
  report(): string {
    const outputs = this.processes.map(({ label, output }) => `----- ${label} -----\n${output()}`)
    const requests = this.model.requests.map(
      (request) => `#${request.attempt} ${request.behavior}: ${JSON.stringify(lastUserText(request.body))}`,
    )
    return [`home: ${this.home}`, ...outputs, `----- model requests -----`, ...requests].join('\n')
  }

  /** Stop whatever still runs. */
  async dispose(keepHome: boolean): Promise<void> {
    for (const { stop } of this.processes) await stop().catch(() => undefined)
    this.current = undefined
    await this.model.close()
    if (!keepHome) removeHome(this.home)
  }
}

/**
 * `test` with a `rig` fixture: `await rig(script?)` gives a running dsh web on a
 * fresh home with the plugin added from the run's tarball; `rig({}, { start: false })`
 * gives the bare home and model, for a test that adds the plugin itself.
 */
export const test = base.extend<{ rig: (script?: ModelScript, options?: RigOptions) => Promise<Rig> }>({
  rig: async ({ task, onTestFailed }, use) => {
    const rigs: Rig[] = []
    onTestFailed(() => {
      for (const rig of rigs) console.error(`\n===== DSH output for the failed test =====\n${rig.report()}\n`)
    })
    try {
      await use(async (script = {}, options = {}) => {
        const model: ModelServer =
          options.model ??
          (await startMockLlmServer({
            host: '127.0.0.1',
            port: 0,
            sequence: ['success'],
            repeatLast: true,
            successText: REPLY,
            ...script,
          }))
        const rig = new Rig(prepareHome(), model, inject('loopTarball'))
        rigs.push(rig)
        if (options.start === false) return rig
        rig.plugin('add')
        await rig.start()
        return rig
      })
    } finally {
      // A failed test keeps its home for inspection (the report names it).
      const failed = task.result?.state === 'fail' || task.result?.errors !== undefined
      for (const rig of rigs) await rig.dispose(failed)
    }
  },
})

/** A session's whole log (the history API pages by 50 messages by default). */
export async function events(url: string, sessionId: string): Promise<HistoryEvent[]> {
  return (await history(url, sessionId, { maxMessages: 1_000_000 })).events
}

/** The `loop` projection as the history API serves it. */
export async function loopProjection(url: string, sessionId: string): Promise<unknown> {
  return (await history(url, sessionId)).projections.loop
}

/** `/loop <seconds> <prompt>` through the host command API; returns the new id. */
export async function createLoop(url: string, sessionId: string, seconds: number, prompt: string): Promise<string> {
  const reply = await runCommand(url, sessionId, `/loop ${seconds} ${prompt}`)
  expect(reply.kind).toBe('success')
  const id = /^Created (loop_[0-9a-f]{8}): every /.exec(reply.text ?? '')?.[1]
  expect(id, reply.text).toBeDefined()
  expect(reply.text).toMatch(new RegExp(`Prompt: ${escapeRegExp(prompt)}$`))
  return id!
}

/** Heartbeats of one loop in a log. */
export function heartbeatsOf(log: readonly HistoryEvent[], loopId: string): HeartbeatMessage[] {
  return heartbeatsIn(log).filter((beat) => beat.loopId === loopId)
}

/** `loop/change` dispatch records of one loop: when each occurrence was sent and the next due time it set. */
export function dispatchesOf(
  log: readonly HistoryEvent[],
  loopId: string,
): { seq: number; time: number; next_at: number }[] {
  return log.flatMap((event) => {
    const data = event.data as { operation?: string; id?: string; next_at?: number }
    return event.type === 'loop/change' && data.operation === 'dispatch' && data.id === loopId
      ? [{ seq: event.seq, time: event.time, next_at: data.next_at! }]
      : []
  })
}

/** Wait until each loop has at least `count` heartbeats and every turn has ended; returns the log. */
export async function waitForHeartbeats(
  url: string,
  sessionId: string,
  counts: Readonly<Record<string, number>>,
  timeoutMs = 20_000,
): Promise<HistoryEvent[]> {
  return waitFor(
    `heartbeats ${JSON.stringify(counts)} in ${sessionId}`,
    async () => {
      const log = await events(url, sessionId)
      const enough = Object.entries(counts).every(([loopId, count]) => heartbeatsOf(log, loopId).length >= count)
      return enough && turnsSettled(log) ? log : undefined
    },
    timeoutMs,
  )
}

/** Wait until every turn of the session has ended. */
export async function settle(url: string, sessionId: string): Promise<HistoryEvent[]> {
  return waitFor(`${sessionId} to go idle`, async () => {
    const log = await events(url, sessionId)
    return turnsSettled(log) ? log : undefined
  })
}

/** The turn that contains `seq`: its turn/start and turn/end events. */
export function turnAround(
  log: readonly HistoryEvent[],
  seq: number,
): { start: HistoryEvent; end: HistoryEvent | undefined } {
  const start = log.filter((event) => event.type === 'turn/start' && event.seq < seq).at(-1)
  if (start === undefined) throw new Error(`no turn before seq ${seq}`)
  const turn = (start.data as { turn: number }).turn
  const end = log.find(
    (event) => event.type === 'turn/end' && (event.data as { turn: number }).turn === turn && event.seq > start.seq,
  )
  return { start, end }
}

/** The mock model's requests whose last real user message is `text`. */
export function requestsEndingWith(model: ModelServer, text: string): number[] {
  return model.requests.filter((request) => lastUserText(request.body) === text).map((request) => request.attempt)
}

/**
 * Rewrite one stored session log without the events `drop` picks, through the real JSONL
 * backend (its own read, its own encoding), while no dsh process runs on the home: how a log
 * that an older build wrote looks. Drop only a tail, so the seqs stay contiguous.
 * @returns the events kept.
 */
export function dropStoredEvents(
  home: string,
  sessionId: string,
  drop: (event: HistoryEvent) => boolean,
): Promise<HistoryEvent[]> {
  return withStoredSessions(home, async (backend, { SessionId }) => {
    const stored = await backend.loadStored(SessionId(sessionId))
    if (stored === undefined) throw new Error(`no stored log for ${sessionId} in ${home}`)
    const kept = stored.events.filter((event) => !drop(event))
    if (kept.some((event, index) => event.seq !== index)) throw new Error(`dropping more than a tail of ${sessionId}`)
    rmSync(backend.locate(stored.meta).path)
    await backend.appendBatch(stored.meta, kept, false)
    return kept
  })
}

/** Sleep until `time` (epoch ms). */
export async function sleepUntil(time: number): Promise<void> {
  const wait = time - Date.now()
  if (wait > 0) await sleep(wait)
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

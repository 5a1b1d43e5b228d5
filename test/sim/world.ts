/**
 * One seeded, deterministic world around the real runtime (SPEC.md §5 "Runtime"): a real DSH host (Cordis
 * context, session store, agent registry, rc.8's own turn loop and inbox, tool and command
 * runtimes) with the loop plugin, where only the clock, flushes, faults and the model are
 * simulated. The model answers each step after a virtual delay, sometimes calling the loop tools;
 * the user types `/loop` lines, prompts, presses Stop, forks the session; the wall clock jumps; the
 * plugin is hot reloaded; DSH replaces the agent; DSH is killed and the session reopened from what
 * reached the disk. Every heartbeat, `loop/change` and claimed message is judged as it happens against
 * the reference model (`model.ts`), and a calm tail judges liveness.
 */
import { rmSync } from 'node:fs'
import { vi } from 'vitest'
import type { Context } from '@deepseek-ai/cordis'
import type { Agent } from '@deepseek-ai/dsh-agent'
import { CallId, createUserMessage } from '@deepseek-ai/dsh-llm'
import { SessionId, type Session, type SessionEvent } from '@deepseek-ai/dsh-session'
import { composeHost, type PluginModule } from '../../harness/compose-host.ts'
import { tempDir } from '../../harness/temp-dir.ts'
import { WakeTimer } from '../../src/clock.ts'
import * as loopPlugin from '../../src/index.ts'
import { LoopRuntime } from '../../src/loop.ts'
import { ModelFold, expectedDispatch, firstToDispatch, heartbeatOf } from './model.ts'
import { Random } from './random.ts'

/** The virtual epoch every run starts at. */
const EPOCH = Date.UTC(2026, 0, 5, 9)
const SESSION = 'sim-session'
const AGENT_OPTIONS = { provider: 'sim', model: 'sim' }
/** Longest wait a runtime may arm (SPEC.md §5 "Runtime", the timer). */
const LONGEST_WAIT_MS = 60_000

/** Which faults a run turns on, and how often each strikes. */
interface Faults {
  readonly flushFalse: number
  readonly flushReject: number
  readonly flushThrow: number
  readonly flushSlow: number
  readonly appendThrow: number
  readonly sendThrow: number
}

/** What one run found. */
export interface SimResult {
  /** What the run drew from: a seed, or choices played back. */
  readonly source: number | readonly number[]
  /** Every choice the run drew: played back, the same run. */
  readonly choices: readonly number[]
  /** What happened, one line a step: replaying the seed prints the same lines. */
  readonly trace: readonly string[]
  /** Each broken invariant, with the step it broke at. */
  readonly violations: readonly string[]
  readonly stats: Readonly<Stats>
}

/** What a run did, counted. */
interface Stats {
  steps: number
  sends: number
  dispatches: number
  calls: number
  reloads: number
  jumps: number
  crashes: number
  forks: number
  replacements: number
}

/** The simulation of one seed, or of one list of choices. */
class World {
  private readonly random: Random
  private readonly faults: Faults
  private readonly trace: string[] = []
  private readonly violations: string[] = []
  readonly stats: Stats = {
    steps: 0,
    sends: 0,
    dispatches: 0,
    calls: 0,
    reloads: 0,
    jumps: 0,
    crashes: 0,
    forks: 0,
    replacements: 0,
  }
  private ctx!: Context
  private agent!: Agent
  private handle!: { dispose(): Promise<void> }
  private plugin: ReturnType<Context['plugin']> | undefined
  /** How far the session's log is acknowledged by a flush. */
  private durable = 0
  /** The session's events as appended (its `events` copies the log at every read after an append). */
  private eventCount = 0
  /** The session's `loop/change` payloads and where each is in the log, as appended. */
  private readonly loopLog: { index: number; data: unknown }[] = []
  /** The loops of the session's log now, by the reference model's fold. */
  private fold = new ModelFold()
  /** The host's life: a crash ends one, and the dead host's hooks go quiet. */
  private life = 0
  /** The user's agent's life: a crash or a fork ends one, and the old agent's judges go quiet. */
  private agentLife = 0
  /** Agents torn down in a live host (replaced, forked from): a heartbeat sent to one is lost. */
  private readonly retired = new WeakSet<Agent>()
  /** A fork's inherited loops: its parent's, which it must never send or dispatch. */
  private inherited = new Set<string>()
  private forkNumber = 0
  /** The folders the reopened hosts keep their logs in. */
  private readonly roots: string[] = []
  /** Every host the run composed, the dead ones too: each is disposed at the end. */
  private readonly hosts: Context[] = []
  /** Calls in flight, awaited before the end. */
  private readonly pending = new Set<Promise<unknown>>()
  /** Sends per occurrence (`loop@next_at`), and the occurrences a failed append excuses one repeat of. */
  private readonly sendsPerOccurrence = new Map<string, number>()
  private readonly excused = new Set<string>()
  /** The open turn, and the loops whose heartbeat it claimed. */
  private openTurn: number | undefined
  private readonly claimedInTurn = new Set<string>()
  /** Whether faults strike: off in the calm tail. */
  private calm = false
  /** Model steps of minutes still running: the calm begins once they end. */
  private longSteps = 0
  /** How many flushes still fail in a row: an outage of the disk. */
  private outageFlushes = 0
  private createNumber = 0
  private callNumber = 0
  private modelToolCalls = 0
  /** The session is in DSH web's archive set. */
  private archived = false
  /** Each runtime's timer, and the runtimes disposed: a timer armed after its runtime's disposal is a leak. */
  private readonly runtimeOfTimer = new Map<WakeTimer, LoopRuntime>()
  private readonly disposed = new Set<LoopRuntime>()
  /** The last retry delay the runtime reported, and whether a flush was acknowledged (or the plugin reloaded) since. */
  private lastRetry: number | undefined
  private flushedSinceRetry = true

  constructor(private readonly source: number | readonly number[]) {
    this.random = new Random(source)
    const rate = (max: number) => (this.random.chance(0.5) ? this.random.next() * max : 0)
    this.faults = {
      flushFalse: rate(0.2),
      flushReject: rate(0.2),
      flushThrow: rate(0.1),
      flushSlow: rate(0.3),
      appendThrow: rate(0.15),
      sendThrow: rate(0.15),
    }
  }

  private note(line: string): void {
    const entry = `${this.stats.steps} ${Date.now() - EPOCH} ${line}`
    this.trace.push(entry)
    // SIM_TRACE=1 prints the trace as it happens, for a run that never ends.
    if (process.env['SIM_TRACE'] === '1') process.stderr.write(`${entry}\n`)
  }

  /** Something threw out of the world. */
  threw(error: unknown): void {
    this.violated(`the world threw: ${error instanceof Error ? error.message : String(error)}`)
  }

  private violated(rule: string): void {
    this.violations.push(`step ${this.stats.steps}: ${rule}`)
    this.note(`VIOLATION ${rule}`)
  }

  private heartbeatsWaiting(): string[] {
    return [...this.agent.inbox.nextStep, ...this.agent.inbox.nextTurn].flatMap((message) => {
      const loop = heartbeatOf(message)
      return loop === undefined ? [] : [loop]
    })
  }

  /** A line the plugin prints: into the trace; a retry's delay judged by the backoff rule (1 s, doubling, 60 s at most). */
  private printed(line: string): void {
    this.note(`printed ${line.slice(0, 160)}`)
    const retry = /retrying in (\d+) ms/.exec(line)
    if (retry === null) return
    const delay = Number(retry[1])
    // It doubles, unless a drive went through since the last retry (that needs an acknowledged flush).
    const doubled = Math.min(2 * (this.lastRetry ?? 500), LONGEST_WAIT_MS)
    if (delay !== doubled && !(delay === 1_000 && this.flushedSinceRetry))
      this.violated(`a retry after ${delay} ms, the one before after ${this.lastRetry} ms`)
    this.lastRetry = delay
    this.flushedSinceRetry = false
  }

  async boot(): Promise<void> {
    vi.spyOn(console, 'error').mockImplementation((line: unknown) => this.printed(String(line)))
    this.watchTimers()
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: EPOCH })
    this.ctx = await this.host(this.newRoot())
    this.handle = await this.ctx.agents.create({
      sessionId: SessionId(SESSION),
      meta: { cwd: '/tmp/loop-sim' },
      agentOptions: AGENT_OPTIONS,
      setup: (agentCtx) => this.wire(agentCtx.agent!),
    })
  }

  /** A folder for a host's logs, removed at the end. */
  private newRoot(): string {
    const root = tempDir('loop-sim-')
    this.roots.push(root)
    return root
  }

  /**
   * A real host with the world's hooks and the plugin, on DSH's JSONL persistence under `root`, whose
   * write-behind never fires in a run: every flush is the world's, and a session reaches the disk
   * only when DSH closes it (a replacement) or the world writes what survived a crash.
   */
  private async host(root: string): Promise<Context> {
    const ctx = await composeHost({
      root,
      apiKeyEnv: 'LOOP_SIM_KEY',
      writeBatchMaxDelayMs: 2 ** 31 - 1,
      loop: false,
    })
    const life = this.life
    const live = () => life === this.life
    // DSH web's workspace registry, as far as the runtime reads it: the archive set.
    const world = this
    ctx.provide('workspaceRegistry', {
      get archivedSessionIds() {
        return world.archived ? [world.agent.session.id] : []
      },
    })
    // A dead host's flushes fail: nothing it does reaches the disk the next host reads.
    ctx.sessions.flush = (session) => (live() ? this.flush(session) : Promise.resolve(false))
    ctx.on('llm/stream', ((request: { signal?: AbortSignal }) =>
      live() ? this.modelStep(request.signal) : deadStep()) as never)
    ctx.on('agent/inbox/claimed', ({ message, turn }) => {
      if (live()) this.claimed(message, turn)
    })
    // The window between DSH's claim and the step it enters (the prompt's assembly, inner hooks): at times seconds.
    ctx.on('agent/pre-step', async ({ messages }, next) => {
      if (live() && !this.calm && this.random.chance(0.2)) {
        const holdMs = this.random.int(1, 3_000)
        const hold = new Promise((resolve) => setTimeout(resolve, holdMs))
        // A hot reload while the step's hooks run: the old plugin's outermost hook is still waiting on this one.
        if (this.random.chance(0.25)) void this.reload()
        // A delete of a loop the step claimed while the hooks hold it, or as they end: decided while
        // the outermost hook admits the step, or after, before DSH has logged it.
        const claimed = messages.map(heartbeatOf).find((loop) => loop !== undefined)
        const deleted = claimed === undefined ? 'never' : this.random.weighted({ never: 2, during: 1, atEnd: 1 })
        const remove = () => this.call('command', `/loop delete ${claimed}`)
        if (deleted === 'during') setTimeout(remove, this.random.int(0, holdMs - 1))
        await hold
        if (deleted === 'atEnd') remove()
      }
      return next()
    })
    this.plugin = undefined
    this.ctx = ctx
    this.hosts.push(ctx)
    await this.reload()
    return ctx
  }

  /** Judge every wake a runtime arms: at most a minute, and never once the runtime is disposed. */
  private watchTimers(): void {
    const start = LoopRuntime.prototype.start
    const dispose = LoopRuntime.prototype.dispose
    const arm = WakeTimer.prototype.arm
    const world = this
    vi.spyOn(LoopRuntime.prototype, 'start').mockImplementation(function (this: LoopRuntime) {
      world.runtimeOfTimer.set((this as unknown as { timer: WakeTimer }).timer, this)
      return start.call(this)
    })
    vi.spyOn(LoopRuntime.prototype, 'dispose').mockImplementation(function (this: LoopRuntime) {
      world.disposed.add(this)
      return dispose.call(this)
    })
    vi.spyOn(WakeTimer.prototype, 'arm').mockImplementation(function (this: WakeTimer, delay: number) {
      if (!(delay >= 0 && delay <= LONGEST_WAIT_MS)) world.violated(`a wake armed for ${delay} ms`)
      const runtime = world.runtimeOfTimer.get(this)
      if (runtime !== undefined && world.disposed.has(runtime)) world.violated('a wake armed by a disposed runtime')
      return arm.call(this, delay)
    })
  }

  /**
   * A new agent of the user's in a live host (a fork, a replacement), from its setup on: its runtime
   * may retry, and its first turn start and claim, before its handle returns. Its retries start
   * again at a second; the old agent's judges go quiet.
   */
  private adopt(agent: Agent): void {
    this.agentLife += 1
    this.lastRetry = undefined
    this.flushedSinceRetry = true
    this.openTurn = undefined
    this.claimedInTurn.clear()
    this.wire(agent)
  }

  /** Put the faults and the judges on the agent's send and its session's append. */
  private wire(agent: Agent): void {
    // The agent is the user's from its setup on: a reopened one works before its handle returns.
    this.agent = agent
    const life = this.agentLife
    const send = agent.send.bind(agent)
    Object.defineProperty(agent, 'send', {
      configurable: true,
      value: (message: Parameters<Agent['send']>[0], target: 'next-step' | 'next-turn', wakeup: boolean) => {
        const loop = heartbeatOf(message)
        if (loop !== undefined && this.retired.has(agent)) this.violated(`a heartbeat of ${loop} to an agent torn down`)
        if (life !== this.agentLife) return send(message, target, wakeup)
        if (loop !== undefined && !this.calm && this.random.chance(this.faults.sendThrow)) {
          this.note(`send of ${loop} refused (fault)`)
          throw new Error('inbox refused (simulated)')
        }
        if (loop !== undefined) this.judgeSend(loop, target, wakeup)
        send(message, target, wakeup)
        if (loop !== undefined && this.heartbeatsWaiting().filter((id) => id === loop).length > 1)
          this.violated(`two heartbeats of ${loop} wait in the inbox`)
      },
    })
    const session: Session = agent.session
    this.eventCount = session.events.length
    const append = session.append.bind(session) as (...args: unknown[]) => { seq: number }
    Object.defineProperty(session, 'append', {
      configurable: true,
      value: (type: string, data: unknown, ...rest: unknown[]) => {
        if (life !== this.agentLife) return append(type, data, ...rest)
        if (type === 'loop/change') {
          const change = data as { operation: string; id?: string; next_at?: number }
          if (!this.calm && this.random.chance(this.faults.appendThrow)) {
            this.note(`append of ${change.operation} ${change.id ?? ''} refused (fault)`)
            if (change.operation === 'dispatch') {
              const loop = this.fold.loops.get(change.id!)
              if (loop !== undefined) this.excused.add(`${loop.id}@${loop.nextAt}`)
            }
            throw new Error('session log sealed (simulated)')
          }
          if (change.operation === 'dispatch') this.judgeDispatch(change.id!, change.next_at!)
          else this.note(`append ${change.operation} ${JSON.stringify(data).slice(0, 120)}`)
        }
        if (type === 'user/message') {
          const loop = heartbeatOf(data)
          if (loop !== undefined) this.note(`step enters with ${loop}`)
          if (loop !== undefined && !this.fold.loops.has(loop))
            this.violated(`a step entered with a heartbeat of ${loop}, which is not active`)
        }
        if (type === 'turn/start') {
          this.enterTurn((data as { turn: number }).turn)
          this.note(`turn ${(data as { turn: number }).turn} starts`)
        }
        if (type === 'turn/end')
          this.note(
            `turn ${(data as { turn: number }).turn} ends ${JSON.stringify((data as { reason: unknown }).reason).slice(0, 80)}`,
          )
        const event = append(type, data, ...rest)
        if (type === 'loop/change') {
          this.loopLog.push({ index: this.eventCount, data })
          this.foldChange(data)
        }
        this.eventCount += 1
        return event
      },
    })
  }

  /** Fold a change the log holds into the model; one it cannot fold is a violation, never a throw into the host. */
  private foldChange(data: unknown): void {
    try {
      this.fold.apply(data)
    } catch (error) {
      this.violated(`the log holds ${(error as Error).message}`)
    }
  }

  private enterTurn(turn: number): void {
    if (this.openTurn === turn) return
    this.openTurn = turn
    this.claimedInTurn.clear()
  }

  private claimed(message: unknown, turn: number): void {
    this.enterTurn(turn)
    const loop = heartbeatOf(message)
    if (loop === undefined) return
    if (this.claimedInTurn.has(loop)) this.violated(`turn ${turn} took a second heartbeat of ${loop}`)
    this.claimedInTurn.add(loop)
    this.note(`turn ${turn} claimed ${loop}`)
    // The narrow window: a delete right after DSH claims a heartbeat, before the step is entered.
    if (!this.calm && this.random.chance(0.3)) this.call('command', `/loop delete ${loop}`)
  }

  /** A heartbeat handed to the inbox: when, where, and on what log. */
  private judgeSend(loopId: string, target: string, wakeup: boolean): void {
    this.stats.sends += 1
    const now = Date.now()
    const loop = this.fold.loops.get(loopId)
    this.note(`send ${loopId} ${target}${wakeup ? ' wake' : ''}`)
    if (loop === undefined) return this.violated(`a heartbeat of ${loopId}, which is not active`)
    if (this.inherited.has(loopId)) this.violated(`a fork sent its parent's loop ${loopId}`)
    if (this.archived) this.violated(`a heartbeat of ${loopId} in an archived session`)
    if (loop.nextAt > now) this.violated(`a heartbeat of ${loopId} before its next_at (${loop.nextAt - now} ms early)`)
    const unflushed = this.loopLog.filter(({ index }) => index >= this.durable)
    if (unflushed.length > 0) this.violated(`a heartbeat of ${loopId} decided on a log not flushed`)
    const running = this.agent.status === 'running'
    const expected = running ? 'next-step' : 'next-turn'
    if (target !== expected || !wakeup)
      this.violated(`a heartbeat of ${loopId} to ${target} (wake ${wakeup}) while ${this.agent.status}`)
    const waiting = this.heartbeatsWaiting().includes(loopId)
    if (running && (waiting || this.claimedInTurn.has(loopId)))
      this.violated(`a second heartbeat of ${loopId} for the open turn`)
    const occurrence = `${loopId}@${loop.nextAt}`
    const sends = (this.sendsPerOccurrence.get(occurrence) ?? 0) + 1
    this.sendsPerOccurrence.set(occurrence, sends)
    if (sends > 1 && !this.excused.delete(occurrence)) this.violated(`occurrence ${occurrence} sent ${sends} times`)
  }

  /** A dispatch appended: which loop, where it moves, and whether its occurrence was delivered or coalesced. */
  private judgeDispatch(loopId: string, nextAt: number): void {
    this.stats.dispatches += 1
    const now = Date.now()
    const loops = this.fold.loops
    const loop = loops.get(loopId)
    this.note(`dispatch ${loopId} -> ${nextAt - EPOCH}`)
    if (loop === undefined) return this.violated(`a dispatch of ${loopId}, which is not active`)
    if (this.inherited.has(loopId)) this.violated(`a fork dispatched its parent's loop ${loopId}`)
    if (this.archived) this.violated(`a dispatch of ${loopId} in an archived session`)
    const first = firstToDispatch(loops.values(), now)
    if (first?.id !== loopId) this.violated(`dispatched ${loopId} before ${first?.id ?? 'nothing due'}`)
    const expected = expectedDispatch(loop, now)
    if (expected === undefined) return this.violated(`dispatched ${loopId}, neither due nor skewed`)
    if (expected.nextAt !== nextAt)
      this.violated(
        `dispatch of ${loopId} to ${nextAt - EPOCH}, expected ${expected.nextAt - EPOCH} (${expected.kind})`,
      )
    if (expected.kind !== 'deliver') return
    const occurrence = `${loopId}@${loop.nextAt}`
    if ((this.sendsPerOccurrence.get(occurrence) ?? 0) > 0) return
    // Not sent: coalesced, which is right exactly when one waits or the open turn took one.
    const waiting = this.heartbeatsWaiting().includes(loopId)
    const running = this.agent.status === 'running'
    if (!(waiting && running) && !(running && this.claimedInTurn.has(loopId)))
      this.violated(`occurrence ${occurrence} moved on without a heartbeat (${this.agent.status}, waiting ${waiting})`)
  }

  private flush(session: Session): Promise<boolean> {
    const mark = session === this.agent?.session ? this.eventCount : 0
    const outcome = this.calm
      ? 'ok'
      : this.outageFlushes > 0 && this.outageFlushes-- > 0
        ? 'reject'
        : this.random.weighted({
            ok: 1,
            false: this.faults.flushFalse,
            reject: this.faults.flushReject,
            throw: this.faults.flushThrow,
          })
    if (outcome === 'throw') throw new Error('flush threw (simulated)')
    // A slow disk, whatever it answers in the end; else half the flushes take no virtual time:
    // loops created together are then due together.
    const delay =
      !this.calm && this.random.chance(this.faults.flushSlow)
        ? this.random.int(1_000, 20_000)
        : this.random.chance(0.5)
          ? 0
          : this.random.int(1, 30)
    return new Promise<boolean>((resolve, reject) => {
      // A flush that takes no time settles in the same instant (a timer would move the clock a millisecond).
      const after = (settle: () => void) => (delay === 0 ? queueMicrotask(settle) : setTimeout(settle, delay))
      after(() => {
        if (outcome === 'reject') return reject(new Error('disk full (simulated)'))
        if (outcome === 'false') return resolve(false)
        if (session === this.agent?.session) this.durable = Math.max(this.durable, mark)
        this.flushedSinceRetry = true
        resolve(true)
      })
    })
  }

  /** One model step: a virtual delay, then a text, or (now and then) calls of the loop tools. */
  private async *modelStep(signal: AbortSignal | undefined): AsyncGenerator<unknown> {
    const long = !this.calm && this.random.chance(0.1)
    const delay = long ? this.random.int(60_000, 240_000) : this.random.int(1_000, 8_000)
    const life = this.life
    if (long) this.longSteps += 1
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(resolve, delay)
        signal?.addEventListener('abort', () => {
          clearTimeout(timer)
          reject(signal.reason)
        })
      })
    } finally {
      if (long && life === this.life) this.longSteps -= 1
    }
    // A hot reload as the step ends: DSH claims the next step's input while the plugin is replaced.
    if (!this.calm && this.random.chance(0.25)) void this.reload()
    const calls = !this.calm && this.modelToolCalls < 400 && this.random.chance(0.3) ? this.random.int(1, 3) : 0
    if (calls === 0) {
      yield { type: 'block-start', index: 0, blockType: 'text' }
      yield { type: 'block-end', index: 0, block: { type: 'text', text: 'done' } }
      yield { type: 'finish', reason: { kind: 'stop' } }
      return
    }
    for (let index = 0; index < calls; index += 1) {
      this.modelToolCalls += 1
      const [name, args] = this.toolCallArguments()
      const id = CallId(`model-call-${this.modelToolCalls}`)
      this.note(`model calls ${name} ${JSON.stringify(args)}`)
      yield { type: 'block-start', index, blockType: 'tool-call' }
      yield { type: 'block-end', index, block: { type: 'tool-call', id, name, arguments: JSON.stringify(args) } }
    }
    yield { type: 'finish', reason: { kind: 'tool-calls' } }
  }

  private toolCallArguments(): [string, Record<string, unknown>] {
    const active = [...this.fold.loops.keys()]
    const kind = this.random.weighted({ create: 3, delete: active.length > 0 ? 2 : 0, list: 1 })
    if (kind === 'create')
      return ['loop_create', { prompt: `m${(this.createNumber += 1)}`, time_in_seconds: this.interval() }]
    if (kind === 'delete') return ['loop_delete', { id: this.random.pick(active) }]
    return ['loop_list', {}]
  }

  private interval(): number {
    return this.random.pick([1, 2, 5, 10, 30, 60, 300, 900])
  }

  /** Start a user's call (a `/loop` line, or a tool call as the dock's Delete makes one); judged when it returns. */
  private call(via: 'command' | 'tool', line: string): void {
    this.stats.calls += 1
    const number = (this.callNumber += 1)
    const agent = this.agent
    const life = this.agentLife
    this.note(`call ${number}: ${line}`)
    const create = /^\/loop (\d+) (\S+)$/.exec(line)
    const done = (async () => {
      try {
        const { ok, code } = await this.callOnce(agent, via, line, number)
        this.note(`call ${number} ${ok ? 'done' : `refused${code === undefined ? '' : ` (${code})`}`}`)
        if (life === this.agentLife && create !== null) this.judgeCreate(number, create[2]!, ok, code)
      } catch (error) {
        // A call the crash or a fork cut short may throw: its host or agent is gone.
        if (life === this.agentLife)
          this.violated(`call ${number} threw: ${error instanceof Error ? error.message : String(error)}`)
      }
    })()
    this.pending.add(done)
    void done.finally(() => this.pending.delete(done))
  }

  /** One call through DSH's command or tool runtime: whether it succeeded, and the code of its refusal. */
  private async callOnce(
    agent: Agent,
    via: 'command' | 'tool',
    line: string,
    number: number,
  ): Promise<{ ok: boolean; code?: string | undefined }> {
    if (via === 'command') {
      const execution = await this.ctx.commands.execute(agent, line, [], new AbortController().signal)
      const reply = execution?.result as { kind: string; text?: string } | undefined
      // Changed, but its flush failed: the reply says so, and the change stands.
      const notSaved = /but saving the change failed/.test(String(reply?.text))
      return { ok: reply?.kind === 'success', code: notSaved ? 'persistence_failed' : undefined }
    }
    const outcome = await this.ctx.tools.execute({
      callId: CallId(`user-call-${number}`),
      name: 'loop_delete',
      arguments: { id: line.split(' ').at(-1)! },
      signal: new AbortController().signal,
      agent,
    })
    if (!outcome.isError) return { ok: true }
    return { ok: false, code: (outcome.error.info as { code?: string } | undefined)?.code ?? 'host' }
  }

  /** A `/loop <seconds> <prompt>` that returned: flushed when it succeeded, nothing appended when refused before its append. */
  private judgeCreate(number: number, prompt: string, ok: boolean, code: string | undefined): void {
    const made = this.loopLog.find(({ data }) => (data as { loop?: { prompt: string } }).loop?.prompt === prompt)
    if (!ok && code === undefined && made !== undefined)
      this.violated(`call ${number} was refused but appended its create`)
    if (ok && (made === undefined || made.index >= this.durable))
      this.violated(`call ${number} returned before its create was flushed`)
  }

  /** Dispose the plugin and apply it again, as a hot reload does, whatever is in flight. */
  private async reload(): Promise<void> {
    const previous = this.plugin
    const plugin = this.ctx.plugin(loopPlugin as PluginModule)
    this.plugin = plugin
    if (previous !== undefined) {
      this.stats.reloads += 1
      this.flushedSinceRetry = true
      this.note('hot reload')
      void previous.dispose()
    }
    try {
      await plugin
    } catch (error) {
      // One a later reload disposed before its apply ended finds its context inactive; Cordis reports it, and the later one loads.
      if (plugin === this.plugin) this.violated(`the plugin failed to load: ${(error as Error).message}`)
      else this.note(`a reload superseded before it loaded: ${(error as Error).message}`)
    }
  }

  /** One step of the world: an action, then virtual time. */
  async step(): Promise<void> {
    this.stats.steps += 1
    // Waiting first: a choice shrunk to 0 does nothing.
    const action = this.random.weighted({
      wait: 6,
      create: 4,
      createTogether: 1,
      delete: 2,
      toolDelete: 1,
      prompt: 3,
      stop: 1,
      jump: 0.7,
      reload: 0.4,
      crash: 0.3,
      fork: 0.5,
      replace: 0.3,
      archive: 0.3,
      outage: 0.2,
    })
    const active = [...this.fold.loops.keys()]
    switch (action) {
      case 'create':
        this.call('command', `/loop ${this.interval()} u${(this.createNumber += 1)}`)
        break
      case 'createTogether': {
        // Loops due at the same instant: earliest first, ties in creation order.
        const seconds = this.interval()
        for (let count = this.random.int(2, 3); count > 0; count -= 1)
          this.call('command', `/loop ${seconds} u${(this.createNumber += 1)}`)
        break
      }
      case 'delete':
        if (active.length > 0) this.call('command', `/loop delete ${this.random.pick(active)}`)
        break
      case 'toolDelete':
        if (active.length > 0) this.call('tool', `delete ${this.random.pick(active)}`)
        break
      case 'prompt':
        this.note('user prompt')
        this.agent.send(
          createUserMessage({ content: [{ type: 'text', text: 'go on' }], source: { kind: 'user' } }),
          'next-turn',
          true,
        )
        break
      case 'stop': {
        // Stop, with or without what waits in the inbox (a heartbeat then waits at an idle agent).
        const keepInbox = this.random.chance(0.5)
        this.note(`user stops the turn${keepInbox ? ', keeping the inbox' : ''}`)
        this.agent.cancel({ kind: 'user' }, { keepInbox })
        break
      }
      case 'jump': {
        this.stats.jumps += 1
        // Seconds to two days, either way: a sleep, a corrected clock, a clock set ahead.
        const by =
          this.random.pick([-1, 1]) *
          this.random.pick([this.random.int(1_000, 120_000), this.random.int(120_000, 2 * 86_400_000)])
        this.note(`wall clock jumps ${by} ms`)
        vi.setSystemTime(Date.now() + by)
        break
      }
      case 'reload':
        await this.reload()
        break
      case 'crash':
        await this.crash()
        break
      case 'fork':
        await this.fork()
        break
      case 'replace':
        await this.replace()
        break
      case 'outage':
        this.outageFlushes = this.random.int(5, 40)
        this.note(`the next ${this.outageFlushes} flushes fail`)
        break
      case 'archive':
        this.archived = !this.archived
        this.note(this.archived ? 'archived' : 'unarchived')
        break
      case 'wait':
        break
    }
    await vi.advanceTimersByTimeAsync(
      this.random.chance(0.7) ? this.random.int(0, 2_000) : this.random.int(2_000, 90_000),
    )
    this.judgeInbox()
  }

  /**
   * DSH killed: what survives is a prefix of the log between what the last flush acknowledged and
   * what was appended (SPEC.md §9 "What `loop` promises", Crashes). The dead host goes quiet; after a
   * while a new one writes that prefix with DSH's JSONL persistence and reopens the session from it,
   * with DSH's repair of an interrupted turn.
   */
  private async crash(): Promise<void> {
    // A session with nothing written is not on disk: there is nothing to reopen.
    if (this.eventCount === 0) return
    this.stats.crashes += 1
    const session = this.agent.session
    const cut = this.random.int(Math.max(this.durable, 1), this.eventCount)
    const survivors: readonly SessionEvent[] = session.events.slice(0, cut)
    this.note(`crash: ${cut} of ${this.eventCount} events survive, ${this.durable} acknowledged`)
    this.life += 1
    this.agentLife += 1
    const [plugin, handle] = [this.plugin, this.handle]
    void plugin?.dispose()
    void handle.dispose()
    this.pending.clear()
    vi.setSystemTime(Date.now() + this.random.int(1_000, 3_600_000))
    this.ctx = await this.host(this.newRoot())
    await this.ctx.sessionPersistence.create(session.header)
    await this.ctx.sessionPersistence.append(session.header.id, survivors)
    // What the reopened log says: its loops, and every change in it acknowledged.
    this.fold = new ModelFold()
    this.loopLog.length = 0
    survivors.forEach((event, index) => {
      if (event.type !== 'loop/change') return
      this.loopLog.push({ index, data: event.data })
      this.foldChange(event.data)
    })
    this.durable = cut
    // A heartbeat sent before its dispatch was saved may come once more (SPEC.md §9 "What `loop` promises").
    for (const loop of this.fold.loops.values()) this.excused.add(`${loop.id}@${loop.nextAt}`)
    this.openTurn = undefined
    this.claimedInTurn.clear()
    this.longSteps = 0
    this.outageFlushes = 0
    this.lastRetry = undefined
    this.flushedSinceRetry = true
    this.handle = await this.ctx.agents.resume({
      resumeSessionId: session.header.id,
      agentOptions: AGENT_OPTIONS,
      setup: (agentCtx) => this.wire(agentCtx.agent!),
    })
    this.note(`reopened with ${this.agent.session.events.length} events`)
  }

  /**
   * The user forks the idle session and goes on in the fork (SPEC.md §14 "Forks and delegated sessions"): a new root
   * agent seeded with the parent's log, the parent closed. The fork inherits its parent's
   * `loop/change` records, and must never send or dispatch one of those loops.
   */
  private async fork(): Promise<void> {
    const parent = this.agent
    if (parent.status !== 'idle' || this.eventCount === 0) return
    const seed = parent.session.events
    const inherited = new Set(this.fold.loops.keys())
    const [life, eventCount, lastRetry] = [this.agentLife, this.eventCount, this.lastRetry]
    let handle
    try {
      handle = await this.ctx.agents.create({
        sessionId: SessionId(`${SESSION}-fork-${(this.forkNumber += 1)}`),
        meta: { cwd: '/tmp/loop-sim', parentSession: parent.session.id, seedLength: seed.length },
        seed,
        agentOptions: AGENT_OPTIONS,
        setup: (agentCtx) => this.adopt(agentCtx.agent!),
      })
    } catch (error) {
      // DSH refuses a seed that is not a balanced prefix (a heartbeat waiting at the idle agent): no fork.
      this.note(`fork refused by DSH: ${(error as Error).message.slice(0, 120)}`)
      ;[this.agent, this.agentLife, this.eventCount, this.lastRetry] = [parent, life, eventCount, lastRetry]
      return
    }
    this.note(
      `fork ${this.agent.session.id} of ${seed.length} events, inheriting ${[...inherited].join(' ') || 'no loop'}`,
    )
    this.stats.forks += 1
    // The narrow window: the fork's first flushes fail, before it has a loop of its own.
    if (!this.calm && this.random.chance(0.5)) this.outageFlushes = this.random.int(5, 40)
    this.inherited = inherited
    // DSH stores a fork's seed before it publishes the fork.
    this.durable = seed.length
    void this.handle.dispose().then(() => this.retired.add(parent))
    this.handle = handle
  }

  /**
   * DSH replaces the session's agent in the same host (SPEC.md §8 "Host behaviours `loop` depends on (rc.8)"): the old one
   * torn down, whatever it was doing, then a new agent on a new `Session` over the log its close
   * wrote. The old runtime must go inert; the new one rebuilds its schedule from the log.
   */
  private async replace(): Promise<void> {
    // A session with nothing appended is never written: there is nothing to resume.
    if (this.eventCount === 0) return
    this.stats.replacements += 1
    const old = this.agent
    this.note('the agent is replaced')
    // Until the old agent is gone its appends and sends are the session's (its inbox goes to the
    // log, and the replacement takes it up), judged and counted as ever. Its teardown may wait on a
    // flush or a step in flight: virtual time moves meanwhile.
    await this.settled(this.handle.dispose())
    this.retired.add(old)
    const written = this.eventCount
    this.handle = await this.ctx.agents.resume({
      resumeSessionId: old.session.id,
      agentOptions: AGENT_OPTIONS,
      setup: (agentCtx) => this.adopt(agentCtx.agent!),
    })
    // DSH's close wrote the whole log: the new Session reads back every event the old one appended.
    if (this.agent.session.events.length < written)
      this.violated(`the replacement read ${this.agent.session.events.length} of ${written} events`)
    this.durable = written
    this.note(`replaced, ${this.agent.session.events.length} events`)
  }

  private judgeInbox(): void {
    const waiting = this.heartbeatsWaiting()
    const active = this.fold.loops
    for (const loop of new Set(waiting)) {
      if (waiting.filter((id) => id === loop).length > 1) this.violated(`two heartbeats of ${loop} wait in the inbox`)
      if (!active.has(loop)) this.violated(`a heartbeat of ${loop}, which is not active, waits in the inbox`)
    }
  }

  /** The calm tail: no faults, no jumps, short steps; every turn ends and every loop fires on time. */
  async calmTail(): Promise<void> {
    this.calm = true
    this.archived = false
    this.outageFlushes = 0
    this.note('calm')
    // A step of minutes the model began before the calm is part of the storm: a runtime that joined
    // its turn by a hot reload holds its heartbeats until the turn shows a step (SPEC.md §4 "Delivery").
    for (let waited = 0; this.longSteps > 0 && waited < 5 * 60_000; waited += 1_000)
      await vi.advanceTimersByTimeAsync(1_000)
    await vi.advanceTimersByTimeAsync(2 * 60_000)
    await this.settleCalls()
    await vi.advanceTimersByTimeAsync(60_000 + 5_000)
    const now = Date.now()
    for (const loop of this.fold.loops.values()) {
      if (loop.nextAt < now - LONGEST_WAIT_MS - 1_000)
        this.violated(`${loop.id} is overdue by ${now - loop.nextAt} ms after a calm tail`)
      if (loop.nextAt - now > 1.5 * loop.seconds * 1000)
        this.violated(`${loop.id} is ${loop.nextAt - now} ms ahead after a calm tail`)
    }
    // The list answers from the queue, after a drive in flight: each schedule between the model's before and after.
    const before = new Map(this.fold.loops)
    const listed = await this.settled(
      this.ctx.tools.execute({
        callId: CallId('final-list'),
        name: 'loop_list',
        arguments: {},
        signal: new AbortController().signal,
        agent: this.agent,
      }),
    )
    const after = this.fold.loops
    const got = listed.isError ? [] : (listed.value as { id: string; prompt: string; next_at: number }[])
    const fits =
      !listed.isError &&
      got.length === after.size &&
      got.every(({ id, prompt, next_at: nextAt }) => {
        const [then, now] = [before.get(id), after.get(id)]
        return then !== undefined && now?.prompt === prompt && then.nextAt <= nextAt && nextAt <= now.nextAt
      })
    if (!fits)
      this.violated(`loop_list ${JSON.stringify(listed)} is not the model's ${JSON.stringify([...after.values()])}`)
    // Then every loop goes: the agent runs out of work, and every turn it began has ended.
    for (const id of this.fold.loops.keys()) this.call('command', `/loop delete ${id}`)
    await vi.advanceTimersByTimeAsync(2 * 60_000)
    await this.settleCalls()
    if (this.fold.loops.size > 0) this.violated(`${this.fold.loops.size} loops left after deleting every one`)
    if (this.agent.status !== 'idle') this.violated(`the agent is still ${this.agent.status} with no loops left`)
    const started = new Set<number>()
    for (const event of this.agent.session.events) {
      if (event.type === 'turn/start') started.add((event.data as { turn: number }).turn)
      if (event.type === 'turn/end') started.delete((event.data as { turn: number }).turn)
    }
    if (started.size > 0) this.violated(`turns ${[...started].join(', ')} never ended`)
    // The world's own count of the log, checked once: every event came through the append it watches.
    if (this.eventCount !== this.agent.session.events.length) this.violated('the world lost count of the log')
  }

  /** A promise's value, moving virtual time while it waits (on a flush, a timer). */
  private async settled<T>(promise: Promise<T>): Promise<T> {
    let done = false
    void promise.finally(() => (done = true)).catch(() => {})
    for (let waited = 0; !done && waited < 30 * 60_000; waited += 100) await vi.advanceTimersByTimeAsync(100)
    return promise
  }

  /**
   * Wait for a teardown. One that fails or never ends is a violation (unless `what` is undefined:
   * not judged), and the run ends without it rather than hang.
   */
  private async tornDown(what: string | undefined, teardown: Promise<unknown> | undefined): Promise<void> {
    let done = false
    // Awaited, not chained: a Cordis fiber's dispose returns a thenable of its own kind.
    void (async () => await teardown)().then(
      () => (done = true),
      (error: unknown) => {
        done = true
        if (what !== undefined)
          this.violated(`${what} failed to tear down: ${error instanceof Error ? error.message : String(error)}`)
      },
    )
    // Virtual time for its timers, real turns of the event loop for its writes (a session's close),
    // for up to 10 virtual minutes and 10 real seconds.
    const start = performance.now()
    for (let waited = 0; teardown !== undefined && !done && performance.now() - start < 10_000; waited += 1_000) {
      if (waited < 10 * 60_000) await vi.advanceTimersByTimeAsync(1_000)
      await new Promise((resolve) => setImmediate(resolve))
    }
    if (!done && teardown !== undefined && what !== undefined) this.violated(`${what} never finished tearing down`)
  }

  /** Let every call in flight return, moving virtual time while any waits; one that never returns is a violation. */
  private async settleCalls(): Promise<void> {
    for (let waited = 0; this.pending.size > 0 && waited < 30 * 60_000; waited += 1_000)
      await vi.advanceTimersByTimeAsync(1_000)
    if (this.pending.size > 0) this.violated(`${this.pending.size} calls never returned`)
  }

  async end(): Promise<SimResult> {
    try {
      await this.tornDown('the plugin', this.plugin?.dispose())
      await this.tornDown("the user's agent", this.handle?.dispose())
      // A host left composed keeps its agent registry's AsyncLocalStorage enabled, and every promise of
      // every later run pays for it: 100 seeds took 55 s with them, 20 s without.
      // A crashed host's process is dead: it is disposed only to free it, and what it still waits on is not judged.
      for (const host of this.hosts)
        await this.tornDown(host === this.ctx ? 'the host' : undefined, host.fiber.dispose())
    } finally {
      // Whatever the end threw, the next run starts from the real clock and unwrapped prototypes.
      vi.useRealTimers()
      vi.restoreAllMocks()
    }
    // A dead host may still be closing its session into its folder: retried, as `rm -rf` would be.
    for (const root of this.roots) rmSync(root, { recursive: true, force: true, maxRetries: 20, retryDelay: 10 })
    return {
      source: this.source,
      choices: this.random.drawn,
      trace: this.trace,
      violations: this.violations,
      stats: this.stats,
    }
  }
}

/** A dead host's model step: it ends at once, calling nothing. */
async function* deadStep(): AsyncGenerator<unknown> {
  yield { type: 'finish', reason: { kind: 'stop' } }
}

/**
 * Run one seed (or list of choices): boot, `steps` steps of actions and faults, the calm tail.
 * @param source - the run's seed, or the choices to play back.
 * @param steps - how many steps before the calm tail.
 * @returns the trace, violations and counts.
 */
export async function simulate(source: number | readonly number[], steps = 100): Promise<SimResult> {
  const world = new World(source)
  // Cordis builds an Error (a stack trace) at every service lookup; no run reads those stacks.
  const stackTraceLimit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    await world.boot()
    for (let step = 0; step < steps; step += 1) await world.step()
    await world.calmTail()
  } catch (error) {
    // Whatever throws out of the world (the host, the plugin, the world itself) fails the seed.
    world.threw(error)
  } finally {
    Error.stackTraceLimit = stackTraceLimit
  }
  return await world.end()
}

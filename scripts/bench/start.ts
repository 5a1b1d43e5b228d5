/**
 * Resume on start (SPEC.md, "Resume on start"): what the start-up path costs a
 * long-lived host. Three figures, ratios taken within one run:
 *
 * - idle start: a host over a home with 200 stored sessions and no loops, from
 *   boot until the plugin's start-up path has finished (it lists the headers and
 *   reads the hint directory, never a log), against the same host without the
 *   plugin (target: at most 5 % more);
 * - revival: 20 sessions holding loops, from the plugin's load until all 20 are
 *   live, against the host bringing the same 20 live through its own resolver
 *   with the same concurrency, the plugin loaded with `resumeOnStart: false` so
 *   both sides pay for the loop runtimes and only the start-up path differs
 *   (target: within 1.2×);
 * - memory: heap each brought-back session holds once live;
 * - and, for the revival's overhead, the plugin's own read of the same sessions
 *   alone (`persistence.inspect` and the loop fold, same concurrency): it reads
 *   each candidate before the host's resolver reads it again.
 *
 * The host is the bench's real in-process host (scripts/bench/host.ts) plus what
 * DSH web composes around cold sessions, in its order (as test/host.ts's `home`
 * option does): `dshHomePath`, storage with the JSON domain backend, the
 * workspace registry, the projection cache, the Typert registry and the host's
 * own `createApiRemoteAgentResolver` behind the lookup `agent`. The workspace
 * registry and the projection cache work per stored session at boot, so the
 * idle start's denominator is a realistic in-process start, not a bare host.
 * @module scripts/bench/start
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context } from '@deepseek-ai/cordis'
import type { AgentStatus } from '@deepseek-ai/dsh-agent'
import { KNOWN_SESSION_EVENT_TYPES, SessionId } from '@deepseek-ai/dsh-session'
import * as loopPlugin from '../../src/index.ts'
import { activeLoops, emptyLoopFold, foldLoopEvents } from '../../src/domain.ts'
import { REVIVE_CONCURRENCY } from '../../src/revive.ts'
import { mountWebComposition, type PluginModule } from '../../test/support/compose-host.ts'
import { bootHost, copyRoot, createAgent, runTool, type Host } from './host.ts'
import { collectGarbage, median, preciseNow } from './stats.ts'

/** Options of {@link benchStart}. */
export interface StartBenchOptions {
  /** Trials per measured start (alternating with and without; even, so each side goes first equally often), default 6. */
  readonly trials?: number
  /** Stored sessions without loops in the idle-start home, default 200. */
  readonly idleSessions?: number
  /** Sessions holding loops in the revival home, default 20. */
  readonly loopSessions?: number
  /** `/loop list` commands run in each stored session (two events each), default 10. */
  readonly commandsPerSession?: number
  /** Whether the side with the plugin runs first in the first trial (then they alternate), default true. */
  readonly withFirst?: boolean
  /** Stored homes from {@link storeStartHomes}, copied before use; without them the job stores its own. */
  readonly homes?: StartHomes
}

/** The stored homes {@link benchStart} measures on: written once, copied by each process that measures. */
export interface StartHomes {
  readonly idleRoot: string
  readonly idleHome: string
  readonly loopRoot: string
  readonly loopHome: string
  /** Ids of the sessions holding loops. */
  readonly ids: readonly string[]
  readonly idleSessions: number
  readonly loopSessions: number
}

/** What {@link benchStart} measured; times are medians in ms. */
export interface StartBenchResult {
  readonly idleSessions: number
  /** Boot until the start-up path finished, with the plugin. */
  readonly idleStartWith: number
  /** The same boot without the plugin. */
  readonly idleStartWithout: number
  /** `idleStartWith / idleStartWithout` (target ≤ 1.05). */
  readonly idleStartRatio: number
  /** `idleStartWith - idleStartWithout`, ms: what the plugin adds in absolute terms (a real `dsh web` boots in 1.6–2.6 s). */
  readonly idleStartAdded: number
  readonly loopSessions: number
  /** Plugin load until every session holding loops is live. */
  readonly reviveWith: number
  /** The host's resolver bringing the same sessions live, same concurrency. */
  readonly reviveHostResolver: number
  /** `reviveWith / reviveHostResolver` (target ≤ 1.2). */
  readonly reviveRatio: number
  /**
   * The plugin's own read of the same sessions, alone: `persistence.inspect` of each and the
   * loop fold, same concurrency, in a fresh host (median ms). The plugin reads each candidate
   * before the host's resolver reads it again, so this is the part of `reviveWith` the
   * baseline does not pay.
   */
  readonly reviveInspect: number
  /** Heap held per brought-back session once live, bytes (after a full GC). */
  readonly heapPerSessionBytes: number
  readonly samples: {
    readonly idleStartWith: readonly number[]
    readonly idleStartWithout: readonly number[]
    readonly reviveWith: readonly number[]
    readonly reviveHostResolver: readonly number[]
    readonly reviveInspect: readonly number[]
  }
}

/** Untimed boots of each side before the timed idle boots. */
const WARM_UP_ROUNDS = 3

/**
 * Mount what DSH web composes around cold sessions (the tests' composition, `mountWebComposition`),
 * with a resolver whose setup keeps the model boundary fake: a brought-back session must never reach a provider.
 */
async function mountWebResolver(ctx: Context, home: string): Promise<void> {
  await mountWebComposition(ctx, home, {
    resolverSetup: () => (agentCtx: Context) => {
      const agent = agentCtx.agent!
      const idle: AgentStatus = 'idle'
      for (const method of ['send', 'steer', 'followup'])
        Object.defineProperty(agent, method, { value: () => {}, configurable: true })
      Object.defineProperty(agent, 'status', { get: () => idle, configurable: true })
    },
  })
}

/** Boot the web-like host on a stored home, with or without the plugin. */
async function bootWebHost(root: string, home: string, withPlugin: boolean): Promise<Host> {
  const host = await bootHost({ root, loop: false, changeFeed: false })
  await mountWebResolver(host.ctx, home)
  if (withPlugin) await host.ctx.plugin(loopPlugin as unknown as PluginModule, {} as never)
  return host
}

/** Wait until the plugin printed its start-up summary (it reports on the terminal, SPEC.md). */
function summaryWatch(): { readonly done: Promise<void>; restore(): void } {
  const original = console.error
  let finish: () => void = () => {}
  const done = new Promise<void>((resolve) => (finish = resolve))
  console.error = (...args: unknown[]) => {
    if (typeof args[0] === 'string' && args[0].startsWith('loop: brought back')) finish()
    else if (!(typeof args[0] === 'string' && args[0].startsWith('loop: '))) original(...args)
  }
  return { done, restore: () => (console.error = original) }
}

/** Store `count` sessions (each with `commands` `/loop list` runs) and, for the first `withLoops`, one hour-long loop. */
async function storeSessions(
  root: string,
  home: string,
  count: number,
  withLoops: number,
  commands: number,
): Promise<string[]> {
  const host = await bootHost({ root, loop: false, changeFeed: false })
  host.ctx.provide('dshHomePath', (...segments: string[]) => join(home, ...segments))
  await host.ctx.plugin(loopPlugin as unknown as PluginModule, {} as never)
  const ids: string[] = []
  for (let index = 0; index < count; index += 1) {
    const id = `session-bench-${String(index).padStart(4, '0')}`
    const fake = await createAgent(host, id)
    for (let command = 0; command < commands; command += 1)
      await host.ctx.commands.execute(fake.agent, '/loop list', [], new AbortController().signal)
    if (index < withLoops)
      await runTool(host, fake.agent, 'loop_create', { prompt: `watch ${index}`, time_in_seconds: 3_600 })
    await host.ctx.sessions.flush(fake.agent.session)
    ids.push(id)
  }
  await host.dispose()
  return ids
}

/** A fresh directory. */
function freshDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix))
}

/**
 * Store the two homes once (the idle home without loops, the home whose sessions hold loops), so
 * several measuring processes share the work; the caller removes the four directories.
 * @param options - sizes.
 * @returns where they are.
 */
export async function storeStartHomes(options: StartBenchOptions = {}): Promise<StartHomes> {
  const idleSessions = options.idleSessions ?? 200
  const loopSessions = options.loopSessions ?? 20
  const commands = options.commandsPerSession ?? 10
  const [idleRoot, idleHome, loopRoot, loopHome] = ['idle', 'idle-home', 'loops', 'loops-home'].map((name) =>
    freshDir(`loop-bench-start-${name}-`),
  ) as [string, string, string, string]
  await storeSessions(idleRoot, idleHome, idleSessions, 0, commands)
  const ids = await storeSessions(loopRoot, loopHome, loopSessions, loopSessions, commands)
  return { idleRoot, idleHome, loopRoot, loopHome, ids, idleSessions, loopSessions }
}

/**
 * Measure the start-up path (see the module comment).
 * @param options - sizes and trials.
 * @returns medians, ratios, samples and heap per session.
 */
export async function benchStart(options: StartBenchOptions = {}): Promise<StartBenchResult> {
  const trials = options.trials ?? 6
  const order = (trial: number) => ((trial % 2 === 0) === (options.withFirst ?? true) ? [true, false] : [false, true])
  // A host without the plugin must still read logs holding loop/change (SPEC.md, "Event catalog").
  ;(KNOWN_SESSION_EVENT_TYPES as Set<string>).add('loop/change')
  const stored = options.homes === undefined ? await storeStartHomes(options) : undefined
  const shared = options.homes ?? stored!
  // A private copy of shared homes: revival appends to the logs and the start-up path writes its marker and lease.
  const { idleSessions, loopSessions } = shared
  const [idleRoot, idleHome, loopRoot, loopHome] = [
    shared.idleRoot,
    shared.idleHome,
    shared.loopRoot,
    shared.loopHome,
  ].map((source) => (stored === undefined ? copyRoot(source) : source)) as [string, string, string, string]
  const dirs = [idleRoot, idleHome, loopRoot, loopHome]
  try {
    // Idle start: 200 sessions, no loops; the hint directory is empty, so nothing is read.
    const idleWith: number[] = []
    const idleWithout: number[] = []
    const idleBoot = async (withPlugin: boolean): Promise<number> => {
      collectGarbage()
      const watch = summaryWatch()
      const started = preciseNow()
      const host = await bootWebHost(idleRoot, idleHome, withPlugin)
      if (withPlugin) await watch.done
      const elapsed = preciseNow() - started
      watch.restore()
      await host.dispose()
      return elapsed
    }
    // Untimed boots of each side first: module loading, JIT warm-up and the page cache settle on neither side,
    // and the plugin's one-time checkpoint scan is done (the timed boots measure the steady start).
    for (let warm = 0; warm < WARM_UP_ROUNDS; warm += 1)
      for (const withPlugin of [true, false]) await idleBoot(withPlugin)
    for (let trial = 0; trial < trials; trial += 1) {
      for (const withPlugin of order(trial)) (withPlugin ? idleWith : idleWithout).push(await idleBoot(withPlugin))
    }

    // Revival: a fresh copy of the home per trial would cost a rebuild; the same stored sessions are
    // brought live in a fresh host each trial (nothing fires: the loops are an hour away).
    const ids = shared.ids.map((id) => SessionId(id))
    const reviveWith: number[] = []
    const reviveResolver: number[] = []
    let heapPerSession = 0
    for (let trial = -1; trial < trials; trial += 1) {
      // Trial -1: one untimed revival of each side, so neither pays the first resume's cold code.
      for (const withPlugin of order(Math.max(trial, 0))) {
        // Both sides run the plugin's runtimes; the baseline has the start-up path off and opens the sessions itself.
        const host = await bootWebHost(loopRoot, loopHome, false)
        const quiet = summaryWatch()
        if (!withPlugin) await host.ctx.plugin(loopPlugin as unknown as PluginModule, { resumeOnStart: false } as never)
        quiet.restore()
        collectGarbage()
        const heapBefore = process.memoryUsage().heapUsed
        const started = preciseNow()
        if (withPlugin) {
          const watch = summaryWatch()
          await host.ctx.plugin(loopPlugin as unknown as PluginModule, {} as never)
          await watch.done
          watch.restore()
        } else {
          const lookup = host.ctx.typert.lookups.get('agent')!
          const queue = [...ids]
          await Promise.all(
            Array.from({ length: REVIVE_CONCURRENCY }, async () => {
              for (let id = queue.shift(); id !== undefined; id = queue.shift()) await lookup.resolve(id)
            }),
          )
        }
        const elapsed = preciseNow() - started
        const live = ids.filter((id) => host.ctx.agents.get(id) !== undefined).length
        if (live !== ids.length)
          throw new Error(
            `only ${live} of ${ids.length} sessions came live (${withPlugin ? 'plugin' : 'host resolver'})`,
          )
        if (withPlugin && trial >= 0) {
          collectGarbage()
          heapPerSession = Math.max(heapPerSession, (process.memoryUsage().heapUsed - heapBefore) / ids.length)
        }
        await host.dispose()
        if (trial >= 0) (withPlugin ? reviveWith : reviveResolver).push(elapsed)
      }
    }
    // The plugin's read alone: what the start-up path does per candidate before the resolver reads it again.
    const inspects: number[] = []
    for (let trial = 0; trial < trials; trial += 1) {
      const host = await bootWebHost(loopRoot, loopHome, false)
      const persistence = host.ctx.get('sessionPersistence')!
      collectGarbage()
      const started = preciseNow()
      const queue = [...ids]
      await Promise.all(
        Array.from({ length: REVIVE_CONCURRENCY }, async () => {
          for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
            const { meta, events } = await persistence.inspect(id, new AbortController().signal)
            activeLoops(foldLoopEvents(emptyLoopFold(), events.slice(meta.seedLength ?? 0)))
          }
        }),
      )
      inspects.push(preciseNow() - started)
      await host.dispose()
    }
    const idleStartWith = median(idleWith)
    const idleStartWithout = median(idleWithout)
    const reviveWithMedian = median(reviveWith)
    const reviveResolverMedian = median(reviveResolver)
    return {
      idleSessions,
      idleStartWith,
      idleStartWithout,
      idleStartRatio: idleStartWith / idleStartWithout,
      idleStartAdded: idleStartWith - idleStartWithout,
      loopSessions,
      reviveWith: reviveWithMedian,
      reviveHostResolver: reviveResolverMedian,
      reviveRatio: reviveWithMedian / reviveResolverMedian,
      reviveInspect: median(inspects),
      heapPerSessionBytes: Math.round(heapPerSession),
      samples: {
        idleStartWith: idleWith,
        idleStartWithout: idleWithout,
        reviveWith,
        reviveHostResolver: reviveResolver,
        reviveInspect: inspects,
      },
    }
  } finally {
    for (const made of dirs) rmSync(made, { recursive: true, force: true })
  }
}

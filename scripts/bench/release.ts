/**
 * Row 7, leaving loop: `dsh-plugin-loop release` (removal and upgrade) on a `session.jsonl.zstd` the real host wrote,
 * against the floor of any such tool, a plain frame-by-frame decompress-and-recompress of the same file. Each side runs
 * in a Node process of its own (`release-run.ts`), so its peak RSS is its own; sides alternate, and each run releases a
 * fresh copy with Node's default heap, as users run it. Besides, each release runs once with the JS heap capped at
 * {@link HEAP_MIB} MiB and must finish. Two sizes. Row 8: a home of many small sessions (`runHomeRelease`).
 * @module scripts/bench/release
 */
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { copyFileSync, cpSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { bootHost, createAgent } from './host.ts'
import { LogWriter, loopId, syntheticCreate } from './log.ts'
import { tempDir } from '../../harness/temp-dir.ts'

/** The three ways to rewrite a log this row compares. */
export type ReleaseSide = 'floor' | 'removal' | 'upgrade'

/** One measured run: wall time of the rewrite and the peak RSS of its process. */
export interface ReleaseRun {
  readonly side: ReleaseSide
  readonly events: number
  readonly ms: number
  readonly maxRssBytes: number
  /** `loop/change` rows marked or removed (none for the floor). */
  readonly rows: number
}

/** Row 7's results. */
export interface ReleaseResult {
  /** Each log: its events, bytes on disk, frames and `loop/change` rows. */
  readonly logs: readonly { readonly events: number; readonly bytes: number; readonly loopRows: number }[]
  /** Timed as users run it: Node's default heap. */
  readonly runs: readonly ReleaseRun[]
  /** Each release once at each size with the JS heap capped at {@link HEAP_MIB} MiB: each finished. */
  readonly capped: readonly ReleaseRun[]
}

const HERE = dirname(fileURLToPath(import.meta.url))

/**
 * The JS heap (V8's old space) every side runs in, at every size: a side that held the log, or any part of it that grows
 * with the log, would not finish at 1M. Buffers live outside it, so the peak RSS is shown beside.
 */
export const HEAP_MIB = 24

/** Events per flush while the log grows: one frame each, as DSH flushes a batch (a turn's worth) at a time. */
const EVENTS_PER_FRAME = 1_000

/** Write a log of `events` events with the real host (a fifth `loop/change` rows, as in every size row); return its path. */
async function writeLog(events: number): Promise<string> {
  const host = await bootHost({ keepRoot: true, loopConfig: { maxLoopsPerSession: 1_000 } })
  const fake = await createAgent(host, `session-release-${events}`)
  const writer = new LogWriter(fake.agent.session)
  while (fake.agent.session.seq < events) {
    writer.appendEvents(EVENTS_PER_FRAME)
    await host.ctx.sessions.flush(fake.agent.session)
  }
  await host.dispose()
  const [project] = readdirSync(host.root)
  return join(host.root, project!, `session-release-${events}`, 'session.jsonl.zstd')
}

/**
 * One side on a fresh copy of the log, in its own process: as users run it (Node's default heap), or with the JS heap
 * capped at {@link HEAP_MIB} MiB, where only finishing counts.
 */
function measure(side: ReleaseSide, log: string, events: number, capped = false): ReleaseRun {
  const scratch = tempDir('loop-bench-release-')
  try {
    // A home of its own, so the release runs whole: its lock and its look for DSH processes included.
    const copy = join(scratch, 'sessions', '--bench--', `session-release-${events}`, 'session.jsonl.zstd')
    mkdirSync(dirname(copy), { recursive: true })
    copyFileSync(log, copy)
    const child = spawnSync(
      process.execPath,
      [
        '--experimental-transform-types',
        '--disable-warning=ExperimentalWarning',
        ...(capped ? [`--max-old-space-size=${HEAP_MIB}`] : []),
        // The floor collects as it goes (release-run.ts says why).
        ...(side === 'floor' ? ['--expose-gc'] : []),
        join(HERE, 'release-run.ts'),
        side,
        side === 'floor' ? copy : scratch,
      ],
      { encoding: 'utf8' },
    )
    if (child.status !== 0) throw new Error(`release-run ${side} failed: ${child.stderr}`)
    const { ms, maxRssBytes, rows } = JSON.parse(child.stdout) as Omit<ReleaseRun, 'side' | 'events'>
    return { side, events, ms, maxRssBytes, rows }
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}

/**
 * @param options - the log sizes and how many runs of each side at each.
 * @param log - progress.
 */
export async function runRelease(
  options: { readonly sizes: readonly number[]; readonly repeats: number },
  log: (line: string) => void,
): Promise<ReleaseResult> {
  const logs: ReleaseResult['logs'][number][] = []
  const runs: ReleaseRun[] = []
  const capped: ReleaseRun[] = []
  const sides: ReleaseSide[] = ['floor', 'removal', 'upgrade']
  for (const events of options.sizes) {
    const path = await writeLog(events)
    // Capped, both releases must finish (a failure stops the bench); the removal's run is the warm-up too.
    const removal = measure('removal', path, events, true)
    const upgrade = measure('upgrade', path, events, true)
    capped.push(removal, upgrade)
    logs.push({ events, bytes: statSync(path).size, loopRows: removal.rows })
    log(
      `release: ${events} events, ${statSync(path).size} bytes (capped at ${HEAP_MIB} MiB: removal ${removal.ms.toFixed(0)} ms, upgrade ${upgrade.ms.toFixed(0)} ms)`,
    )
    for (let repeat = 0; repeat < options.repeats; repeat += 1)
      for (let turn = 0; turn < sides.length; turn += 1) {
        // Rotated, so no side always runs first.
        const run = measure(sides[(repeat + turn) % sides.length]!, path, events)
        log(
          `  ${run.side} at ${events}: ${run.ms.toFixed(0)} ms, peak RSS ${(run.maxRssBytes / 2 ** 20).toFixed(1)} MiB`,
        )
        runs.push(run)
      }
    rmSync(dirname(dirname(dirname(path))), { recursive: true, force: true })
  }
  return { logs, runs, capped }
}

/** The four runs over a whole home row 8 compares: the floor, and the release as a user runs it in each mode. */
export type HomeSide = 'floor' | 'removal' | 'upgrade' | 'dry-run'

/** One run over a whole home. */
export interface HomeRun {
  readonly side: HomeSide
  readonly ms: number
}

/** The home row's results: how many sessions, each log's size, and the runs. */
export interface HomeResult {
  readonly sessions: number
  readonly logBytes: number
  readonly runs: readonly HomeRun[]
}

/** Cycles per flush in a home's logs: one turn each, so a small log has many frames, as DSH writes it. */
const HOME_CYCLES_PER_FRAME = 1

/**
 * Write one session log of at least `bytes` on disk with the real host: turns whose answers are random words (text
 * that compresses as a conversation does, not as a repeated phrase), each beside a loop's create and delete.
 */
async function writeSmallLog(bytes: number): Promise<string> {
  const host = await bootHost({ keepRoot: true })
  const fake = await createAgent(host, 'session-home')
  const session = fake.agent.session
  const words = (count: number) => Array.from({ length: count }, () => randomBytes(3).toString('base64url')).join(' ')
  let path: string
  for (let turn = 1; ; turn += 1) {
    for (let cycle = 0; cycle < HOME_CYCLES_PER_FRAME; cycle += 1) {
      session.append('loop/change', syntheticCreate(loopId(turn), words(6)))
      session.append('loop/change', { version: 1, operation: 'delete', id: loopId(turn) })
      session.append('turn/start', { turn })
      session.append('step/start', { turn, step: 0 })
      for (let chunk = 0; chunk < 6; chunk += 1)
        session.append('assistant/chunk', { turn, step: 0, chunk: { type: 'text-delta', index: 0, text: words(8) } })
      session.append('step/end', { turn, step: 0 })
      session.append('turn/end', { turn, reason: { kind: 'completed' } })
    }
    await host.ctx.sessions.flush(session)
    path = join(host.root, readdirSync(host.root)[0]!, 'session-home', 'session.jsonl.zstd')
    if (statSync(path).size >= bytes) break
  }
  await host.dispose()
  return path
}

/** A home of `sessions` copies of one log, each in a session folder of its own. */
function writeHomeOf(log: string, sessions: number): string {
  const home = tempDir('loop-bench-home-')
  for (let index = 0; index < sessions; index += 1) {
    const copy = join(home, 'sessions', '--bench--', `session-${index}`, 'session.jsonl.zstd')
    mkdirSync(dirname(copy), { recursive: true })
    copyFileSync(log, copy)
  }
  return home
}

/**
 * Runs over a home of many small sessions, the four sides rotated, each on a fresh copy of the home in a Node process of
 * its own (Node's default heap).
 * @param options - sessions, each log's size on disk, and repeats.
 * @param log - progress.
 */
export async function runHomeRelease(
  options: { readonly sessions: number; readonly logBytes: number; readonly repeats: number },
  log: (line: string) => void,
): Promise<HomeResult> {
  const path = await writeSmallLog(options.logBytes)
  const logBytes = statSync(path).size
  const source = writeHomeOf(path, options.sessions)
  rmSync(dirname(dirname(dirname(path))), { recursive: true, force: true })
  log(`release home: ${options.sessions} sessions of ${logBytes} bytes`)
  const sides: HomeSide[] = ['floor', 'removal', 'upgrade', 'dry-run']
  const runs: HomeRun[] = []
  try {
    for (let repeat = 0; repeat < options.repeats; repeat += 1)
      for (let turn = 0; turn < sides.length; turn += 1) {
        // Rotated, so no side always runs first.
        const side = sides[(repeat + turn) % sides.length]!
        const home = tempDir('loop-bench-home-run-')
        cpSync(source, home, { recursive: true })
        const child = spawnSync(
          process.execPath,
          [
            '--experimental-transform-types',
            '--disable-warning=ExperimentalWarning',
            join(HERE, 'release-run.ts'),
            `home-${side}`,
            home,
          ],
          { encoding: 'utf8' },
        )
        rmSync(home, { recursive: true, force: true })
        if (child.status !== 0) throw new Error(`release-run home-${side} failed: ${child.stderr}`)
        const { ms } = JSON.parse(child.stdout) as { ms: number }
        log(`  ${side}: ${ms.toFixed(0)} ms`)
        runs.push({ side, ms })
      }
  } finally {
    rmSync(source, { recursive: true, force: true })
  }
  return { sessions: options.sessions, logBytes, runs }
}

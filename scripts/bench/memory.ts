/**
 * Row 4: heap after full GCs. Two real hosts, with the plugin and without, get the same `loop/change` events appended to
 * a session, which each then closes and resumes (the plugin's runtime reads a log the bench wrote past it as any stored
 * log); the plugin's share is the with-plugin growth minus the host-only growth (the log itself). Active loops are
 * appended as creates (as many as `maxLoopsPerSession` allows); cycles as a create and delete of a fresh id each.
 * @module scripts/bench/memory
 */
import type { Session } from '@deepseek-ai/dsh-session'
import { bootHost, createAgent, resumeAgent, runTool, type FakeAgent, type Host } from './host.ts'
import { SYNTHETIC_INTERVAL_SECONDS, loopId, syntheticCreate } from './log.ts'
import { collectGarbage } from './stats.ts'

export interface MemoryResult {
  /** Per trial: plugin heap per active loop minus the heap of one plain record of the same shape, bytes. */
  readonly perLoopBeyondRecord: readonly number[]
  readonly cycles: number
  /** Plugin heap growth over all cycles, bytes. */
  readonly cycleGrowth: number
}

function heap(): number {
  collectGarbage()
  return process.memoryUsage().heapUsed
}

/** The runtime folds (a list call) and the projection is read, so the plugin's view of the session is settled. */
async function settle(host: Host, fake: FakeAgent, plugin: boolean): Promise<void> {
  await host.ctx.sessions.flush(fake.agent.session)
  if (plugin) await runTool(host, fake.agent, 'loop_list', {})
  host.ctx.sessionProjections.snapshot(fake.agent.session)
}

async function reopen(host: Host, fake: FakeAgent, plugin: boolean): Promise<void> {
  await host.ctx.sessions.flush(fake.agent.session)
  await fake.dispose()
  await settle(host, await resumeAgent(host, fake.agent.session.id), plugin)
}

let nextId = 0
const prompt = (index: number) => `Check whether CI is green, round ${index}`

async function appendLoops(host: Host, session: Session, count: number, deleteEach: boolean): Promise<void> {
  for (let index = 0; index < count; index += 1) {
    const id = loopId(0x10000000 + nextId++)
    session.append('loop/change', syntheticCreate(id, prompt(index)))
    if (deleteEach) session.append('loop/change', { version: 1, operation: 'delete', id })
    if (index % 10_000 === 9_999) await host.ctx.sessions.flush(session)
  }
}

/** Heap growth of the same events on the host alone, then with the plugin: the plugin's share, bytes. */
async function pluginGrowth(
  hosts: { with: Host; without: Host },
  agents: { with: FakeAgent; without: FakeAgent },
  append: (host: Host, session: Session) => Promise<void>,
): Promise<number> {
  await settle(hosts.with, agents.with, true)
  await settle(hosts.without, agents.without, false)
  const start = heap()
  await append(hosts.without, agents.without.agent.session)
  await reopen(hosts.without, agents.without, false)
  const middle = heap()
  await append(hosts.with, agents.with.agent.session)
  await reopen(hosts.with, agents.with, true)
  return heap() - middle - (middle - start)
}

/** Heap of one plain record shaped like a decoded loop record, with its own id and prompt strings. */
function recordBytes(count: number): number {
  const before = heap()
  const records: object[] = []
  for (let index = 0; index < count; index += 1) {
    const id = loopId(0x30000000 + index)
    records.push({ id, prompt: prompt(index), time_in_seconds: SYNTHETIC_INTERVAL_SECONDS, next_at: Date.now() })
  }
  const bytes = (heap() - before) / count
  if (records.length !== count) throw new Error('unreachable')
  return bytes
}

export async function runMemory(
  options: { readonly activeLoops: number; readonly cycles: number; readonly trials: number },
  log: (line: string) => void,
): Promise<MemoryResult> {
  const { activeLoops, cycles } = options
  const hosts = { with: await bootHost(), without: await bootHost({ loop: false }) }
  const agents = async (name: string) => ({
    with: await createAgent(hosts.with, `memory-with-${name}`),
    without: await createAgent(hosts.without, `memory-without-${name}`),
  })
  const perLoop: number[] = []
  for (let trial = 0; trial < options.trials; trial += 1) {
    const growth = await pluginGrowth(hosts, await agents(`${trial}`), (host, session) =>
      appendLoops(host, session, activeLoops, false),
    )
    perLoop.push(growth / activeLoops)
    log(`  ${activeLoops} active loops: ${(growth / activeLoops).toFixed(0)} B per loop`)
  }
  const record = recordBytes(activeLoops)
  const perLoopBeyondRecord = perLoop.map((bytes) => bytes - record)
  const cycling = await agents('cycles')
  const args = { prompt: 'One loop that stays', time_in_seconds: SYNTHETIC_INTERVAL_SECONDS }
  await runTool(hosts.with, cycling.with.agent, 'loop_create', args)
  const cycleGrowth = await pluginGrowth(hosts, cycling, (host, session) => appendLoops(host, session, cycles, true))
  log(`  ${cycles} cycles: plugin +${(cycleGrowth / 2 ** 20).toFixed(2)} MiB`)
  await hosts.with.dispose()
  await hosts.without.dispose()
  return { perLoopBeyondRecord, cycles, cycleGrowth }
}

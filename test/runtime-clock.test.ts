import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { registerLoopCommand } from '../src/commands.ts'
import { DEFAULT_LOOP_CONFIG } from '../src/config.ts'
import { LoopRuntime, MAX_TIMER_WAIT_MS } from '../src/loop.ts'
import { registerLoopTools } from '../src/tools.ts'
import {
  bootHost,
  createFakeAgent,
  loopChanges,
  runCommand,
  runTool,
  signal,
  TEST_NOW,
  type FakeAgent,
  type Host,
} from './support/host.ts'
import { ManualClock } from './support/manual-clock.ts'

// Real timers and a real host; only the runtime's clock is the test's. No global is patched.
let host: Host
let fake: FakeAgent
let clock: ManualClock
let runtime: LoopRuntime
let disposeTools: () => void

beforeEach(async () => {
  host = await bootHost({ loop: false })
  fake = await createFakeAgent(host, 'ses-clock')
  clock = new ManualClock(TEST_NOW)
  runtime = new LoopRuntime(host.ctx, fake.agent, { oneShot: false, clock })
  disposeTools = registerLoopTools(fake.agent.ctx, runtime, { config: () => DEFAULT_LOOP_CONFIG, oneShot: false })
  runtime.start()
})
afterEach(async () => {
  disposeTools()
  await runtime.dispose()
  await host.dispose()
})

/** Wait for every drive and transaction queued so far: a read-only transaction runs behind them. */
const idle = () => runtime.transact('barrier', signal(), () => ({ result: undefined }))

/** Wait, on a loaded machine too, until the runtime armed exactly these timers. */
const armed = (instants: number[]) =>
  vi.waitFor(() => expect(clock.pending()).toEqual(instants), { timeout: 20_000, interval: 5 })

describe('the runtime on an injected clock', () => {
  it('fires a due loop exactly when the clock passes next_at, not a millisecond before', async () => {
    const created = await runTool(host, fake.agent, 'loop_create', {
      prompt: 'on the manual clock',
      time_in_seconds: 120,
    })
    expect(created.isError ? created.error.message : created.value).toMatchObject({
      next_at: TEST_NOW + 120_000,
      state: 'scheduled',
    })
    // The wait is capped: the first wake-up only re-reads the clock.
    await armed([TEST_NOW + MAX_TIMER_WAIT_MS])
    clock.advance(MAX_TIMER_WAIT_MS)
    await armed([TEST_NOW + 120_000])
    await idle()
    expect(fake.send).not.toHaveBeenCalled()
    clock.advance(120_000 - MAX_TIMER_WAIT_MS - 1)
    await idle()
    expect(fake.send).not.toHaveBeenCalled()
    expect(clock.pending()).toEqual([TEST_NOW + 120_000])
    clock.advance(1)
    await vi.waitFor(() => expect(fake.send).toHaveBeenCalledTimes(1), { timeout: 20_000, interval: 5 })
    await armed([TEST_NOW + 120_000 + MAX_TIMER_WAIT_MS])
    expect(loopChanges(fake.agent).slice(1)).toEqual([
      { version: 1, operation: 'dispatch', id: expect.stringMatching(/^loop_/), next_at: TEST_NOW + 240_000 },
    ])
  })

  it('stamps tool results and /loop list replies with the injected clock', async () => {
    const disposeCommand = registerLoopCommand(host.ctx, clock)
    try {
      const created = await runCommand(host, fake.agent, '/loop 90 stamped')
      expect(created).toMatchObject({ kind: 'success', text: expect.stringContaining('every 1m 30s, next in 1m 30s.') })
      clock.advance(30_000)
      const listed = await runTool(host, fake.agent, 'loop_list', {})
      expect(listed.isError ? listed.error.message : listed.value).toMatchObject([
        { next_at: TEST_NOW + 90_000, state: 'scheduled' },
      ])
      const reply = await runCommand(host, fake.agent, '/loop list')
      expect(reply).toMatchObject({
        kind: 'success',
        text: expect.stringContaining('next in 1m (2026-11-30T00:01:30.000Z)'),
      })
    } finally {
      disposeCommand()
    }
  })
})

import { afterEach, beforeEach, expect, it, vi } from 'vitest'
import { bootHost, createFakeAgent, loopChanges, settle, type Host } from './host.ts'
import { CallId } from '@deepseek-ai/dsh-llm'

let host: Host
beforeEach(async () => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: new Date('2026-11-30T00:00:00Z') })
  host = await bootHost()
})
afterEach(async () => {
  await host.dispose()
  vi.useRealTimers()
})

it('smoke', async () => {
  const fake = await createFakeAgent(host, 'ses-a')
  console.log(host.ctx.tools.schemas(fake.agent.ctx.agent).map((s) => s.name).filter(n => n.startsWith('loop')))
  const r = await host.ctx.tools.execute({ callId: CallId('c1'), name: 'loop_create', arguments: { prompt: ' hi ', time_in_seconds: 1 }, agent: fake.agent, signal: new AbortController().signal })
  console.log(JSON.stringify(r))
  const bad = await host.ctx.tools.execute({ callId: CallId('c2'), name: 'loop_create', arguments: { prompt: ' hi ', time_in_seconds: 1, title: 'x' }, agent: fake.agent, signal: new AbortController().signal })
  console.log(JSON.stringify(bad))
  await vi.advanceTimersByTimeAsync(1000)
  await settle()
  console.log(fake.send.mock.calls.length, JSON.stringify(fake.send.mock.calls[0]))
  console.log(JSON.stringify(loopChanges(fake.agent)))
  const cmd = await host.ctx.commands.execute(fake.agent, '/loop list', [], new AbortController().signal)
  console.log(JSON.stringify(cmd))
  console.log(JSON.stringify(host.ctx.sessionProjections.snapshot(fake.agent.session).values.loop))
})

import { agentEvents, emitAgentEvent } from '@deepseek-ai/dsh-agent'
import { KNOWN_SESSION_EVENT_TYPES, SessionId } from '@deepseek-ai/dsh-session'
import { afterEach, describe, expect, it, vi } from 'vitest'
import * as loopPlugin from '../src/index.ts'
import {
  advance,
  createFakeAgent,
  createLoop,
  listedOf,
  loopChanges,
  outcomeOf,
  resumeFakeAgent,
  runCommand,
  runTool,
  settle,
  signal,
  useHosts,
  type FakeAgent,
} from './support/host.ts'
import { tempDir } from '../harness/temp-dir.ts'
import { NOW } from './support/epoch.ts'

const hosts = useHosts()
afterEach(() => {
  ;(KNOWN_SESSION_EVENT_TYPES as Set<string>).add('loop/change')
})

describe('event catalog', () => {
  it('registers loop/change in the host catalog at load', async () => {
    ;(KNOWN_SESSION_EVENT_TYPES as Set<string>).delete('loop/change')
    await hosts.bootKeepingTimers()
    expect(KNOWN_SESSION_EVENT_TYPES.has('loop/change')).toBe(true)
  })

  it('warns when the host entry cannot be resolved, naming the consequence', async () => {
    const entry = process.argv[1]
    process.argv[1] = '/nonexistent/dsh/lib/bin.js'
    try {
      const host = await hosts.bootKeepingTimers({ loop: false })
      const warnings: string[] = []
      host.ctx.logger.exporter({
        levels: { default: 3 },
        export: (message) =>
          void (message.name === 'loop' && message.type === 'warn' && warnings.push(String(message.args[0]))),
      })
      await host.ctx.plugin(loopPlugin)
      expect(warnings).toEqual([
        `could not resolve the host's @deepseek-ai/dsh-session from its entry point (/nonexistent/dsh/lib/bin.js); only the plugin's own copy knows "loop/change", so sessions holding loops may fail to reopen after a restart if the host uses another copy`,
      ])
    } finally {
      process.argv[1] = entry as string
    }
  })
})

describe('restart through real JSONL persistence', () => {
  it('reloads a session holding loops in a fresh host and fires them again', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: NOW })
    const root = tempDir()
    const first = await hosts.bootKeepingTimers({ root })
    const before = await createFakeAgent(first, 'ses-restart')
    const created = await runCommand(first, before.agent, '/loop 2 survive the restart')
    expect(created.kind).toBe('success')
    await hosts.dispose(first)

    // A fresh process: only the plugin's registration can make the log readable again.
    ;(KNOWN_SESSION_EVENT_TYPES as Set<string>).delete('loop/change')
    const second = await hosts.bootKeepingTimers({ root })
    const after = await resumeFakeAgent(second, 'ses-restart')
    const listed = await runTool(second, after.agent, 'loop_list', {})
    expect(listedOf(listed, 'prompt')).toEqual(['survive the restart'])
    await advance(2000)
    expect(after.send).toHaveBeenCalledTimes(1)
    expect(before.send).not.toHaveBeenCalled()
  })

  it('without the plugin, the host refuses to load a session that holds loop events', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: NOW })
    const root = tempDir()
    const first = await hosts.bootKeepingTimers({ root })
    const agent = await createFakeAgent(first, 'ses-removed')
    await runCommand(first, agent.agent, '/loop 5 remember me')
    await hosts.dispose(first)

    // A fresh process without the plugin has a catalog without loop/change.
    ;(KNOWN_SESSION_EVENT_TYPES as Set<string>).delete('loop/change')
    const bare = await hosts.bootKeepingTimers({ root, loop: false })
    await expect(resumeFakeAgent(bare, 'ses-removed')).rejects.toThrow(
      /contains event type "loop\/change" \(seq 1\) unknown to this harness and not marked ignorable/,
    )
    await hosts.dispose(bare)

    // Adding the plugin back restores the session and its loop.
    const restored = await hosts.bootKeepingTimers({ root })
    const back = await resumeFakeAgent(restored, 'ses-removed')
    const listed = await runTool(restored, back.agent, 'loop_list', {})
    expect(listedOf(listed, 'prompt')).toEqual(['remember me'])
  })
})

describe('lifecycle', () => {
  it('loads again while a root is being disposed, and gives that root nothing', async () => {
    const host = await hosts.boot({ loop: false })
    const first = host.ctx.plugin(loopPlugin)
    await first
    const going = await createFakeAgent(host, 'ses-going')
    const disposed = going.handle.dispose()
    await new Promise((resolve) => setImmediate(resolve))
    // The window the simulation found: the root is still listed, its fiber already gone.
    expect(host.ctx.agents.roots()).toContain(going.agent)
    expect(going.agent.ctx.fiber.uid).toBeNull()
    const second = host.ctx.plugin(loopPlugin)
    void first.dispose()
    await second
    await disposed
    const staying = await createFakeAgent(host, 'ses-staying')
    expect(host.ctx.tools.get('loop_create', staying.agent)).toBeDefined()
    await runCommand(host, staying.agent, '/loop 1 after the reload')
    await advance(1000)
    expect(staying.send).toHaveBeenCalledTimes(1)
  })

  it('adopts root agents that were live before the plugin loaded', async () => {
    const host = await hosts.boot({ loop: false })
    const early = await createFakeAgent(host, 'ses-early')
    expect(host.ctx.tools.get('loop_create', early.agent)).toBeUndefined()
    await host.ctx.plugin(loopPlugin)
    expect(host.ctx.tools.get('loop_create', early.agent)).toBeDefined()
    await runCommand(host, early.agent, '/loop 1 adopted')
    await advance(1000)
    expect(early.send).toHaveBeenCalledTimes(1)
  })

  it('plugin disposal removes tools, the command and every timer, and stops delivery', async () => {
    const host = await hosts.boot({ loop: false })
    const fiber = host.ctx.plugin(loopPlugin)
    await fiber
    const fake = await createFakeAgent(host, 'ses-unload')
    await runCommand(host, fake.agent, '/loop list')
    await settle()
    const hostTimers = vi.getTimerCount()
    await runCommand(host, fake.agent, '/loop 1 stop me')
    await settle()
    expect(vi.getTimerCount()).toBe(hostTimers + 1)
    await fiber.dispose()
    expect(vi.getTimerCount()).toBe(hostTimers)
    expect(host.ctx.tools.get('loop_create', fake.agent)).toBeUndefined()
    expect(await host.ctx.commands.execute(fake.agent, '/loop list', [], new AbortController().signal)).toBeUndefined()
    await advance(5000)
    expect(fake.send).not.toHaveBeenCalled()
    // New agents after unload get nothing.
    const late = await createFakeAgent(host, 'ses-late')
    expect(host.ctx.tools.get('loop_create', late.agent)).toBeUndefined()
  })

  it('whole-host teardown leaves no timer behind', async () => {
    const host = await hosts.boot()
    const fake = await createFakeAgent(host, 'ses-teardown')
    await runCommand(host, fake.agent, '/loop list')
    await settle()
    const hostTimers = vi.getTimerCount()
    await runCommand(host, fake.agent, '/loop 1 a')
    await runCommand(host, fake.agent, '/loop 2 b')
    await settle()
    expect(vi.getTimerCount()).toBe(hostTimers + 1)
    await hosts.dispose(host)
    expect(vi.getTimerCount()).toBe(0)
  })

  it('runs without a projection registry', async () => {
    const host = await hosts.boot({ projections: false })
    const fake = await createFakeAgent(host, 'ses-noproj')
    expect((await runCommand(host, fake.agent, '/loop 1 fine')).kind).toBe('success')
    await advance(1000)
    expect(fake.send).toHaveBeenCalledTimes(1)
  })

  it('reports a missing persistence as a tool error instead of pretending', async () => {
    const host = await hosts.bootKeepingTimers({ persistence: false })
    const fake = await createFakeAgent(host, 'ses-nopersist')
    expect(await runCommand(host, fake.agent, '/loop 1 not saved')).toEqual({
      kind: 'error',
      text: 'Session persistence did not acknowledge the flush; no persistence is mounted for this session.',
    })
    expect(fake.agent.session.events.filter((event) => event.type === 'loop/change')).toEqual([])
  })

  it('arms nothing for a session without loops, even when no persistence is mounted', async () => {
    const host = await hosts.boot({ persistence: false })
    await createFakeAgent(host, 'ses-nopersist-idle')
    await advance(10 * 60_000, 60_000)
    expect(vi.getTimerCount()).toBe(0)
  })

  // dsh-agent-loop's lifecycle disposer (AgentLoop.prepare) awaits the agent's scope fiber (every
  // agent.ctx effect, so the runtime's cleanup) before it leaves the registry and the session store;
  // only then can the session be resumed, into a Session the persistence reads afresh.
  it('a replacement agent for the same session is served by its own runtime: DSH tears the old agent down before it unregisters it, and the replacement holds a new Session', async () => {
    const host = await hosts.boot()
    const sessionId = SessionId('ses-replacement')
    const old = await createFakeAgent(host, 'ses-replacement')
    const id = await createLoop(host, old.agent, 'outlive the agent', 1)
    await settle()

    // What the old agent's teardown has done by each registry edge, and when the replacement is announced.
    const seen = () => ({
      registered: host.ctx.agents.get(sessionId) === old.agent,
      live: host.ctx.sessions.get(sessionId) === old.agent.session,
      loopTools: host.ctx.tools.get('loop_create', old.agent) !== undefined,
    })
    const order: [string, object][] = []
    let replacement: Promise<FakeAgent> | undefined
    host.ctx.on('agent/disposed', ({ agent }) => {
      if (agent !== old.agent) return
      order.push(['agent/disposed', seen()])
      // The earliest a replacement can be asked for: the old agent has left the registry, its session is still live.
      replacement = resumeFakeAgent(host, 'ses-replacement')
    })
    host.ctx.on('session/disposed', (session) => {
      if (session === old.agent.session) order.push(['session/disposed', seen()])
    })
    host.ctx.on('agent/created', ({ agent }) => {
      order.push([
        'agent/created',
        { sameAgent: agent === old.agent, sameSession: agent.session === old.agent.session },
      ])
    })

    const disposal = old.handle.dispose()
    // While the old agent is torn down, DSH refuses a replacement on either path.
    await expect(resumeFakeAgent(host, 'ses-replacement')).rejects.toThrow(
      'cannot prepare session "ses-replacement" while it is live',
    )
    await expect(createFakeAgent(host, 'ses-replacement')).rejects.toThrow('session "ses-replacement" already exists')
    await disposal
    const next = await replacement!
    // The loop's cleanup for the old agent (its runtime-table entry and its tools) ran before the agent
    // left the registry, and the replacement is a new agent on a new Session.
    expect(order).toEqual([
      ['agent/disposed', { registered: false, live: true, loopTools: false }],
      ['session/disposed', { registered: false, live: false, loopTools: false }],
      ['agent/created', { sameAgent: false, sameSession: false }],
    ])
    expect(host.ctx.agents.get(sessionId)).toBe(next.agent)

    // The replacement's claims and pre-step checks reach its runtime.
    await advance(1000)
    expect(next.send).toHaveBeenCalledTimes(1)
    const [heartbeat, firstTarget] = next.send.mock.calls[0]!
    expect(firstTarget).toBe('next-turn')
    // DSH claims the heartbeat for a step of turn 1 while the agent runs: the next occurrence coalesces into it.
    next.setStatus('running')
    emitAgentEvent(host.ctx, next.agent, 'agent/inbox/claimed', { message: heartbeat, turn: 1 })
    const dispatches = loopChanges(next.agent).length
    await advance(1000)
    expect(next.send).toHaveBeenCalledTimes(1)
    expect(loopChanges(next.agent).slice(dispatches)).toMatchObject([{ operation: 'dispatch', id }])
    // A delete decided after the claim keeps the heartbeat out of the step DSH is about to enter.
    expect(await runCommand(host, next.agent, `/loop delete ${id}`)).toEqual({
      kind: 'success',
      text: `Deleted ${id}.`,
    })
    const decision = await agentEvents(host.ctx, next.agent).waterfall(
      'agent/pre-step',
      { messages: [heartbeat], turn: 1, step: 1, signal: signal() },
      () => Promise.resolve({ kind: 'enter', messages: [heartbeat] }),
    )
    expect(decision).toEqual({ kind: 'enter', messages: [] })
    expect(old.send).not.toHaveBeenCalled()
  })
})

describe('one-shot hosts (dsh --profile headless)', () => {
  const NOTE =
    'This is a one-shot run (dsh --profile headless): loops are saved in this session but nothing fires in this run; they start when the session is opened in a long-lived DSH (dsh web).'

  it('saves loops, tells the model, and never dispatches or arms a timer', async () => {
    const host = await hosts.boot({ oneShotHost: true })
    const fake = await createFakeAgent(host, 'ses-oneshot')
    const schema = host.ctx.tools.schemas(fake.agent).find((candidate) => candidate.name === 'loop_create')!
    expect(schema.description.endsWith(` ${NOTE}`)).toBe(true)
    const created = await runTool(host, fake.agent, 'loop_create', { prompt: 'later', time_in_seconds: 1 })
    expect(created.content).toEqual([{ type: 'text', text: `${JSON.stringify(outcomeOf(created))}\n${NOTE}` }])
    await advance(5000)
    expect(fake.send).not.toHaveBeenCalled()
    expect(vi.getTimerCount()).toBe(0)
    expect(loopChanges(fake.agent)).toEqual([
      {
        version: 1,
        operation: 'create',
        loop: { id: expect.any(String), prompt: 'later', time_in_seconds: 1, next_at: NOW + 1000 },
      },
    ])
  })
})

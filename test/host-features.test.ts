/**
 * What a user does with DSH's own features that `loop` must respect, in a real in-process host:
 * a delegated session (DSH's sub-agents mark theirs `origin: 'subagent'`) gets no loops, and an
 * archived session (DSH web's Archive, `@deepseek-ai/dsh-workspace`'s archive set) starts no turn.
 * The real sub-agent tools are driven in real `dsh web` (test/e2e/features.e2e.test.ts).
 */
import { SessionId } from '@deepseek-ai/dsh-session'
import type {} from '@deepseek-ai/dsh-workspace'
import { describe, expect, it } from 'vitest'
import {
  AGENT_OPTIONS,
  advance,
  createFakeAgent,
  createLoop,
  loopChanges,
  runCommand,
  settle,
  useHosts,
} from './support/host.ts'

const hosts = useHosts()

describe('a delegated session', () => {
  it('is a root without an owner, as a background sub-agent is, and gets no loop tools and no runtime', async () => {
    const host = await hosts.boot()
    const parent = await createFakeAgent(host, 'ses-manager')
    const { agent: child } = await host.ctx.agents.create({
      sessionId: SessionId('ses-background-child'),
      meta: { cwd: host.root, parentSession: parent.agent.id, origin: 'subagent', delegationDepth: 1 },
      agentOptions: AGENT_OPTIONS,
    })
    expect(host.ctx.agents.roots()).toContain(child)
    expect(host.ctx.tools.schemas(child).filter((schema) => schema.name.startsWith('loop_'))).toEqual([])
    expect(await runCommand(host, child, '/loop 3 check the build')).toMatchObject({ kind: 'error' })
    await advance(5000)
    expect(loopChanges(child)).toEqual([])
    // The user's own root beside it keeps its tools.
    expect(host.ctx.tools.schemas(parent.agent).map((schema) => schema.name)).toContain('loop_create')
  })
})

describe('an archived session', () => {
  it('starts no turn while another session keeps its cadence, and its loops stay in the log untouched', async () => {
    const host = await hosts.boot({ workspace: true })
    const archived = await createFakeAgent(host, 'ses-archived')
    const kept = await createFakeAgent(host, 'ses-kept')
    await createLoop(host, archived.agent, 'archived loop', 2)
    await createLoop(host, kept.agent, 'kept loop', 2)
    await advance(2000)
    expect([archived.send.mock.calls.length, kept.send.mock.calls.length]).toEqual([1, 1])

    await host.ctx.workspaceRegistry.archiveSession(SessionId('ses-archived'))
    await settle()
    const before = loopChanges(archived.agent)
    await advance(10_000)
    expect(archived.send).toHaveBeenCalledTimes(1)
    expect(kept.send).toHaveBeenCalledTimes(6)
    expect(loopChanges(archived.agent)).toEqual(before)
    // Its loops are still there: listed, and deletable.
    expect((await runCommand(host, archived.agent, '/loop list')).text).toMatch(/^1 active loop:/)
  })
})

/** Tool registration (registerLoopTools in src/tools.ts): a partial registration rolls back, dispose is idempotent. */
import { defineTool } from '@deepseek-ai/dsh-tools'
import { describe, expect, it } from 'vitest'
import { DEFAULT_LOOP_CONFIG } from '../src/config.ts'
import { LoopRuntime } from '../src/loop.ts'
import { registerLoopTools } from '../src/tools.ts'
import { createFakeAgent, settle, useHosts } from './support/host.ts'

const { boot } = useHosts()

describe('registration', () => {
  it('rolls back a partial registration and disposes idempotently', async () => {
    const host = await boot({ loop: false })
    const fake = await createFakeAgent(host, 'ses-rollback')
    // Something already owns loop_list in this agent's scope: the second registration fails.
    fake.agent.ctx.tools.register(
      defineTool({
        name: 'loop_list',
        description: 'taken',
        parameters: {},
        output: { schema: { type: 'string' }, render: () => [] },
        execute: async () => 'taken',
      }),
    )
    const runtime = new LoopRuntime(host.ctx, fake.agent, { oneShot: false })
    expect(() =>
      registerLoopTools(fake.agent.ctx, runtime, { config: () => DEFAULT_LOOP_CONFIG, oneShot: false }),
    ).toThrow()
    expect(host.ctx.tools.get('loop_create', fake.agent)).toBeUndefined()
    expect(host.ctx.tools.get('loop_list', fake.agent)?.description).toBe('taken')

    const other = await createFakeAgent(host, 'ses-rollback-2')
    const dispose = registerLoopTools(other.agent.ctx, new LoopRuntime(host.ctx, other.agent, { oneShot: false }), {
      config: () => DEFAULT_LOOP_CONFIG,
      oneShot: false,
    })
    dispose()
    dispose()
    expect(host.ctx.tools.get('loop_create', other.agent)).toBeUndefined()
    await settle()
    await runtime.dispose()
  })
})

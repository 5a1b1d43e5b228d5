/** Configured bounds (src/config.ts) at the real tool boundary: defaults, the plugin row, a refused row, and the live DSH settings document. */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createFakeAgent, loopChanges, runTool, tempDir, useHosts } from './support/host.ts'

const { boot } = useHosts()

const TOO_MANY = (active: number, limit: number) =>
  `This session already has ${active} active ${active === 1 ? 'loop' : 'loops'}; the limit is ${limit} (plugin setting maxLoopsPerSession). Delete one with loop_delete (or /loop delete <id>) first.`

describe('configured bounds', () => {
  it('defaults to 20 loops per session and 4000 characters per prompt', async () => {
    const host = await boot()
    const fake = await createFakeAgent(host, 'ses-defaults')
    for (let index = 0; index < 20; index += 1) {
      const result = await runTool(host, fake.agent, 'loop_create', { prompt: `p${index}`, time_in_seconds: 3600 })
      expect(result.isError).toBe(false)
    }
    const refused = await runTool(host, fake.agent, 'loop_create', { prompt: 'one more', time_in_seconds: 3600 })
    expect(refused.isError ? refused.error : undefined).toEqual({
      message: TOO_MANY(20, 20),
      info: { name: 'LoopError', code: 'too_many_loops' },
    })
    const long = await runTool(host, fake.agent, 'loop_create', { prompt: 'x'.repeat(1_000_000), time_in_seconds: 1 })
    expect(long.isError ? long.error.message : undefined).toBe(
      'prompt is 1000000 characters; the limit is 4000 (plugin setting maxPromptLength). Shorten it, or point to a file the agent can read.',
    )
    expect(loopChanges(fake.agent)).toHaveLength(20)
  })

  it('reads the bounds from the plugin row config and appends nothing when refusing', async () => {
    const host = await boot({ loopConfig: { maxLoopsPerSession: 2, maxPromptLength: 10 } })
    const fake = await createFakeAgent(host, 'ses-row')
    await runTool(host, fake.agent, 'loop_create', { prompt: 'a', time_in_seconds: 60 })
    await runTool(host, fake.agent, 'loop_create', { prompt: 'b', time_in_seconds: 60 })
    const refused = await runTool(host, fake.agent, 'loop_create', { prompt: 'c', time_in_seconds: 60 })
    expect(refused.isError ? refused.error.message : undefined).toBe(TOO_MANY(2, 2))
    const long = await runTool(host, fake.agent, 'loop_create', { prompt: 'x'.repeat(11), time_in_seconds: 60 })
    expect(long.isError ? long.error.message : undefined).toBe(
      'prompt is 11 characters; the limit is 10 (plugin setting maxPromptLength). Shorten it, or point to a file the agent can read.',
    )
    expect(loopChanges(fake.agent).map((change) => (change as { operation: string }).operation)).toEqual([
      'create',
      'create',
    ])
  })

  it('refuses an invalid row config at load', async () => {
    const host = await boot({ loop: false })
    const loopPlugin = await import('../src/index.ts')
    await expect(host.ctx.plugin(loopPlugin, { maxLoopsPerSession: 0 } as never)).rejects.toThrow()
    expect(host.ctx.tools.schemas().map((schema) => schema.name)).not.toContain('loop_create')
  })

  it('follows the loop section of the DSH settings document, live', async () => {
    const settingsPath = join(tempDir('loop-settings-'), 'settings.yaml')
    writeFileSync(settingsPath, 'loop:\n  maxLoopsPerSession: 1\n')
    const host = await boot({ settingsPath })
    const fake = await createFakeAgent(host, 'ses-settings')
    await runTool(host, fake.agent, 'loop_create', { prompt: 'first', time_in_seconds: 60 })
    const refused = await runTool(host, fake.agent, 'loop_create', { prompt: 'second', time_in_seconds: 60 })
    expect(refused.isError ? refused.error.message : undefined).toBe(TOO_MANY(1, 1))
    const settings = host.ctx.get('settings') as { update(ns: string, patch: object): Promise<void> }
    await settings.update('loop', { maxLoopsPerSession: 2 })
    const allowed = await runTool(host, fake.agent, 'loop_create', { prompt: 'second', time_in_seconds: 60 })
    expect(allowed.isError).toBe(false)
  })
})

/**
 * Beside another plugin that holds `/loop` (the package dsh-loop implements the same
 * specification with the same command, tools and records), `loop` stays inactive with one line
 * naming it, on the DSH it supports and on one it does not (src/index.ts, src/host-support.ts).
 */
import type { Context } from '@deepseek-ai/cordis'
import { describe, expect, it, vi } from 'vitest'
import * as loopPlugin from '../src/index.ts'
import { OTHER_LOOP_PLUGIN_MESSAGE, isLoopCommandTaken } from '../src/host-support.ts'
import type { PluginModule } from '../harness/compose-host.ts'
import { createFakeAgent, runCommand, useHosts } from './support/host.ts'
import { hostWithVersions } from './support/later-dsh.ts'

/** A stand-in for the other implementation: it registers `/loop` first, as dsh-loop does. */
const otherLoopPlugin = {
  name: 'dsh-loop',
  inject: ['commands'],
  apply(ctx: Context) {
    ctx.commands.register({
      name: 'loop',
      description: 'the other implementation',
      handler: () => ({ kind: 'success', text: 'answered by dsh-loop' }),
    })
  },
}

const hosts = useHosts()

/** How many hooks the host holds for the step events `loop` listens to (Cordis's own table). */
const stepHooks = (ctx: Context) => {
  const hooks = (ctx as unknown as { events: { _hooks: Record<string, unknown[] | undefined> } }).events._hooks
  return (hooks['agent/pre-step']?.length ?? 0) + (hooks['agent/inbox/claimed']?.length ?? 0)
}

describe('another plugin holding /loop', () => {
  it('leaves loop inactive with one line naming it: no tools, no projection, no step hooks, its /loop answers', async () => {
    const host = await hosts.boot({ loop: false })
    await host.ctx.plugin(otherLoopPlugin as PluginModule)
    const before = stepHooks(host.ctx)
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {})
    const loaded = host.ctx.plugin(loopPlugin as PluginModule)
    // Its hooks are in place a microtask after the load begins, and go once it knows it stays inactive.
    await Promise.resolve()
    expect(stepHooks(host.ctx)).toBe(before + 2)
    await loaded
    expect(stepHooks(host.ctx)).toBe(before)
    expect(errors.mock.calls).toEqual([[`loop: ${OTHER_LOOP_PLUGIN_MESSAGE}`]])
    errors.mockRestore()
    const fake = await createFakeAgent(host, 'ses-beside-dsh-loop')
    expect(host.ctx.tools.schemas(fake.agent).map((schema) => schema.name)).not.toContain('loop_create')
    expect(host.ctx.sessionProjections.snapshot(fake.agent.session).values).not.toHaveProperty('loop')
    expect(await runCommand(host, fake.agent, '/loop list')).toEqual({ kind: 'success', text: 'answered by dsh-loop' })
  })

  it('on a DSH loop does not run on, says why once and leaves the other /loop answering', async () => {
    const host = await hosts.boot({ loop: false })
    await host.ctx.plugin(otherLoopPlugin as PluginModule)
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {})
    const argv = process.argv[1]
    process.argv[1] = hostWithVersions({ '@deepseek-ai/dsh-session': '0.1.7-rc.2' })
    const before = stepHooks(host.ctx)
    try {
      await host.ctx.plugin(loopPlugin as PluginModule)
    } finally {
      process.argv[1] = argv!
    }
    expect(stepHooks(host.ctx)).toBe(before)
    expect(errors.mock.calls).toEqual([
      [expect.stringMatching(/^loop: loop is inactive: it is built and tested for DSH 0\.1\.0-rc\.8/)],
    ])
    errors.mockRestore()
    const fake = await createFakeAgent(host, 'ses-beside-dsh-loop')
    expect(await runCommand(host, fake.agent, '/loop list')).toEqual({ kind: 'success', text: 'answered by dsh-loop' })
  })

  it('does not take any other failure to register /loop for the other implementation', async () => {
    for (const entry of [undefined, hostWithVersions({ '@deepseek-ai/dsh-session': '0.1.7-rc.2' })]) {
      const host = await hosts.boot({ loop: false })
      vi.spyOn(host.ctx.commands, 'register').mockImplementation(() => {
        throw new Error('the command runtime is closing')
      })
      const errors = vi.spyOn(console, 'error').mockImplementation(() => {})
      const argv = process.argv[1]
      if (entry !== undefined) process.argv[1] = entry
      try {
        await expect(host.ctx.plugin(loopPlugin as PluginModule)).rejects.toThrow('the command runtime is closing')
      } finally {
        process.argv[1] = argv!
        vi.restoreAllMocks()
      }
      expect(errors).not.toHaveBeenCalledWith(`loop: ${OTHER_LOOP_PLUGIN_MESSAGE}`)
    }
  })

  it('tells the refusal of /loop from any other failure', () => {
    expect(isLoopCommandTaken(new Error('command "loop" is already registered (for a per-agent variant, …)'))).toBe(
      true,
    )
    expect(isLoopCommandTaken(new Error('command "looper" is already registered'))).toBe(false)
    expect(isLoopCommandTaken('command "loop" is already registered')).toBe(false)
  })
})

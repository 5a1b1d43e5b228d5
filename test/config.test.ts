/**
 * The `loop` settings section when the user's settings document holds an
 * invalid value: the pure per-field judgement, and a real in-process host with
 * DSH's file settings provider watching a real settings.yaml (the section stays
 * registered, one warning names the setting, the last valid value applies, a
 * write of another field lands, and the fixed file applies while running).
 * Also the configured bounds at the real tool boundary: the defaults, the
 * plugin row, a refused row, and the live DSH settings document.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { DEFAULT_LOOP_CONFIG, describeInvalidSetting, resolveLoopSettings } from '../src/config.ts'
import * as loopPlugin from '../src/index.ts'
import {
  advance,
  bootHost,
  createFakeAgent,
  failureMessageOf,
  failureOf,
  loopChanges,
  outcomeOf,
  runTool,
  sentTexts,
  useHosts,
  type Host,
} from './support/host.ts'
import { heartbeatText } from './support/heartbeat-xml.ts'
import { tempDir } from '../harness/temp-dir.ts'

const hosts: Host[] = []
afterEach(async () => {
  for (const host of hosts.splice(0)) await host.dispose()
})

const TOO_MANY = (active: number, limit: number) =>
  `This session already has ${active} active ${active === 1 ? 'loop' : 'loops'}; the limit is ${limit} (plugin setting maxLoopsPerSession). Delete one with loop_delete (or /loop delete <id>) first.`

const ONBOARDING = 'ui-onboarding:\n  welcomeNoticeVersion: 2026-08-13.1\n'

describe('resolveLoopSettings', () => {
  const lastValid = { maxLoopsPerSession: 7, maxPromptLength: 99 }

  it('applies every valid field and resolves an absent or empty one to its default', () => {
    expect(resolveLoopSettings({ maxLoopsPerSession: 1000, maxPromptLength: 1 }, lastValid)).toEqual({
      config: { maxLoopsPerSession: 1000, maxPromptLength: 1 },
      invalid: [],
    })
    expect(resolveLoopSettings({ maxLoopsPerSession: null }, lastValid)).toEqual({
      config: DEFAULT_LOOP_CONFIG,
      invalid: [],
    })
    expect(resolveLoopSettings(undefined, lastValid)).toEqual({ config: DEFAULT_LOOP_CONFIG, invalid: [] })
    // A field an earlier build had (resumeOnStart) is neither applied nor warned about.
    expect(resolveLoopSettings({ maxLoopsPerSession: 3, resumeOnStart: false }, lastValid)).toEqual({
      config: { maxLoopsPerSession: 3, maxPromptLength: 4000 },
      invalid: [],
    })
  })

  it('keeps the last valid value of each invalid field and names it', () => {
    for (const value of [0, 1001, 5000, -1, 2.5, '5', true, [3], { n: 3 }]) {
      expect(
        resolveLoopSettings({ maxLoopsPerSession: value, maxPromptLength: 50 }, lastValid),
        JSON.stringify(value),
      ).toEqual({
        config: { maxLoopsPerSession: 7, maxPromptLength: 50 },
        invalid: [{ field: 'maxLoopsPerSession', value, accepts: 'a whole number from 1 to 1000', kept: 7 }],
      })
    }
    expect(resolveLoopSettings({ maxLoopsPerSession: 0, maxPromptLength: 100_001 }, lastValid)).toEqual({
      config: lastValid,
      invalid: [
        { field: 'maxLoopsPerSession', value: 0, accepts: 'a whole number from 1 to 1000', kept: 7 },
        { field: 'maxPromptLength', value: 100_001, accepts: 'a whole number from 1 to 100000', kept: 99 },
      ],
    })
  })

  it('words the warning with the setting, the stored value, the range and the value kept', () => {
    expect(
      describeInvalidSetting({
        field: 'maxLoopsPerSession',
        value: 5000,
        accepts: 'a whole number from 1 to 1000',
        kept: 20,
      }),
    ).toBe(
      'settings: loop.maxLoopsPerSession is 5000, but it accepts a whole number from 1 to 1000; keeping 20 (its last valid value) until the settings document holds a valid one',
    )
    expect(
      describeInvalidSetting({
        field: 'maxPromptLength',
        value: '5',
        accepts: 'a whole number from 1 to 100000',
        kept: 4000,
      }),
    ).toBe(
      'settings: loop.maxPromptLength is "5", but it accepts a whole number from 1 to 100000; keeping 4000 (its last valid value) until the settings document holds a valid one',
    )
  })
})

/** Poll until `check` holds (a file watcher reports on its own time), or fail after a generous deadline. */
async function until(what: string, check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

interface SettingsService {
  describe(): { ns: string; user?: unknown }[]
  get(ns: string): unknown
  mutate(ns: string, ops: { op: 'set'; path: string[]; value: unknown }[]): Promise<void>
}

/** A host with a watched settings.yaml holding `text`, the loop plugin loaded with warnings captured. */
async function bootWithSettings(text: string, row?: Record<string, unknown>) {
  const settingsPath = join(tempDir('loop-settings-'), 'settings.yaml')
  writeFileSync(settingsPath, text)
  const host = await bootHost({ settingsPath, settingsWatch: true, loop: false })
  hosts.push(host)
  const warnings: string[] = []
  host.ctx.logger.exporter({
    levels: { default: 3 },
    export: (message) =>
      void (message.name === 'loop' && message.type === 'warn' && warnings.push(String(message.args[0]))),
  })
  await host.ctx.plugin(loopPlugin, row as never)
  const settings = host.ctx.get('settings') as unknown as SettingsService
  const loopValue = () => settings.get('loop') as Record<string, unknown> | undefined
  return { host, settingsPath, warnings, settings, loopValue }
}

describe('an invalid loop section in the settings document', () => {
  it('at start: registers the section, warns once, applies the last valid value, accepts another field, and follows the fixed file', async () => {
    const { host, settingsPath, warnings, settings, loopValue } = await bootWithSettings(
      `${ONBOARDING}loop:\n  maxLoopsPerSession: 0\n`,
      {
        maxLoopsPerSession: 2,
      },
    )
    expect(warnings).toEqual([
      'settings: loop.maxLoopsPerSession is 0, but it accepts a whole number from 1 to 1000; keeping 2 (its last valid value) until the settings document holds a valid one',
    ])
    // The namespace is served (the Settings card's source), holding the stored value as it is.
    expect(settings.describe().find((entry) => entry.ns === 'loop')?.user).toEqual({ maxLoopsPerSession: 0 })
    expect(loopValue()).toEqual({ maxLoopsPerSession: 0, maxPromptLength: 4000 })

    const fake = await createFakeAgent(host, 'ses-invalid-start')
    expect((await runTool(host, fake.agent, 'loop_create', { prompt: 'a', time_in_seconds: 60 })).isError).toBe(false)
    expect((await runTool(host, fake.agent, 'loop_create', { prompt: 'b', time_in_seconds: 60 })).isError).toBe(false)
    const refused = await runTool(host, fake.agent, 'loop_create', { prompt: 'c', time_in_seconds: 60 })
    expect(failureMessageOf(refused)).toBe(TOO_MANY(2, 2))

    // Saving another field is not refused because of the invalid one, and applies.
    await settings.mutate('loop', [{ op: 'set', path: ['maxPromptLength'], value: 10 }])
    const long = await runTool(host, fake.agent, 'loop_create', { prompt: 'x'.repeat(11), time_in_seconds: 60 })
    expect(failureMessageOf(long)).toBe(
      'prompt is 11 characters (UTF-16 code units); the limit is 10 (plugin setting maxPromptLength). Shorten it, or point to a file the agent can read.',
    )
    // The same invalid value is not warned about twice.
    expect(warnings).toHaveLength(1)

    // Fixed while running: the file applies again.
    writeFileSync(settingsPath, `${ONBOARDING}loop:\n  maxLoopsPerSession: 3\n`)
    await until('the fixed section', () => loopValue()?.maxLoopsPerSession === 3)
    expect((await runTool(host, fake.agent, 'loop_create', { prompt: 'c', time_in_seconds: 60 })).isError).toBe(false)
    const fourth = await runTool(host, fake.agent, 'loop_create', { prompt: 'd', time_in_seconds: 60 })
    expect(failureMessageOf(fourth)).toBe(TOO_MANY(3, 3))
    expect(warnings).toHaveLength(1)
  })

  it('while running: keeps the last valid value (not the default), warns once per distinct invalid value, and clears on a fix', async () => {
    const { host, settingsPath, warnings, loopValue } = await bootWithSettings(
      `${ONBOARDING}loop:\n  maxLoopsPerSession: 1\n`,
    )
    expect(warnings).toEqual([])
    const fake = await createFakeAgent(host, 'ses-invalid-edit')
    expect((await runTool(host, fake.agent, 'loop_create', { prompt: 'a', time_in_seconds: 60 })).isError).toBe(false)

    writeFileSync(settingsPath, `${ONBOARDING}loop:\n  maxLoopsPerSession: 5000\n`)
    await until('the invalid edit', () => loopValue()?.maxLoopsPerSession === 5000 && warnings.length === 1)
    expect(warnings).toEqual([
      'settings: loop.maxLoopsPerSession is 5000, but it accepts a whole number from 1 to 1000; keeping 1 (its last valid value) until the settings document holds a valid one',
    ])
    const refused = await runTool(host, fake.agent, 'loop_create', { prompt: 'b', time_in_seconds: 60 })
    expect(failureMessageOf(refused)).toBe(TOO_MANY(1, 1))

    writeFileSync(settingsPath, `${ONBOARDING}loop:\n  maxLoopsPerSession: '2'\n`)
    await until('the second invalid edit', () => loopValue()?.maxLoopsPerSession === '2' && warnings.length === 2)
    expect(warnings.slice(1)).toEqual([
      'settings: loop.maxLoopsPerSession is "2", but it accepts a whole number from 1 to 1000; keeping 1 (its last valid value) until the settings document holds a valid one',
    ])

    writeFileSync(settingsPath, `${ONBOARDING}loop:\n  maxLoopsPerSession: 2\n`)
    await until('the fix', () => loopValue()?.maxLoopsPerSession === 2)
    expect((await runTool(host, fake.agent, 'loop_create', { prompt: 'b', time_in_seconds: 60 })).isError).toBe(false)
    // Broken again with the value warned about before: a new episode, so a new warning.
    writeFileSync(settingsPath, `${ONBOARDING}loop:\n  maxLoopsPerSession: 5000\n`)
    await until('the repeated invalid edit', () => loopValue()?.maxLoopsPerSession === 5000 && warnings.length === 3)
    expect(warnings.slice(2)).toEqual([
      'settings: loop.maxLoopsPerSession is 5000, but it accepts a whole number from 1 to 1000; keeping 2 (its last valid value) until the settings document holds a valid one',
    ])
  })
})

describe('configured bounds', () => {
  const { boot } = useHosts()

  it('defaults to 20 loops per session and 4000 characters per prompt', async () => {
    const host = await boot()
    const fake = await createFakeAgent(host, 'ses-defaults')
    for (let index = 0; index < 20; index += 1) {
      const result = await runTool(host, fake.agent, 'loop_create', { prompt: `p${index}`, time_in_seconds: 3600 })
      expect(result.isError).toBe(false)
    }
    const refused = await runTool(host, fake.agent, 'loop_create', { prompt: 'one more', time_in_seconds: 3600 })
    expect(failureOf(refused)).toEqual({
      message: TOO_MANY(20, 20),
      info: { name: 'LoopError', code: 'too_many_loops' },
    })
    const long = await runTool(host, fake.agent, 'loop_create', { prompt: 'x'.repeat(1_000_000), time_in_seconds: 1 })
    expect(failureMessageOf(long)).toBe(
      'prompt is 1000000 characters (UTF-16 code units); the limit is 4000 (plugin setting maxPromptLength). Shorten it, or point to a file the agent can read.',
    )
    expect(loopChanges(fake.agent)).toHaveLength(20)
  })

  it('holds a runaway model to 20 loops: a thousand creates, twenty heartbeats a second', async () => {
    const host = await boot()
    const fake = await createFakeAgent(host, 'ses-runaway')
    const codes = new Map<string, number>()
    for (let index = 0; index < 1000; index += 1) {
      const result = await runTool(host, fake.agent, 'loop_create', { prompt: `check ${index}`, time_in_seconds: 1 })
      const code = result.isError ? String(result.error.info?.code) : 'created'
      codes.set(code, (codes.get(code) ?? 0) + 1)
    }
    expect(Object.fromEntries(codes)).toEqual({ created: 20, too_many_loops: 980 })
    await advance(1000)
    // Without the bound: a thousand model turns every second, one per loop.
    expect(fake.send).toHaveBeenCalledTimes(20)
  })

  it('keeps a pasted megabyte out of every heartbeat: refused, while the longest accepted prompt makes a heartbeat of about 4 kB', async () => {
    const host = await boot()
    const fake = await createFakeAgent(host, 'ses-pasted')
    const pasted = await runTool(host, fake.agent, 'loop_create', { prompt: 'x'.repeat(1_000_000), time_in_seconds: 1 })
    expect(failureOf(pasted)).toMatchObject({ info: { name: 'LoopError', code: 'prompt_too_long' } })
    const longest = await runTool(host, fake.agent, 'loop_create', { prompt: 'y'.repeat(4000), time_in_seconds: 1 })
    expect(failureOf(longest)).toBe('succeeded')
    await advance(3000)
    // Without the bound: a megabyte of model input in every heartbeat, once a second.
    const heartbeat = heartbeatText((outcomeOf(longest) as { id: string }).id, 'y'.repeat(4000))
    expect(heartbeat).toHaveLength(4079)
    expect(sentTexts(fake)).toEqual([heartbeat, heartbeat, heartbeat])
  })

  it('reads the bounds from the plugin row config and appends nothing when refusing', async () => {
    const host = await boot({ loopConfig: { maxLoopsPerSession: 2, maxPromptLength: 10 } })
    const fake = await createFakeAgent(host, 'ses-row')
    await runTool(host, fake.agent, 'loop_create', { prompt: 'a', time_in_seconds: 60 })
    await runTool(host, fake.agent, 'loop_create', { prompt: 'b', time_in_seconds: 60 })
    const refused = await runTool(host, fake.agent, 'loop_create', { prompt: 'c', time_in_seconds: 60 })
    expect(failureMessageOf(refused)).toBe(TOO_MANY(2, 2))
    const long = await runTool(host, fake.agent, 'loop_create', { prompt: 'x'.repeat(11), time_in_seconds: 60 })
    expect(failureMessageOf(long)).toBe(
      'prompt is 11 characters (UTF-16 code units); the limit is 10 (plugin setting maxPromptLength). Shorten it, or point to a file the agent can read.',
    )
    expect(loopChanges(fake.agent).map((change) => change.operation)).toEqual(['create', 'create'])
  })

  it('refuses an invalid row config at load', async () => {
    const host = await boot({ loop: false })
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
    expect(failureMessageOf(refused)).toBe(TOO_MANY(1, 1))
    const settings = host.ctx.get('settings') as { update(ns: string, patch: object): Promise<void> }
    await settings.update('loop', { maxLoopsPerSession: 2 })
    const allowed = await runTool(host, fake.agent, 'loop_create', { prompt: 'second', time_in_seconds: 60 })
    expect(allowed.isError).toBe(false)
  })
})

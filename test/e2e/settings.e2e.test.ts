/**
 * An invalid `loop` section in `$DSH_HOME/settings.yaml` when `dsh web` starts:
 * the host log names the setting, the value and the range, the section is
 * still registered (so the Settings card can show and fix it), the last valid
 * value (here the default) is the limit in force, and fixing the file while
 * DSH runs applies the new limit through `/loop` without a restart.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect } from 'vitest'
import { call, createSession, runCommand, waitFor } from '../../harness/dsh-stack.ts'
import { test } from './rig.ts'

const TOO_MANY = (active: number, limit: number) =>
  `This session already has ${active} active loops; the limit is ${limit} (plugin setting maxLoopsPerSession). Delete one with loop_delete (or /loop delete <id>) first.`

const WARNING =
  'settings: loop.maxLoopsPerSession is 0, but it accepts a whole number from 1 to 1000; keeping 20 (its last valid value) until the settings document holds a valid one'

/** The `loop` namespace as `settings.describe` serves it to the Settings surface. */
async function loopNamespace(url: string): Promise<{ value: unknown; user?: unknown } | undefined> {
  const described = await call<{ namespaces: { ns: string; value: unknown; user?: unknown }[] }>(
    url,
    'settings.describe',
    {},
  )
  return described.namespaces.find((entry) => entry.ns === 'loop')
}

describe('an invalid loop settings section at start', () => {
  test('warns once, stays registered, applies the last valid limit, and follows the file once it is fixed', async ({
    rig,
  }) => {
    const r = await rig({}, { start: false })
    const settingsFile = join(r.home, 'settings.yaml')
    writeFileSync(settingsFile, `${readFileSync(settingsFile, 'utf8')}loop:\n  maxLoopsPerSession: 0\n`)
    r.plugin('add')
    // DSH web exports no plugin log; the plugin prints its warnings on stderr itself (src/report.ts).
    await r.start()

    const url = r.url
    await waitFor('the warning in the host log', () =>
      r.web.output().includes(`loop: ${WARNING}\n`) ? true : undefined,
    )
    expect(r.web.output().split(WARNING)).toHaveLength(2)
    expect(await loopNamespace(url)).toEqual({
      ns: 'loop',
      value: { maxLoopsPerSession: 0, maxPromptLength: 4000 },
      user: { maxLoopsPerSession: 0 },
      base: expect.anything(),
      schema: expect.anything(),
      applies: 'live',
      secrets: [],
      revision: expect.any(Number),
    })

    // The limit in force is the last valid value: the default 20.
    const sessionId = await createSession(url)
    for (let index = 1; index <= 20; index += 1) {
      const reply = await runCommand(url, sessionId, `/loop 3600 limit probe ${index}`)
      expect(reply.kind, reply.text).toBe('success')
    }
    expect(await runCommand(url, sessionId, '/loop 3600 one too many')).toEqual({
      kind: 'error',
      text: TOO_MANY(20, 20),
    })

    // Fixed while DSH runs: the new limit applies, no restart.
    writeFileSync(
      settingsFile,
      readFileSync(settingsFile, 'utf8').replace('maxLoopsPerSession: 0', 'maxLoopsPerSession: 21'),
    )
    await waitFor(
      'the fixed section',
      async () =>
        ((await loopNamespace(url))?.value as { maxLoopsPerSession?: number } | undefined)?.maxLoopsPerSession === 21 ||
        undefined,
    )
    expect((await runCommand(url, sessionId, '/loop 3600 now allowed')).kind).toBe('success')
    expect(await runCommand(url, sessionId, '/loop 3600 one too many')).toEqual({
      kind: 'error',
      text: TOO_MANY(21, 21),
    })
    expect(r.web.output().split(WARNING)).toHaveLength(2)
  })
})

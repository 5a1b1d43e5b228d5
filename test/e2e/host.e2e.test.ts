/**
 * The host check in a real `dsh web`: the rc.8 CLI run from a copy whose package tree holds
 * `@deepseek-ai/dsh-session` with its metadata reporting 0.1.7-rc.2 (the real package's code,
 * another version), as a user's DSH would after an upgrade of one package. DSH boots and
 * answers, and `loop` stays inactive; the same steps on the plain rc.8 CLI work.
 */
import { cpSync, mkdirSync, readFileSync, readdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { describe, expect } from 'vitest'
import { DSH_ENTRY, PROJECT, createSession, prompt, runCommand, waitFor } from '../../harness/dsh-stack.ts'
import { REPLY, events, test, type Rig } from './rig.ts'

/** What `loop` prints at load on that host. */
const REFUSAL =
  'loop: loop is inactive: it is built and tested for DSH 0.1.0-rc.8 (session format 0), and this DSH has ' +
  '@deepseek-ai/dsh-session 0.1.7-rc.2. It adds no tools and sends no heartbeats here, and leaves every saved loop ' +
  'in its session untouched; run DSH 0.1.0-rc.8, or a loop release built for this DSH.'

/**
 * A copy of the CLI package beside links to each of its real dependencies, and one edited
 * package: `@deepseek-ai/dsh-session` with the real `lib` and a `package.json` naming 0.1.7-rc.2.
 * @param home - the test's home; the tree goes under it.
 * @returns the copied CLI entry.
 */
function cliWithLaterSession(home: string): string {
  const cli = dirname(dirname(realpathSync(DSH_ENTRY)))
  const scope = dirname(cli)
  const tree = join(home, 'later-dsh', 'node_modules')
  mkdirSync(join(tree, '@deepseek-ai'), { recursive: true })
  for (const name of readdirSync(dirname(scope))) {
    if (name === '@deepseek-ai') continue
    symlinkSync(join(dirname(scope), name), join(tree, name))
  }
  for (const name of readdirSync(scope)) {
    if (name !== basename(cli)) symlinkSync(join(scope, name), join(tree, '@deepseek-ai', name))
  }
  const copy = join(tree, '@deepseek-ai', 'dsh')
  for (const part of ['package.json', 'lib', 'config']) cpSync(join(cli, part), join(copy, part), { recursive: true })
  const session = realpathSync(join(PROJECT, 'node_modules', '@deepseek-ai', 'dsh-session'))
  const edited = join(tree, '@deepseek-ai', 'dsh-session')
  mkdirSync(edited)
  const manifest = JSON.parse(readFileSync(join(session, 'package.json'), 'utf8')) as Record<string, unknown>
  writeFileSync(join(edited, 'package.json'), JSON.stringify({ ...manifest, version: '0.1.7-rc.2' }))
  symlinkSync(join(session, 'lib'), join(edited, 'lib'))
  return join(copy, 'lib', 'bin.js')
}

/** The tool names of each request the model received. */
function toolsRequested(rig: Rig): string[][] {
  return rig.model.requests.map((request) =>
    ((request.body as { tools?: { function: { name: string } }[] }).tools ?? []).map((tool) => tool.function.name),
  )
}

/** Prompt a session and wait for the mock model's answer in its log. */
async function promptAndAnswer(rig: Rig, sessionId: string): Promise<void> {
  await prompt(rig.url, sessionId, 'hello')
  await waitFor('the answer', async () =>
    (await events(rig.url, sessionId)).some(
      (event) => event.type === 'assistant/message' && JSON.stringify(event.data).includes(REPLY),
    )
      ? true
      : undefined,
  )
}

describe('a DSH loop was not built for', () => {
  test('boots, lists no loop tool, /loop creates nothing, nothing is appended, and a prompt is answered', async ({
    rig,
  }) => {
    const r = await rig({}, { start: false })
    r.plugin('add')
    await r.start([], cliWithLaterSession(r.home))
    await waitFor('the refusal in the host output', () => (r.web.output().includes(REFUSAL) ? true : undefined))
    expect(r.web.output().split(REFUSAL)).toHaveLength(2)

    const sessionId = await createSession(r.url)
    expect(await runCommand(r.url, sessionId, '/loop 2 check the build')).toMatchObject({
      kind: 'error',
      text: REFUSAL.slice('loop: '.length),
    })
    await promptAndAnswer(r, sessionId)
    const log = await events(r.url, sessionId)
    expect(log.filter((event) => event.type === 'loop/change')).toEqual([])
    expect(toolsRequested(r).length).toBeGreaterThan(0)
    expect(
      toolsRequested(r)
        .flat()
        .filter((name) => name.startsWith('loop_')),
    ).toEqual([])
  })

  test('the same steps on rc.8: the loop tools are listed, /loop creates, and a prompt is answered', async ({
    rig,
  }) => {
    const r = await rig()
    expect(r.web.output()).not.toContain('loop is inactive')
    const sessionId = await createSession(r.url)
    const reply = await runCommand(r.url, sessionId, '/loop 3600 check the build')
    expect(reply.text).toMatch(/^Created loop_[0-9a-f]{8}: every 1h, next in 1h\. Prompt: check the build$/)
    await promptAndAnswer(r, sessionId)
    const log = await events(r.url, sessionId)
    expect(log.filter((event) => event.type === 'loop/change')).toHaveLength(1)
    expect(toolsRequested(r)[0]).toEqual(expect.arrayContaining(['loop_create', 'loop_list', 'loop_delete']))
  })
})

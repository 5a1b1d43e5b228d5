/**
 * The host check (src/host-support.ts, src/host.ts, and its use in src/index.ts): `loop` runs
 * only on the DSH it is tested against. A later DSH is one real rc.8 host with one fact changed
 * as a later release has it: the host's `@deepseek-ai/dsh-session` metadata reports 0.1.7-rc.2.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import * as sessionModule from '@deepseek-ai/dsh-session'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { inspectHost } from '../src/host.ts'
import { DSH_PACKAGES, SUPPORTED_DSH_VERSION, judgeHost, type HostFacts } from '../src/host-support.ts'
import {
  createLoopByCommand,
  createRealAgent,
  loopChanges,
  resumeFakeAgent,
  runCommand,
  sendTask,
  until,
  useMockModel,
} from './support/host.ts'
import { hostWithVersions } from './support/later-dsh.ts'
import { tempDir } from '../harness/temp-dir.ts'

/** The facts of the real rc.8 host. */
const RC8: HostFacts = {
  packages: DSH_PACKAGES.map((name) => ({ name, version: '0.1.0-rc.8' })),
  sessionFormat: 0,
}

/** The host check's message for a host whose dsh-session reports 0.1.7-rc.2. */
const LATER_DSH_MESSAGE =
  'loop is inactive: it is built and tested for DSH 0.1.0-rc.8 (session format 0), and this DSH has ' +
  '@deepseek-ai/dsh-session 0.1.7-rc.2. It adds no tools and sends no heartbeats here, and leaves every saved loop ' +
  'in its session untouched; run DSH 0.1.0-rc.8, or a loop release built for this DSH.'

describe('judgeHost', () => {
  it('supports exactly the tested release and its session format', () => {
    expect(judgeHost(RC8)).toEqual({ supported: true })
  })

  it('names every package and the session format that differ', () => {
    const later: HostFacts = {
      packages: RC8.packages.map((dsh) =>
        dsh.name === '@deepseek-ai/dsh-session' ? { ...dsh, version: '0.1.7-rc.2' } : dsh,
      ),
      sessionFormat: 0,
    }
    expect(judgeHost(later)).toEqual({ supported: false, message: LATER_DSH_MESSAGE })
    const v4 = judgeHost({ packages: [{ name: '@deepseek-ai/dsh-tools', version: '0.2.0' }], sessionFormat: 4 })
    expect(v4).toMatchObject({ supported: false })
    expect(v4.supported ? '' : v4.message).toContain('this DSH has @deepseek-ai/dsh-tools 0.2.0, session format 4.')
  })

  it('refuses a host whose version or session format cannot be read', () => {
    const unknown = judgeHost({
      packages: [{ name: '@deepseek-ai/dsh-agent', version: undefined }],
      sessionFormat: undefined,
    })
    expect(unknown.supported ? '' : unknown.message).toContain(
      'this DSH has @deepseek-ai/dsh-agent (not found), session format (not exported).',
    )
  })

  it('is the rule the peer ranges state: every @deepseek-ai/dsh* peer is exactly the supported release', () => {
    const manifest = JSON.parse(readFileSync('package.json', 'utf8')) as { peerDependencies: Record<string, string> }
    const dshPeers = Object.entries(manifest.peerDependencies).filter(([name]) => name.startsWith('@deepseek-ai/dsh'))
    expect(dshPeers).toEqual(DSH_PACKAGES.map((name) => [name, SUPPORTED_DSH_VERSION]))
  })
})

describe('inspectHost', () => {
  it('reads the rc.8 facts of this repository, from the host entry or, without one, its own resolution', async () => {
    const fromEntry = await inspectHost(join(process.cwd(), 'package.json'))
    expect(fromEntry).toEqual({ facts: RC8, hostSessionModule: sessionModule })
    expect(await inspectHost(undefined)).toEqual({ facts: RC8, hostSessionModule: undefined })
  })

  it("reads the host's own package metadata where the entry sees it", async () => {
    const entry = hostWithVersions({ '@deepseek-ai/dsh-session': '0.1.7-rc.2', '@deepseek-ai/dsh-tools': '0.1.7-rc.2' })
    const { facts, hostSessionModule } = await inspectHost(entry)
    expect(facts.packages.filter((dsh) => dsh.version !== SUPPORTED_DSH_VERSION)).toEqual([
      { name: '@deepseek-ai/dsh-session', version: '0.1.7-rc.2' },
      { name: '@deepseek-ai/dsh-tools', version: '0.1.7-rc.2' },
    ])
    // The edited metadata's lib is the real one: the same module instance, format 0.
    expect(hostSessionModule).toBe(sessionModule)
    expect(facts.sessionFormat).toBe(0)
  })

  it('reads no version from metadata without one, and no module from a session package that fails to load', async () => {
    const root = tempDir('loop-broken-dsh-')
    const session = join(root, 'node_modules', '@deepseek-ai', 'dsh-session')
    mkdirSync(session, { recursive: true })
    writeFileSync(join(session, 'package.json'), JSON.stringify({ name: '@deepseek-ai/dsh-session', main: 'index.js' }))
    writeFileSync(join(session, 'index.js'), 'throw new Error("not this host")\n')
    const entry = join(root, 'bin.js')
    writeFileSync(entry, '')
    const { facts, hostSessionModule } = await inspectHost(entry)
    expect(facts.packages.find((dsh) => dsh.name === '@deepseek-ai/dsh-session')).toEqual({
      name: '@deepseek-ai/dsh-session',
      version: undefined,
    })
    expect(hostSessionModule).toBeUndefined()
    // Without the host's module, the format is the plugin's own copy's.
    expect(facts.sessionFormat).toBe(0)
  })

  it('reads no version of a package neither the host entry nor the plugin sees', async () => {
    const nowhere = join(tempDir('loop-no-dsh-'), 'index.js')
    writeFileSync(nowhere, '')
    const { facts } = await inspectHost(nowhere, nowhere)
    expect(facts.packages).toEqual(DSH_PACKAGES.map((name) => ({ name, version: undefined })))
  })
})

const model = useMockModel()

/** Boot a real host against the mock model with `process.argv[1]` set to `entry` while the plugin loads. */
async function bootOn(entry: string | undefined, root?: string) {
  const argv = process.argv[1]
  process.argv[1] = entry ?? argv!
  try {
    return await model.start({ sequence: ['success'], repeatLast: true, successText: 'answered' }, root)
  } finally {
    process.argv[1] = argv!
  }
}

/** The tool names of every request the mock model received. */
function requestedTools(): string[][] {
  return model.server.requests.map((request) =>
    ((request.body as { tools?: { function: { name: string } }[] }).tools ?? []).map((tool) => tool.function.name),
  )
}

describe('on a DSH it was not built for', () => {
  afterEach(() => {
    vi.restoreAllMocks()
  })

  it('boots, adds no loop tool, /loop creates nothing and appends nothing, and a prompt still gets its answer', async () => {
    const printed: unknown[][] = []
    vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void printed.push(args))
    const host = await bootOn(hostWithVersions({ '@deepseek-ai/dsh-session': '0.1.7-rc.2' }))
    expect(printed).toEqual([[`loop: ${LATER_DSH_MESSAGE}`]])
    const agent = await createRealAgent(host, 'ses-later-dsh')
    expect(host.ctx.tools.schemas(agent).filter((schema) => schema.name.startsWith('loop_'))).toEqual([])
    for (const line of ['/loop 2 check the build', '/loop list', '/loop delete loop_00000001', '/loop'])
      expect(await runCommand(host, agent, line)).toEqual({ kind: 'error', text: LATER_DSH_MESSAGE })

    sendTask(agent, 'hello')
    await until('the answer', () => agent.session.events.some((event) => event.type === 'assistant/message'))
    expect(loopChanges(agent)).toEqual([])
    expect(requestedTools().length).toBeGreaterThan(0)
    expect(
      requestedTools()
        .flat()
        .filter((name) => name.startsWith('loop_')),
    ).toEqual([])
  })

  it('opens a session that holds loops and leaves them untouched: no heartbeat, no record', async () => {
    const root = tempDir()
    const rc8 = await bootOn(undefined, root)
    const saved = await createRealAgent(rc8, 'ses-saved-loops')
    await createLoopByCommand(rc8, saved, 3600, 'check the build')
    const before = loopChanges(saved)
    await model.dispose(rc8)

    vi.spyOn(console, 'error').mockImplementation(() => undefined)
    const later = await bootOn(hostWithVersions({ '@deepseek-ai/dsh-session': '0.1.7-rc.2' }), root)
    const reopened = await resumeFakeAgent(later, 'ses-saved-loops')
    expect(loopChanges(reopened.agent)).toEqual(before)
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(reopened.send).not.toHaveBeenCalled()
    expect(loopChanges(reopened.agent)).toEqual(before)
  })
})

describe('on the DSH it was built for, the same steps', () => {
  it('add the loop tools, create a loop by /loop, and a prompt gets its answer with the tools listed', async () => {
    const host = await bootOn(undefined)
    const agent = await createRealAgent(host, 'ses-rc8')
    expect(
      host.ctx.tools
        .schemas(agent)
        .map((schema) => schema.name)
        .filter((name) => name.startsWith('loop_')),
    ).toEqual(['loop_create', 'loop_list', 'loop_delete'])
    const id = await createLoopByCommand(host, agent, 3600, 'check the build')
    expect(loopChanges(agent)).toMatchObject([{ operation: 'create', loop: { id, prompt: 'check the build' } }])
    sendTask(agent, 'hello')
    await until('the answer', () => agent.session.events.some((event) => event.type === 'assistant/message'))
    expect(requestedTools()[0]).toEqual(expect.arrayContaining(['loop_create', 'loop_list', 'loop_delete']))
  })
})

// @vitest-environment jsdom
/**
 * The browser bundle as DSH web loads it: build `lib/client.js` (into a temp
 * dir, from the same tsdown config), run it as a classic `<script>` against a
 * fake `window.__ModuleLoader__`, materialize the factory with a `require`
 * that serves only what the host's module table would, and check the exports,
 * the injected style and the slot registration. The entry module is checked
 * from source too, so `src/ui/index.ts` is measured by coverage.
 */
import { act, cleanup, fireEvent, render, screen } from '@testing-library/react'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import * as React from 'react'
import * as ReactJsxRuntime from 'react/jsx-runtime'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import * as sourceEntry from '../src/ui/index.ts'
import type { ShadowedRenderer } from '../src/ui/heartbeat.ts'
import type { HeartbeatRowInjected, HeartbeatRowProps } from '../src/ui/HeartbeatRow.tsx'
import type { LoopClientContext } from '../src/ui/index.ts'
import { LOOP_DICTIONARIES, type LoopTranslate } from '../src/ui/locales.ts'
import type { LoopDockInjected, LoopDockProps } from '../src/ui/slot-props.ts'

const ROOT = resolve(import.meta.dirname, '..')
const SEED: Record<string, unknown> = {
  react: React,
  'react/jsx-runtime': ReactJsxRuntime,
  '@deepseek-ai/cordis': {},
}

interface Registration {
  readonly id: string
  readonly factory: (require: (specifier: string) => unknown) => Record<string, unknown>
}

let outDir: string
let code: string

beforeAll(() => {
  outDir = mkdtempSync(join(tmpdir(), 'loop-client-'))
  execFileSync(process.execPath, [join(ROOT, 'node_modules/tsdown/dist/run.mjs'), '--filter', 'client', '--out-dir', outDir, '--log-level', 'warn'], {
    cwd: ROOT,
    stdio: 'pipe',
  })
  code = readFileSync(join(outDir, 'client.js'), 'utf8')
}, 60_000)

afterAll(() => rmSync(outDir, { recursive: true, force: true }))

afterEach(() => {
  cleanup()
  for (const node of document.head.querySelectorAll('style')) node.remove()
  delete scriptRealm().__ModuleLoader__
})

/** The window `<script>`s run in: vitest's jsdom environment exposes its JSDOM as `jsdom`; the `window` global is the test realm. */
const scriptRealm = () => (globalThis as unknown as { jsdom: { window: { __ModuleLoader__?: unknown } } }).jsdom.window

/** Run the bundle the way the host's `<script src>` does and return what it registered. */
function loadBundle(): Registration[] {
  const registrations: Registration[] = []
  scriptRealm().__ModuleLoader__ = { load: (registration: Registration) => registrations.push(registration) }
  const script = document.createElement('script')
  script.textContent = code
  document.head.appendChild(script)
  script.remove()
  return registrations
}

/** The host's module table, reduced to the seed words this plugin may use. */
function seedRequire() {
  const required: string[] = []
  const require = (specifier: string) => {
    required.push(specifier)
    if (!(specifier in SEED)) throw new Error(`client-modules: require("${specifier}") missed the module table`)
    return SEED[specifier]
  }
  return { required, require }
}

/** The English `t` seat, filled as DSH's locale runtime fills `{name}` placeholders. */
const englishSeat: LoopTranslate = (key, params) =>
  LOOP_DICTIONARIES.en[key].replace(/\{(\w+)\}/g, (match, name: string) => String(params?.[name] ?? match))

type DockOptions = { readonly name: 'conversation.input.dock'; readonly id: string; readonly order: number; readonly locale: 'loop'; readonly inject: (sessionId: string) => LoopDockInjected }
type NodeOptions = { readonly name: 'conversation.chat.node'; readonly key: 'context'; readonly priority: number; readonly locale: 'loop'; readonly inject: () => HeartbeatRowInjected }

/**
 * A client context: a slot registry that declares each slot on demand and
 * holds DSH's own `context` renderer, a locale registry, a lifetime effect,
 * and the commands remote.
 */
function fakeContext() {
  const calls: unknown[] = []
  const declarations = new Map<string, () => () => void>()
  const dispose = vi.fn()
  const registered: { options: DockOptions | NodeOptions; component: unknown }[] = []
  const register = vi.fn((options: DockOptions | NodeOptions, component: unknown) => {
    registered.push({ options, component })
    return dispose
  })
  const execute = vi.fn(async (...args: unknown[]) => {
    calls.push(args)
    return { ok: true, value: { commandId: 'cmd-1', result: { kind: 'success', text: 'Deleted loop_a.' } } }
  })
  const unregister = vi.fn()
  const hostContextRow = () => null
  const hostEntry = { component: hostContextRow, options: { key: 'context' }, locale: 'conversation' }
  const conversationT = (key: string) => `conversation:${key}`
  const ctx = {
    effect: vi.fn((setup: () => () => void) => setup()),
    locale: { register: vi.fn(() => unregister), bind: vi.fn(() => conversationT) },
    slots: {
      inject: vi.fn((key: string, callback: () => () => void) => {
        declarations.set(key, callback)
        return () => undefined
      }),
      entries: vi.fn(() => [...registered.filter(({ options }) => options.name === 'conversation.chat.node').map(({ options, component }) => ({ component, options: { key: 'context', priority: (options as NodeOptions).priority }, locale: 'loop', inject: options.inject })), hostEntry]),
      register,
    },
    remote: { commands: { execute } },
  } as unknown as LoopClientContext
  return { ctx, register, registered, execute, calls, dispose, unregister, hostContextRow, conversationT, declareSlot: (key: string) => declarations.get(key)!() }
}

type Entry = { apply: (ctx: LoopClientContext) => void; inject: readonly string[] }
type LoopDockComponent = React.FunctionComponent<LoopDockProps>
type NodeComponent = React.FunctionComponent<HeartbeatRowProps>

/** What every face of the entry (bundle or source) must do. */
async function checkEntry(entry: Entry) {
  expect(entry.inject).toEqual(['slots', 'remote', 'remote.commands', 'locale'])
  const { ctx, register, registered, execute, dispose, unregister, hostContextRow, conversationT, declareSlot } = fakeContext()
  entry.apply(ctx)
  // The loop namespace is registered for the plugin's lifetime, both languages at once.
  expect(ctx.locale.register).toHaveBeenCalledExactlyOnceWith('loop', LOOP_DICTIONARIES)
  expect(ctx.effect).toHaveBeenCalledExactlyOnceWith(expect.any(Function), 'dsh-plugin-loop: dictionaries')
  expect(vi.mocked(ctx.effect).mock.results[0]!.value).toBe(unregister)
  expect(vi.mocked(ctx.slots.inject).mock.calls.map(([key]) => key)).toEqual(['conversation.input.dock', 'conversation.chat.node'])
  expect(register).not.toHaveBeenCalled() // only once the conversation declares each slot
  expect(declareSlot('conversation.input.dock')).toBe(dispose)
  expect(declareSlot('conversation.chat.node')).toBe(dispose)
  expect(register).toHaveBeenCalledTimes(2)
  const [dock, node] = registered as [{ options: DockOptions; component: LoopDockComponent }, { options: NodeOptions; component: NodeComponent }]
  expect(dock.options).toEqual({ name: 'conversation.input.dock', id: 'loop', order: 15, locale: 'loop', inject: expect.any(Function) })
  expect(dock.options.order).toBeGreaterThan(10) // goal bar
  expect(dock.options.order).toBeLessThan(20) // queue strip
  // One below DSH's own context renderer (priority 0): the registry renders the lowest.
  expect(node.options).toEqual({ name: 'conversation.chat.node', key: 'context', priority: -1, locale: 'loop', inject: expect.any(Function) })

  // inject(sessionId) binds the session: the dock's only way out is that session's command executor.
  const injected: LoopDockInjected = dock.options.inject('session-1')
  expect(Object.keys(injected)).toEqual(['executeCommand'])
  await expect(injected.executeCommand('/loop list')).resolves.toMatchObject({ ok: true })
  expect(execute).toHaveBeenLastCalledWith('session-1', '/loop list', [])

  // The heartbeat renderer's face: the renderer it shadows, read live from the registry, and other namespaces' seats.
  const face = node.options.inject()
  expect(face.shadowedRenderer()).toEqual<ShadowedRenderer>({ component: hostContextRow, locale: 'conversation' })
  expect(ctx.slots.entries).toHaveBeenCalledWith('conversation.chat.node')
  expect(face.bindNamespace('conversation')).toBe(conversationT)
  expect(ctx.locale.bind).toHaveBeenCalledWith('conversation')

  // The heartbeat renderer draws a loop heartbeat as its own row.
  const useProjection = ((key: string, selector?: (value: unknown) => unknown) => {
    const value = key === 'loop' ? { loops } : undefined
    return selector === undefined ? value : selector(value)
  }) as LoopDockProps['useProjection']
  const loops = [{ id: 'loop_a1b2', prompt: 'Check the build', time_in_seconds: 90, next_at: Date.now() + 5_000 }]
  const heartbeat = { content: [{ type: 'text', text: '<heartbeat>\n  <loop_id>loop_a1b2</loop_id>\n  <prompt>Check the build</prompt>\n</heartbeat>' }], source: { kind: 'plugin', plugin: 'loop' } }
  const nodeView = render(React.createElement(node.component, { node: { data: heartbeat }, t: englishSeat, useProjection, ...face }))
  expect(nodeView.container.querySelector('[data-loop-heartbeat] button')!.textContent).toBe('↻Loop heartbeat·every 1m 30s·Check the build▾')
  nodeView.unmount()

  // Rendered as the slot renderer would, Delete → Confirm sends exactly `/loop delete <id>`.
  render(React.createElement(dock.component, { useProjection, t: englishSeat, ...dock.options.inject('session-2') }))
  expect(document.querySelector('[data-loop-row]')!.textContent).toMatch(/^↻ every 1m 30snext in [45]sCheck the buildDelete$/)
  fireEvent.click(screen.getByRole('button', { name: 'Delete' }))
  await act(async () => void fireEvent.click(screen.getByRole('button', { name: 'Confirm' })))
  expect(execute).toHaveBeenLastCalledWith('session-2', '/loop delete loop_a1b2', [])
  expect(execute).toHaveBeenCalledTimes(2)
  return document.querySelector<HTMLElement>('[data-loop-dock]')!
}

describe('lib/client.js', () => {
  it('is a classic script that only registers a lazy factory under the package name', () => {
    expect(code.startsWith('window.__ModuleLoader__.load({\n\tid: "dsh-plugin-loop",\n\tfactory: (require) => {')).toBe(true)
    expect(code).toMatch(/\t\treturn module\.exports;\n\t}\n}\);\n\/\/# sourceMappingURL=client\.js\.map\s*$/)
    expect(code).not.toMatch(/^\s*(import|export)\s/m)
    expect(code).not.toMatch(/\bimport\s*\(/)
    const registrations = loadBundle()
    expect(registrations.map((registration) => registration.id)).toEqual(['dsh-plugin-loop'])
    expect(typeof registrations[0]!.factory).toBe('function')
    expect(document.querySelectorAll('style')).toHaveLength(0) // nothing runs before materialization
  })

  it('requires only react and react/jsx-runtime, exports apply and inject, and injects its styles once', () => {
    const [registration] = loadBundle()
    const { required, require } = seedRequire()
    const exports = registration!.factory(require)
    expect([...new Set(required)].sort()).toEqual(['react', 'react/jsx-runtime'])
    expect(Object.keys(exports).sort()).toEqual(['apply', 'inject'])
    expect('default' in exports).toBe(false)

    const styles = [...document.querySelectorAll<HTMLStyleElement>('style')]
    expect(styles.map((style) => [style.dataset.plugin, style.dataset.pluginCss])).toEqual([
      ['dsh-plugin-loop', 'dsh-plugin-loop/HeartbeatRow.module.css'],
      ['dsh-plugin-loop', 'dsh-plugin-loop/LoopDock.module.css'],
    ])
    const [heartbeat, dock] = styles.map((style) => style.textContent) as [string, string]
    expect(dock).toContain('var(--dsw-specific-tip)')
    expect(dock).toContain('var(--dsw-alias-state-error-primary)')
    expect(dock).toContain('min-height:44px')
    expect(heartbeat).toContain('var(--dsw-alias-markdown-code-block)')
    expect(heartbeat).toContain('max-height:141px')
    for (const css of [dock, heartbeat]) expect(css).not.toMatch(/animation|transition/)

    // a second materialization (HMR reload) does not duplicate the styles
    registration!.factory(seedRequire().require)
    expect(document.querySelectorAll('style')).toHaveLength(2)
  })

  it('registers the dictionaries, the dock between the goal bar and the queue strip, and the heartbeat row', async () => {
    const [registration] = loadBundle()
    const exports = registration!.factory(seedRequire().require) as unknown as Entry
    const root = await checkEntry(exports)
    // the component carries the bundle's scoped class names, which the injected style defines
    const dockClass = root.className
    expect(dockClass).toMatch(/^[\w-]+_dock$/)
    expect(document.querySelector('style[data-plugin-css="dsh-plugin-loop/LoopDock.module.css"]')!.textContent).toContain(`.${dockClass}{`)
  })
})

describe('src/ui/index.ts', () => {
  it('exports only apply and inject, and registers the same entry', async () => {
    expect(Object.keys(sourceEntry).sort()).toEqual(['apply', 'inject'])
    await checkEntry(sourceEntry)
  })
})

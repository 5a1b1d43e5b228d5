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
import { readFileSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import * as React from 'react'
import * as ReactJsxRuntime from 'react/jsx-runtime'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import * as sourceEntry from '../src/ui/index.ts'
import type { ShadowedRenderer } from '../src/ui/context-renderer.ts'
import type { HeartbeatRowInjected, HeartbeatRowProps } from '../src/ui/HeartbeatRow.tsx'
import type { LoopClientContext, LoopSettingsInjected } from '../src/ui/index.ts'
import { LOOP_DICTIONARIES, type LoopTranslate } from '../src/ui/locales.ts'
import type { LoopSettingsCardProps } from '../src/ui/LoopSettingsCard.tsx'
import type { SettingsScopeLike, SettingsScopeSnapshot } from '../src/ui/settings-form.ts'
import type { LoopsViewInjected, LoopsViewProps } from '../src/ui/slot-props.ts'
import type { ToolCallRowInjected, ToolCallRowProps } from '../src/ui/ToolCallRow.tsx'
import { heartbeatText } from './support/heartbeat-xml.ts'
import { tempDir } from '../harness/temp-dir.ts'

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
  outDir = tempDir('loop-client-')
  execFileSync(
    process.execPath,
    [join(ROOT, 'node_modules/tsdown/dist/run.mjs'), '--filter', 'client', '--out-dir', outDir, '--log-level', 'warn'],
    {
      cwd: ROOT,
      stdio: 'pipe',
    },
  )
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

type DockOptions = {
  readonly name: 'conversation.input.dock'
  readonly id: string
  readonly order: number
  readonly locale: 'loop'
  readonly inject: (sessionId: string) => LoopsViewInjected
}
type NodeOptions = {
  readonly name: 'conversation.chat.node'
  readonly key: 'context'
  readonly priority: number
  readonly locale: 'loop'
  readonly inject: () => HeartbeatRowInjected
}
type ToolOptions = {
  readonly name: 'tool.call.toolview'
  readonly key: string
  readonly locale: 'loop'
  readonly inject: () => ToolCallRowInjected
}
type CardOptions = {
  readonly name: 'settings.plugin.item'
  readonly key: 'loop'
  readonly locale: 'loop'
  readonly inject: () => LoopSettingsInjected
}
type AnyOptions = DockOptions | NodeOptions | ToolOptions | CardOptions

/** The `loop` section as the host's settings scope serves it; a write lands in the user layer. */
function settingsScope() {
  let snapshot: SettingsScopeSnapshot = {
    status: 'ready',
    value: { maxLoopsPerSession: 20, maxPromptLength: 4000 },
    base: { maxLoopsPerSession: 20, maxPromptLength: 4000 },
    user: undefined,
    writable: true,
  }
  const listeners = new Set<() => void>()
  const scope: SettingsScopeLike = {
    getSnapshot: () => snapshot,
    subscribe: vi.fn((listener: () => void) => {
      listeners.add(listener)
      return () => listeners.delete(listener)
    }),
    set: vi.fn(async (field: string, value: unknown) => {
      snapshot = { ...snapshot, value: { ...(snapshot.value as object), [field]: value }, user: { [field]: value } }
      for (const listener of listeners) listener()
    }),
    unset: vi.fn(async () => undefined),
  }
  return { scope, listeners }
}

/**
 * A client context: a slot registry that declares each slot on demand and
 * holds DSH's own `context` renderer, a locale registry, a lifetime effect,
 * and the commands remote.
 */
function fakeContext() {
  const calls: unknown[] = []
  const declarations = new Map<string, () => () => void>()
  const dispose = vi.fn()
  const registered: { options: AnyOptions; component: unknown }[] = []
  const register = vi.fn((options: AnyOptions, component: unknown) => {
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
  const section = settingsScope()
  const slots = {
    inject: vi.fn((key: string, callback: () => () => void) => {
      declarations.set(key, callback)
      return () => undefined
    }),
    entries: vi.fn(() => [
      ...registered
        .filter(({ options }) => options.name === 'conversation.chat.node')
        .map(({ options, component }) => ({
          component,
          options: { key: 'context', priority: (options as NodeOptions).priority },
          locale: 'loop',
          inject: options.inject,
        })),
      hostEntry,
    ]),
    register,
  }
  // The fiber Cordis runs `ctx.inject(['settingsScope'], …)` in: the same slots, its own lifetime and the scope binder.
  const settingsFiber = {
    effect: vi.fn((setup: () => () => void) => setup()),
    slots,
    settingsScope: { bind: vi.fn(() => section.scope) },
  }
  const ctx = {
    effect: vi.fn((setup: () => () => void) => setup()),
    locale: { register: vi.fn(() => unregister), bind: vi.fn(() => conversationT) },
    inject: vi.fn((_deps: readonly string[], callback: (fiber: typeof settingsFiber) => void) =>
      callback(settingsFiber),
    ),
    slots,
    remote: { commands: { execute } },
  } as unknown as LoopClientContext
  return {
    ctx,
    register,
    registered,
    execute,
    calls,
    dispose,
    unregister,
    hostContextRow,
    conversationT,
    settingsFiber,
    section,
    declareSlot: (key: string) => declarations.get(key)!(),
  }
}

type Entry = { apply: (ctx: LoopClientContext) => void; inject: readonly string[] }
type LoopsViewComponent = React.FunctionComponent<LoopsViewProps>
type NodeComponent = React.FunctionComponent<HeartbeatRowProps>
type ToolComponent = React.FunctionComponent<ToolCallRowProps>
type CardComponent = React.FunctionComponent<LoopSettingsCardProps>

/** What every face of the entry (bundle or source) must do. */
async function checkEntry(entry: Entry) {
  expect(entry.inject).toEqual(['slots', 'remote', 'remote.commands', 'locale'])
  const {
    ctx,
    register,
    registered,
    execute,
    dispose,
    unregister,
    hostContextRow,
    conversationT,
    settingsFiber,
    section,
    declareSlot,
  } = fakeContext()
  entry.apply(ctx)
  // The loop namespace is registered for the plugin's lifetime, both languages at once.
  expect(ctx.locale.register).toHaveBeenCalledExactlyOnceWith('loop', LOOP_DICTIONARIES)
  expect(ctx.effect).toHaveBeenCalledExactlyOnceWith(expect.any(Function), 'dsh-plugin-loop: dictionaries')
  expect(vi.mocked(ctx.effect).mock.results[0]!.value).toBe(unregister)
  // The settings card waits for DSH's settings surface; the rest of the plugin does not.
  expect(ctx.inject).toHaveBeenCalledExactlyOnceWith(['settingsScope'], expect.any(Function))
  expect(settingsFiber.settingsScope.bind).toHaveBeenCalledExactlyOnceWith({ namespace: 'loop' })
  // The card's form follows the scope for the fiber's lifetime.
  expect(settingsFiber.effect).toHaveBeenCalledExactlyOnceWith(expect.any(Function), 'dsh-plugin-loop: settings card')
  expect(section.listeners.size).toBe(1)
  vi.mocked(settingsFiber.effect).mock.results[0]!.value()
  expect(section.listeners.size).toBe(0)
  expect(vi.mocked(ctx.slots.inject).mock.calls.map(([key]) => key)).toEqual([
    'conversation.input.dock',
    'conversation.chat.node',
    'tool.call.toolview',
    'settings.plugin.item',
  ])
  expect(register).not.toHaveBeenCalled() // only once the host declares each slot
  expect(declareSlot('conversation.input.dock')).toBe(dispose)
  expect(declareSlot('conversation.chat.node')).toBe(dispose)
  expect(register).toHaveBeenCalledTimes(2)
  const [dock, node] = registered as [
    { options: DockOptions; component: LoopsViewComponent },
    { options: NodeOptions; component: NodeComponent },
  ]

  // One tool view per model tool, keyed by its name; the slot's disposer removes all three.
  const disposeTools = declareSlot('tool.call.toolview')
  const tools = registered.slice(2) as { options: ToolOptions; component: ToolComponent }[]
  expect(tools.map(({ options }) => options)).toEqual(
    ['loop_create', 'loop_list', 'loop_delete'].map((key) => ({
      name: 'tool.call.toolview',
      key,
      locale: 'loop',
      inject: expect.any(Function),
    })),
  )
  expect(tools.map(({ options }) => options.inject())).toEqual([
    { loopTool: 'loop_create' },
    { loopTool: 'loop_list' },
    { loopTool: 'loop_delete' },
  ])
  expect(new Set(tools.map(({ component }) => component)).size).toBe(1)
  dispose.mockClear()
  disposeTools()
  expect(dispose).toHaveBeenCalledTimes(3)
  const create = tools[0]!
  const toolView = render(
    React.createElement(create.component, {
      ...create.options.inject(),
      block: {
        callId: 'c1',
        kind: 'tool-result',
        call: { argsRaw: '{"time_in_seconds":300,"prompt":"Check whether CI is green"}' },
        content: [{ type: 'text', text: '{}' }],
        isError: false,
      },
      t: englishSeat,
    }),
  )
  expect(toolView.container.querySelector('[data-loop-tool="loop_create"] button')!.textContent).toBe(
    '↻Create loop·every 5m·Check whether CI is green▾',
  )
  const toolText = toolView.container.querySelector('pre')!.className
  toolView.unmount()

  // The settings card, keyed by the namespace the Plugin configuration tab lists.
  expect(declareSlot('settings.plugin.item')).toBe(dispose)
  const card = registered[5] as { options: CardOptions; component: CardComponent }
  expect(card.options).toEqual({
    name: 'settings.plugin.item',
    key: 'loop',
    locale: 'loop',
    inject: expect.any(Function),
  })
  const face = card.options.inject()
  expect(Object.keys(face).sort()).toEqual(['discard', 'edit', 'hooks', 'resetField', 'save'])
  // As the slot renderer binds `hooks.loopSettings` into `useLoopSettings`.
  const store = face.hooks.loopSettings
  const { hooks: _hooks, ...actions } = face
  const cardView = render(
    React.createElement(card.component, {
      ...actions,
      t: englishSeat,
      useLoopSettings: <S>(selector: (state: ReturnType<typeof store.getSnapshot>) => S) =>
        selector(React.useSyncExternalStore(store.subscribe, store.getSnapshot)),
    }),
  )
  fireEvent.click(screen.getByRole('button', { name: 'Show settings: Loops' }))
  fireEvent.change(screen.getByLabelText('Active loops per session'), { target: { value: '1' } })
  await act(async () => void fireEvent.click(screen.getByRole('button', { name: 'Save' })))
  expect(section.scope.set).toHaveBeenCalledExactlyOnceWith('maxLoopsPerSession', 1)
  expect(screen.getByText('Overridden')).toBeTruthy()
  cardView.unmount()
  expect(dock.options).toEqual({
    name: 'conversation.input.dock',
    id: 'loop',
    order: 15,
    locale: 'loop',
    inject: expect.any(Function),
  })
  expect(dock.options.order).toBeGreaterThan(10) // goal bar
  expect(dock.options.order).toBeLessThan(20) // queue strip
  // One below DSH's own context renderer (priority 0): the registry renders the lowest.
  expect(node.options).toEqual({
    name: 'conversation.chat.node',
    key: 'context',
    priority: -1,
    locale: 'loop',
    inject: expect.any(Function),
  })

  // inject(sessionId) binds the session: the dock's only way out is that session's command executor.
  const injected: LoopsViewInjected = dock.options.inject('session-1')
  expect(Object.keys(injected)).toEqual(['executeCommand'])
  await expect(injected.executeCommand('/loop list')).resolves.toMatchObject({ ok: true })
  expect(execute).toHaveBeenLastCalledWith('session-1', '/loop list', [])

  // The heartbeat renderer's face: the renderer it shadows, read live from the registry, and other namespaces' seats.
  const nodeFace = node.options.inject()
  expect(nodeFace.shadowedRenderer()).toEqual<ShadowedRenderer>({ component: hostContextRow, locale: 'conversation' })
  expect(ctx.slots.entries).toHaveBeenCalledWith('conversation.chat.node')
  expect(nodeFace.bindNamespace('conversation')).toBe(conversationT)
  expect(ctx.locale.bind).toHaveBeenCalledWith('conversation')

  // The heartbeat renderer draws a loop heartbeat as its own row.
  const useProjection = ((key: string, selector?: (value: unknown) => unknown) => {
    const value = key === 'loop' ? { loops } : undefined
    return selector === undefined ? value : selector(value)
  }) as LoopsViewProps['useProjection']
  const loops = [{ id: 'loop_a1b2', prompt: 'Check the build', time_in_seconds: 90, next_at: Date.now() + 5_000 }]
  const heartbeat = {
    content: [
      {
        type: 'text',
        text: heartbeatText('loop_a1b2', 'Check the build'),
      },
    ],
    source: { kind: 'plugin', plugin: 'loop' },
  }
  const nodeView = render(
    React.createElement(node.component, { node: { data: heartbeat }, t: englishSeat, useProjection, ...nodeFace }),
  )
  expect(nodeView.container.querySelector('[data-loop-heartbeat] button')!.textContent).toBe(
    '↻Loop heartbeat·every 1m 30s·Check the build▾',
  )
  const heartbeatClass = nodeView.container.querySelector('pre')!.className
  nodeView.unmount()

  // Rendered as the slot renderer would, Delete → Confirm sends exactly `/loop delete <id>`.
  render(React.createElement(dock.component, { useProjection, t: englishSeat, ...dock.options.inject('session-2') }))
  expect(document.querySelector('[data-loop-row]')!.textContent).toMatch(
    /^↻ every 1m 30snext in [45]sCheck the buildDelete$/,
  )
  fireEvent.click(screen.getByRole('button', { name: 'Delete' }))
  await act(async () => void fireEvent.click(screen.getByRole('button', { name: 'Confirm' })))
  expect(execute).toHaveBeenLastCalledWith('session-2', '/loop delete loop_a1b2', [])
  expect(execute).toHaveBeenCalledTimes(2)

  // A DSH that stops passing one prop an entry reads (a later release renamed it) gets nothing from
  // that entry, and no error: a throwing entry would take DSH's slot down.
  const printed = vi.spyOn(console, 'error')
  // Each entry: its component, the props DSH passes or this plugin injects that it reads, and what stays fixed.
  const complete: [unknown, Record<string, unknown>, Record<string, unknown>?][] = [
    [dock.component, { useProjection, t: englishSeat, ...dock.options.inject('session-3') }],
    [node.component, { node: { data: heartbeat }, t: englishSeat, useProjection, ...nodeFace }],
    [
      create.component,
      { block: { callId: 'c2', kind: 'tool-call', call: { argsRaw: '{}' } }, t: englishSeat },
      { ...create.options.inject() },
    ],
    [
      card.component,
      {
        ...actions,
        t: englishSeat,
        useLoopSettings: <S>(selector: (state: ReturnType<typeof store.getSnapshot>) => S) =>
          selector(React.useSyncExternalStore(store.subscribe, store.getSnapshot)),
      },
    ],
  ]
  const missing: string[] = []
  for (const [component, props, fixed = {}] of complete) {
    // With every prop it reads, each entry renders.
    const whole = render(React.createElement(component as React.FC, { ...fixed, ...props }))
    expect(whole.container.innerHTML).not.toBe('')
    whole.unmount()
    for (const key of Object.keys(props)) {
      const { [key]: _dropped, ...rest } = props
      const view = render(React.createElement(component as React.FC, { ...fixed, ...rest }))
      if (view.container.innerHTML === '') missing.push(key)
      view.unmount()
    }
  }
  expect(missing).toEqual([
    ...['useProjection', 't', 'executeCommand'],
    ...['node', 't', 'useProjection', 'shadowedRenderer', 'bindNamespace'],
    ...['block', 't'],
    ...['edit', 'resetField', 'save', 'discard', 't', 'useLoopSettings'],
  ])
  expect(printed).not.toHaveBeenCalled()
  printed.mockRestore()
  return {
    dock: document.querySelector<HTMLElement>('[data-loop-dock]')!,
    texts: { heartbeat: heartbeatClass, tool: toolText },
  }
}

describe('lib/client.js', () => {
  it('is a classic script that only registers a lazy factory under the package name', () => {
    expect(code.startsWith('window.__ModuleLoader__.load({\n\tid: "dsh-plugin-loop",\n\tfactory: (require) => {')).toBe(
      true,
    )
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
      ['dsh-plugin-loop', 'dsh-plugin-loop/DisclosureRow.module.css'],
      ['dsh-plugin-loop', 'dsh-plugin-loop/HeartbeatRow.module.css'],
      ['dsh-plugin-loop', 'dsh-plugin-loop/LoopsView.module.css'],
      ['dsh-plugin-loop', 'dsh-plugin-loop/LoopSettingsCard.module.css'],
      ['dsh-plugin-loop', 'dsh-plugin-loop/ToolCallRow.module.css'],
    ])
    const [disclosure, heartbeat, dock, card, tool] = styles.map((style) => style.textContent) as [
      string,
      string,
      string,
      string,
      string,
    ]
    expect(dock).toContain('var(--dsw-specific-tip)')
    expect(dock).toContain('var(--dsw-alias-state-error-primary)')
    expect(dock).toContain('min-height:44px')
    // The heartbeat and tool rows share one disclosure line, whose text wears the code-block background.
    expect(disclosure).toContain('var(--dsw-alias-markdown-code-block)')
    expect(heartbeat).toContain('max-height:141px')
    // The card wears the host's card tokens; the tool row the conversation's.
    expect(card).toContain('var(--dsw-alias-bg-layer-3)')
    expect(card).toContain('var(--dsw-alias-label-error)')
    expect(tool).toContain('var(--dsw-alias-state-error-primary)')
    for (const css of [disclosure, dock, heartbeat, card, tool]) expect(css).not.toMatch(/animation|transition/)

    // a second materialization (HMR reload) does not duplicate the styles
    registration!.factory(seedRequire().require)
    expect(document.querySelectorAll('style')).toHaveLength(5)
  })

  it('registers the dictionaries, the dock between the goal bar and the queue strip, the heartbeat row, the tool rows and the settings card', async () => {
    const [registration] = loadBundle()
    const exports = registration!.factory(seedRequire().require) as unknown as Entry
    const { dock: root, texts } = await checkEntry(exports)
    // the component carries the bundle's scoped class names, which the injected style defines
    const dockClass = root.className
    expect(dockClass).toMatch(/^[\w-]+_dock$/)
    expect(
      document.querySelector('style[data-plugin-css="dsh-plugin-loop/LoopsView.module.css"]')!.textContent,
    ).toContain(`.${dockClass}{`)
    // Each conversation row's text wears the shared disclosure sheet's code-block background and its own sheet's cap.
    const sheet = (file: string) =>
      document.querySelector(`style[data-plugin-css="dsh-plugin-loop/${file}"]`)!.textContent!
    for (const [file, className, cap] of [
      ['HeartbeatRow.module.css', texts.heartbeat, '141px'],
      ['ToolCallRow.module.css', texts.tool, '224px'],
    ] as const) {
      const [shared, own] = className.split(' ') as [string, string]
      expect(sheet('DisclosureRow.module.css')).toMatch(
        new RegExp(`\\.${shared}\\{[^}]*background:var\\(--dsw-alias-markdown-code-block\\)`),
      )
      expect(sheet(file)).toMatch(new RegExp(`\\.${own}\\{[^}]*max-height:${cap}`))
    }
  })
})

describe('src/ui/index.ts', () => {
  it('exports only apply and inject, and registers the same entry', async () => {
    expect(Object.keys(sourceEntry).sort()).toEqual(['apply', 'inject'])
    await checkEntry(sourceEntry)
  })
})

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
import type { LoopClientContext } from '../src/ui/index.ts'
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

/** A client context: a slot registry that declares the slot on demand, and the commands remote. */
function fakeContext() {
  const calls: unknown[] = []
  let declare: (() => () => void) | undefined
  const dispose = vi.fn()
  const register = vi.fn((..._args: Parameters<LoopClientContext['slots']['register']>) => dispose)
  const execute = vi.fn(async (...args: unknown[]) => {
    calls.push(args)
    return { ok: true, value: { commandId: 'cmd-1', result: { kind: 'success', text: 'Deleted loop_a.' } } }
  })
  const ctx: LoopClientContext = {
    slots: {
      inject: vi.fn((_key, callback) => {
        declare = callback
        return () => undefined
      }),
      register,
    },
    remote: { commands: { execute } },
  }
  return { ctx, register, execute, calls, dispose, declareSlot: () => declare!() }
}

type Entry = { apply: (ctx: LoopClientContext) => void; inject: readonly string[] }

/** What every face of the entry (bundle or source) must do. */
async function checkEntry(entry: Entry) {
  expect(entry.inject).toEqual(['slots', 'remote', 'remote.commands'])
  const { ctx, register, execute, dispose, declareSlot } = fakeContext()
  entry.apply(ctx)
  expect(ctx.slots.inject).toHaveBeenCalledWith('conversation.input.dock', expect.any(Function))
  expect(register).not.toHaveBeenCalled() // only once the conversation declares the slot
  expect(declareSlot()).toBe(dispose)
  expect(register).toHaveBeenCalledOnce()
  const [options, component] = register.mock.calls[0]!
  expect(options).toEqual({ name: 'conversation.input.dock', id: 'loop', order: 15, inject: expect.any(Function) })
  expect(options.order).toBeGreaterThan(10) // goal bar
  expect(options.order).toBeLessThan(20) // queue strip

  // inject(sessionId) binds the session: the dock's only way out is that session's command executor.
  const injected: LoopDockInjected = options.inject('session-1')
  expect(Object.keys(injected)).toEqual(['executeCommand'])
  await expect(injected.executeCommand('/loop list')).resolves.toMatchObject({ ok: true })
  expect(execute).toHaveBeenLastCalledWith('session-1', '/loop list', [])

  // Rendered as the slot renderer would, Delete → Confirm sends exactly `/loop delete <id>`.
  const loops = [{ id: 'loop_a1b2', prompt: 'Check the build', time_in_seconds: 90, next_at: Date.now() + 5_000 }]
  const useProjection = ((key: string) => (key === 'loop' ? { loops } : undefined)) as LoopDockProps['useProjection']
  render(React.createElement(component, { useProjection, ...options.inject('session-2') }))
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

  it('requires only react and react/jsx-runtime, exports apply and inject, and injects its style once', () => {
    const [registration] = loadBundle()
    const { required, require } = seedRequire()
    const exports = registration!.factory(require)
    expect([...new Set(required)].sort()).toEqual(['react', 'react/jsx-runtime'])
    expect(Object.keys(exports).sort()).toEqual(['apply', 'inject'])
    expect('default' in exports).toBe(false)

    const styles = document.querySelectorAll<HTMLStyleElement>('style')
    expect(styles).toHaveLength(1)
    const style = styles[0]!
    expect(style.dataset.plugin).toBe('dsh-plugin-loop')
    expect(style.dataset.pluginCss).toBe('dsh-plugin-loop/LoopDock.module.css')
    expect(style.textContent).toContain('var(--dsw-specific-tip)')
    expect(style.textContent).toContain('var(--dsw-alias-state-error-primary)')
    expect(style.textContent).toContain('min-height:44px')
    expect(style.textContent).not.toMatch(/animation|transition/)

    // a second materialization (HMR reload) does not duplicate the style
    registration!.factory(seedRequire().require)
    expect(document.querySelectorAll('style')).toHaveLength(1)
  })

  it('registers the dock in conversation.input.dock between the goal bar and the queue strip', async () => {
    const [registration] = loadBundle()
    const exports = registration!.factory(seedRequire().require) as unknown as Entry
    const root = await checkEntry(exports)
    // the component carries the bundle's scoped class names, which the injected style defines
    const dockClass = root.className
    expect(dockClass).toMatch(/^[\w-]+_dock$/)
    expect(document.querySelector('style')!.textContent).toContain(`.${dockClass}{`)
  })
})

describe('src/ui/index.ts', () => {
  it('exports only apply and inject, and registers the same entry', async () => {
    expect(Object.keys(sourceEntry).sort()).toEqual(['apply', 'inject'])
    await checkEntry(sourceEntry)
  })
})

/**
 * Row 5: `LoopsView` from src/ui/, bundled with the project's own build pieces (tsdown, CSS modules; React external),
 * rendered in jsdom by React 18's production build (what DSH web ships). The repaint is the dock's own once-a-second
 * interval callback, captured and run inside `flushSync` with the clock one second later, so every countdown changes.
 * jsdom's DOM is slower than a browser's: the times are upper bounds. Every interval, timeout, animation frame and
 * document listener registered while mounted is tracked, to check nothing is left running after unmount.
 * @module scripts/bench/dock
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { JSDOM } from 'jsdom'
import { build } from 'tsdown'
import { LOOP_DICTIONARIES, type LoopTranslate } from '../../src/ui/locales.ts'
import { dshCssModules } from '../dsh-client-build.ts'
import { timeSync } from './stats.ts'

export interface DockResult {
  /** Per layout with 100 loops: one countdown repaint per mount, ms. */
  readonly layouts: readonly { readonly label: string; readonly repaints: readonly number[] }[]
  /** Intervals, timeouts, animation frames and document listeners still registered after every unmount. */
  readonly left: { intervals: number; timeouts: number; frames: number; documentListeners: number }
}

const MOUNTS = 31
const WARMUP = 5

/** Bundle LoopsView.tsx to an ESM file inside the project (so `react` resolves), CSS modules included. */
async function bundleDock(root: string): Promise<string> {
  const outDir = join(root, 'node_modules', '.cache', 'loop-bench-dock')
  mkdirSync(outDir, { recursive: true })
  await build({
    config: false,
    entry: { dock: join(root, 'src/ui/LoopsView.tsx') },
    outDir,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    tsconfig: join(root, 'tsconfig.client.json'),
    dts: false,
    clean: false,
    hash: false,
    sourcemap: false,
    logLevel: 'silent',
    outExtensions: () => ({ js: '.mjs' }),
    deps: { neverBundle: ['react', 'react/jsx-runtime', 'react-dom', 'react-dom/client'] },
    plugins: [dshCssModules({ pluginId: 'dsh-plugin-loop' })],
  })
  return join(outDir, 'dock.mjs')
}

/** The `t` seat as DSH's locale runtime fills it for English. */
const translate: LoopTranslate = (key, params) =>
  LOOP_DICTIONARIES.en[key].replace(/\{(\w+)\}/g, (match, name: string) =>
    params !== undefined && name in params ? String(params[name]) : match,
  )

function loops(count: number) {
  const now = Date.now()
  return Array.from({ length: count }, (_, index) => ({
    id: `loop_${index.toString(16).padStart(8, '0')}`,
    prompt: `Check whether the build for branch ${index} is healthy and summarize new failures`,
    time_in_seconds: 30 + index * 7,
    next_at: now + 5_000 + index * 1_300,
  }))
}

export async function runDock(root: string, log: (line: string) => void): Promise<DockResult> {
  const { window } = new JSDOM('<!doctype html><html><head></head><body></body></html>', {
    pretendToBeVisual: true,
    url: 'http://localhost/',
  })
  const document = window.document
  // Only what React DOM and the component touch; Node's own timers stay the timers.
  const { navigator, HTMLElement, Node, Element, MouseEvent, KeyboardEvent } = window
  const globals = { window, document, navigator, HTMLElement, Node, Element, MouseEvent, KeyboardEvent }
  for (const [key, value] of Object.entries(globals))
    Object.defineProperty(globalThis, key, { value, configurable: true, writable: true })

  // Intervals are captured, never run by the clock: the bench runs the dock's repaint itself.
  const intervals = new Map<number, () => void>()
  let nextInterval = 1
  const fakeSetInterval = (callback: () => void) => {
    intervals.set(nextInterval, callback)
    return nextInterval++
  }
  const fakeClearInterval = (id: number) => void intervals.delete(id)
  for (const target of [globalThis, window] as { setInterval: unknown; clearInterval: unknown }[])
    Object.assign(target, { setInterval: fakeSetInterval, clearInterval: fakeClearInterval })
  const timeouts = new Set<ReturnType<typeof setTimeout>>()
  const [realSetTimeout, realClearTimeout] = [globalThis.setTimeout, globalThis.clearTimeout]
  let tracking = false
  globalThis.setTimeout = ((callback: () => void, ms?: number) => {
    const timer = realSetTimeout(() => {
      timeouts.delete(timer)
      callback()
    }, ms)
    if (tracking) timeouts.add(timer)
    return timer
  }) as typeof setTimeout
  globalThis.clearTimeout = ((timer: ReturnType<typeof setTimeout>) => {
    timeouts.delete(timer)
    realClearTimeout(timer)
  }) as typeof clearTimeout
  let frames = 0
  window.requestAnimationFrame = () => ++frames
  window.cancelAnimationFrame = () => {
    frames -= 1
  }
  let documentListeners = 0
  const [addListener, removeListener] = [
    document.addEventListener.bind(document),
    document.removeEventListener.bind(document),
  ]
  document.addEventListener = (...args) => {
    documentListeners += 1
    addListener(...args)
  }
  document.removeEventListener = (...args) => {
    documentListeners -= 1
    removeListener(...args)
  }
  // The dock reads Date.now() on every render; moved one second on before each timed repaint.
  const realNow = Date.now.bind(Date)
  let clockOffset = 0
  Date.now = () => realNow() + clockOffset

  const file = await bundleDock(root)
  process.env.NODE_ENV = 'production'
  const React = await import('react')
  const { createRoot } = await import('react-dom/client')
  const { flushSync } = await import('react-dom')
  const { LoopsView } = (await import(pathToFileURL(file).href)) as { LoopsView: (props: object) => unknown }
  // The production build has no `act`; flushSync commits synchronously, and React 18 runs the passive effects of a
  // synchronous render before returning, so the repaint interval is armed on return.
  const act = (body: () => void) => flushSync(body)
  const executeCommand = async () => ({ ok: true, value: { commandId: 'c', result: { kind: 'success', text: 'ok' } } })
  // React DOM adds one `selectionchange` listener to the document on its first root, for good: count from after it.
  const warm = createRoot(document.createElement('div'))
  act(() => warm.render(null))
  act(() => warm.unmount())
  const listenersBefore = documentListeners

  const measure = (label: string, expand: boolean) => {
    const projection = { loops: loops(100) }
    const props = { useProjection: () => projection, executeCommand, t: translate }
    const repaints: number[] = []
    for (let mount = 0; mount < WARMUP + MOUNTS; mount += 1) {
      clockOffset = 0
      const container = document.createElement('div')
      document.body.appendChild(container)
      tracking = true
      const reactRoot = createRoot(container)
      act(() => reactRoot.render(React.createElement(LoopsView as never, props)))
      if (expand) act(() => container.querySelector('[data-loop-summary] button')!.click())
      const rows = container.querySelectorAll('[data-loop-row]').length
      if (rows !== (expand ? 100 : 0)) throw new Error(`${label}: ${rows} rows`)
      const [repaint] = [...intervals.values()]
      if (repaint === undefined) throw new Error(`${label}: the dock armed no repaint interval`)
      clockOffset += 1_000
      const before = container.textContent
      const ms = timeSync(() => act(() => repaint()))
      if (container.textContent === before) throw new Error(`${label}: the repaint changed no countdown`)
      act(() => reactRoot.unmount())
      tracking = false
      container.remove()
      if (mount >= WARMUP) repaints.push(ms)
    }
    log(`  ${label}: repaint fastest ${Math.min(...repaints).toFixed(3)} ms`)
    return { label, repaints }
  }
  const layouts = [measure('collapsed summary', false), measure('expanded, 100 rows', true)]
  // Anything React or the dock deferred gets a chance to show up before counting.
  await new Promise((resolve) => realSetTimeout(resolve, 50))
  const left = {
    intervals: intervals.size,
    timeouts: timeouts.size,
    frames,
    documentListeners: documentListeners - listenersBefore,
  }
  log(`  after unmount: ${JSON.stringify(left)}`)
  Date.now = realNow
  window.close()
  return { layouts, left }
}

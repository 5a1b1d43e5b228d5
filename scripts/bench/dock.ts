/**
 * Row 7: the dock component from src/ui/ in jsdom with React 18 (production build). The component
 * is bundled on the fly with the project's own build pieces (tsdown + the CSS
 * modules plugin), React stays external and real. Render is timed from
 * `root.render` inside `flushSync` to the committed DOM; the countdown repaint is the
 * dock's own once-a-second interval callback, captured and run inside `flushSync`
 * one (simulated) second after the render, so every countdown text changes.
 * Every timer and document listener created while mounted is tracked to check
 * that nothing is left running after unmount.
 * @module scripts/bench/dock
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { JSDOM } from 'jsdom'
import { build } from 'tsdown'
import { LOOP_DICTIONARIES, type LoopTranslate } from '../../src/ui/locales.ts'
import { dshCssModules } from '../dsh-client-build.ts'
import { median, timeSync } from './stats.ts'

/** One layout's timings, ms. */
export interface DockPoint {
  readonly label: string
  readonly loops: number
  readonly render: number
  readonly repaint: number
  readonly renderSamples: readonly number[]
  readonly repaintSamples: readonly number[]
}

/** Row 7's result. */
export interface DockResult {
  readonly points: readonly DockPoint[]
  /** Intervals, timeouts, animation frames and document listeners still registered after every unmount. */
  readonly leftAfterUnmount: {
    readonly intervals: number
    readonly timeouts: number
    readonly frames: number
    readonly documentListeners: number
  }
  /** Intervals the dock armed over all mounts (it arms one per visible mount). */
  readonly intervalsArmed: number
}

const ROUNDS = 31
const WARMUP = 5

/** Bundle LoopDock.tsx to an ESM file inside the project (so `react` resolves), CSS modules included. */
async function bundleDock(root: string): Promise<string> {
  const outDir = join(root, 'node_modules', '.cache', 'loop-bench-dock')
  mkdirSync(outDir, { recursive: true })
  await build({
    config: false,
    entry: { dock: join(root, 'src/ui/LoopDock.tsx') },
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

/** The `t` seat as DSH's locale runtime fills it for English: the template with `{name}` placeholders filled in. */
const translate: LoopTranslate = (key, params) => {
  const template = LOOP_DICTIONARIES.en[key]
  return params === undefined
    ? template
    : template.replace(/\{(\w+)\}/g, (match, name: string) => (name in params ? String(params[name]) : match))
}

type Loop = { id: string; prompt: string; time_in_seconds: number; next_at: number }

function loops(count: number): Loop[] {
  const now = Date.now()
  return Array.from({ length: count }, (_, index) => ({
    id: `loop_${index.toString(16).padStart(8, '0')}`,
    prompt: `Check whether the build for branch ${index} is healthy and summarize new failures`,
    time_in_seconds: 30 + index * 7,
    next_at: now + 5_000 + index * 1_300,
  }))
}

/**
 * Run row 7.
 * @param root - the project root.
 * @param log - progress output.
 * @returns the measurements.
 */
export async function runDock(root: string, log: (line: string) => void): Promise<DockResult> {
  const dom = new JSDOM('<!doctype html><html><head></head><body></body></html>', {
    pretendToBeVisual: true,
    url: 'http://localhost/',
  })
  const window = dom.window
  // Only what React DOM and the component touch; Node's own timers stay the timers.
  const globals: Record<string, unknown> = {
    window,
    document: window.document,
    navigator: window.navigator,
    HTMLElement: window.HTMLElement,
    Node: window.Node,
    Element: window.Element,
    MouseEvent: window.MouseEvent,
    KeyboardEvent: window.KeyboardEvent,
  }
  for (const [key, value] of Object.entries(globals))
    Object.defineProperty(globalThis, key, { value, configurable: true, writable: true })

  // Track every interval, timeout, frame and document listener registered while the dock is mounted.
  const intervals = new Map<number, () => void>()
  const timeouts = new Set<ReturnType<typeof setTimeout>>()
  let intervalsArmed = 0
  let nextInterval = 1
  const realSetTimeout = globalThis.setTimeout
  const realClearTimeout = globalThis.clearTimeout
  let tracking = false
  const fakeSetInterval = ((callback: () => void) => {
    intervalsArmed += 1
    const id = nextInterval++
    intervals.set(id, callback)
    return id
  }) as unknown as typeof setInterval
  const fakeClearInterval = ((id: number) => void intervals.delete(id)) as unknown as typeof clearInterval
  for (const target of [globalThis, window] as { setInterval: unknown; clearInterval: unknown }[]) {
    target.setInterval = fakeSetInterval
    target.clearInterval = fakeClearInterval
  }
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
  window.requestAnimationFrame = () => {
    frames += 1
    return frames
  }
  window.cancelAnimationFrame = () => {
    frames -= 1
  }
  let documentListeners = 0
  const addListener = window.document.addEventListener.bind(window.document)
  const removeListener = window.document.removeEventListener.bind(window.document)
  window.document.addEventListener = ((...args: Parameters<typeof addListener>) => {
    documentListeners += 1
    addListener(...args)
  }) as typeof addListener
  window.document.removeEventListener = ((...args: Parameters<typeof removeListener>) => {
    documentListeners -= 1
    removeListener(...args)
  }) as typeof removeListener

  // The dock reads Date.now() on every render; a repaint happens one second after the last one, so the
  // clock is moved one second forward before each timed repaint and every countdown text really changes.
  const realNow = Date.now.bind(Date)
  let clockOffset = 0
  Date.now = () => realNow() + clockOffset

  const file = await bundleDock(root)
  // DSH web ships React's production build (its bundle carries react.production.min.js); measure that one.
  process.env.NODE_ENV = 'production'
  const React = await import('react')
  const { createRoot } = await import('react-dom/client')
  const { LoopDock } = (await import(pathToFileURL(file).href)) as { LoopDock: (props: object) => unknown }
  const { flushSync } = await import('react-dom')
  // The production build has no `act`; flushSync commits synchronously, and React 18 runs the passive
  // effects of a synchronous render before returning, so the repaint interval is armed on return.
  const act = (body: () => void) => flushSync(body)
  const executeCommand = async () => ({ ok: true, value: { commandId: 'c', result: { kind: 'success', text: 'ok' } } })

  // React DOM adds one `selectionchange` listener to the document on its first root, for good: count from after it.
  const warm = createRoot(window.document.createElement('div'))
  act(() => warm.render(null))
  act(() => warm.unmount())
  const listenersBefore = documentListeners
  const measure = (label: string, count: number, expand: boolean): DockPoint => {
    const projection = { loops: loops(count) }
    const props = { useProjection: () => projection, executeCommand, t: translate }
    const renderSamples: number[] = []
    const repaintSamples: number[] = []
    for (let round = 0; round < WARMUP + ROUNDS; round += 1) {
      clockOffset = 0
      const container = window.document.createElement('div')
      window.document.body.appendChild(container)
      tracking = true
      const root = createRoot(container)
      let render = timeSync(() =>
        act(() => {
          root.render(React.createElement(LoopDock as never, props))
        }),
      )
      if (expand) {
        // Expanded: the render includes the click that opens the list (every row mounts then).
        const toggle = container.querySelector('[data-loop-summary] button') as { click(): void } | null
        render += timeSync(() => act(() => toggle!.click()))
      }
      const rows = container.querySelectorAll('[data-loop-row]').length
      if (rows !== (expand || count < 3 ? count : 0)) throw new Error(`${label}: expected ${count} rows, got ${rows}`)
      const [repaint] = [...intervals.values()]
      if (repaint === undefined) throw new Error(`${label}: the dock armed no repaint interval`)
      clockOffset += 1_000
      const before = container.textContent
      const repaintMs = timeSync(() => act(() => repaint()))
      if (container.textContent === before) throw new Error(`${label}: the repaint changed no countdown`)
      act(() => root.unmount())
      tracking = false
      container.remove()
      if (round >= WARMUP) {
        renderSamples.push(render)
        repaintSamples.push(repaintMs)
      }
    }
    const point = {
      label,
      loops: count,
      render: median(renderSamples),
      repaint: median(repaintSamples),
      renderSamples,
      repaintSamples,
    }
    log(`  ${label}: render ${point.render.toFixed(3)} ms, one countdown repaint ${point.repaint.toFixed(3)} ms`)
    return point
  }
  const points = [
    measure('1 loop (row)', 1, false),
    measure('3 loops (collapsed summary)', 3, false),
    measure('3 loops (expanded)', 3, true),
    measure('100 loops (collapsed summary)', 100, false),
    measure('100 loops (expanded, 100 rows)', 100, true),
  ]
  // Give anything React or the dock deferred a chance to show up before counting.
  await new Promise((resolve) => realSetTimeout(resolve, 50))
  const leftAfterUnmount = {
    intervals: intervals.size,
    timeouts: timeouts.size,
    frames,
    documentListeners: documentListeners - listenersBefore,
  }
  log(`  after unmount: ${JSON.stringify(leftAfterUnmount)}; intervals armed ${intervalsArmed}`)
  Date.now = realNow
  window.close()
  return { points, leftAfterUnmount, intervalsArmed }
}

// @vitest-environment jsdom
/**
 * The heartbeat row (src/ui/HeartbeatRow.tsx, on the shared DisclosureRow) in
 * jsdom: a heartbeat as one loop row with its interval known or not, expanded
 * to the exact text the model received, in both languages and across a live
 * switch; every other context row handed back to DSH with DSH's props and
 * seat; the retirement throw when there is no DSH renderer.
 */
import { act, fireEvent, render, screen } from '@testing-library/react'
import { createElement } from 'react'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { languageSource, type Language } from '../support/ui-locale.ts'
import { heartbeatText } from '../support/heartbeat-xml.ts'
import { A, B, D, projectionSource, runAtNow } from '../support/ui-loops.ts'
import type { LoopProjection, LoopRecord } from '../../src/types.ts'
import { renderHeartbeat } from '../../src/shared/heartbeat.ts'
import { ContextNode, type AnyTranslate, type HeartbeatRowProps } from '../../src/ui/HeartbeatRow.tsx'

// Every test runs on fake timers from the test epoch and ends unmounted, on real timers, with every spy restored.
runAtNow()

describe('heartbeat row', () => {
  const heartbeatOf = (record: LoopRecord) => ({
    kind: 'context',
    seq: 12,
    content: [{ type: 'text', text: renderHeartbeat(record) }],
    source: { kind: 'plugin', plugin: 'loop' },
    provenance: { role: 'inject', label: 'loop' },
    form: null,
  })

  /** DSH's own context renderer, as this entry finds it in the registry. */
  const HostContextRow = vi.fn((props: Record<string, unknown>) =>
    createElement('div', { 'data-host-row': '' }, (props.t as AnyTranslate)('message.contextInjection')),
  )

  /** Render one chat node the way the keyed outlet does, with a live language and the loop projection. */
  function renderNode(
    data: unknown,
    loops: readonly LoopRecord[] | undefined,
    options: { language?: Language; host?: boolean } = {},
  ) {
    const languages = languageSource(options.language ?? 'en')
    const source = projectionSource(loops === undefined ? undefined : { loops: [...loops] })
    let active: Language = options.language ?? 'en'
    const hostWords: Record<Language, string> = { en: 'Context injection', zh: '上下文注入' }
    const bindNamespace = vi.fn(
      (ns: string): AnyTranslate =>
        (key) =>
          `${ns}/${key}: ${hostWords[active]}`,
    )
    const shadowedRenderer = vi.fn(() =>
      options.host === false ? undefined : { component: HostContextRow, locale: 'conversation' },
    )
    const kit = {
      sessionId: 'session-5e55',
      useSession: vi.fn(),
      useTurnData: vi.fn(),
      renderMessageImages: vi.fn(),
      cwd: '/work',
    }
    const Outlet = () =>
      createElement(ContextNode, {
        ...kit,
        node: { key: 'input-message:m1', kind: 'context', data },
        t: languages.useSeat(),
        useProjection: source.useProjection,
        shadowedRenderer,
        bindNamespace,
      } as HeartbeatRowProps)
    const view = render(createElement(Outlet))
    return {
      ...view,
      kit,
      bindNamespace,
      shadowedRenderer,
      source,
      setLanguage: (next: Language) =>
        act(() => {
          active = next
          languages.set(next)
        }),
    }
  }

  const toggleOf = () => document.querySelector<HTMLButtonElement>('[data-loop-heartbeat] button')!
  const textOf = () => document.querySelector<HTMLPreElement>('[data-loop-heartbeat-text]')!

  beforeEach(() => {
    HostContextRow.mockClear()
  })

  it('shows a heartbeat as one loop row with its interval and prompt, collapsed', () => {
    const { shadowedRenderer } = renderNode(heartbeatOf(B), [A, B])
    const button = toggleOf()
    expect(button.textContent).toBe('↻Loop heartbeat·every 1m 30s·Summarize new failures▾')
    expect(button.getAttribute('aria-expanded')).toBe('false')
    expect(textOf().hidden).toBe(true)
    expect(button.getAttribute('aria-controls')).toBe(textOf().id)
    expect(document.querySelector(`[title="${B.prompt}"]`)!.textContent).toBe(B.prompt)
    expect(HostContextRow).not.toHaveBeenCalled()
    expect(shadowedRenderer).not.toHaveBeenCalled()
  })

  it('expands to the exact text the model received, and collapses again', () => {
    renderNode(heartbeatOf(A), [A])
    fireEvent.click(toggleOf())
    expect(toggleOf().getAttribute('aria-expanded')).toBe('true')
    expect(toggleOf().textContent!.endsWith('▴')).toBe(true)
    expect(textOf().hidden).toBe(false)
    expect(textOf().textContent).toBe(heartbeatText('loop_aaaa1111', A.prompt))
    expect(screen.getByLabelText('Text the model received')).toBe(textOf())
    fireEvent.click(toggleOf())
    expect(textOf().hidden).toBe(true)
  })

  it('leaves the interval out once the loop is gone or before the projection arrives', () => {
    const { source } = renderNode(heartbeatOf(A), undefined)
    expect(toggleOf().textContent).toBe(`↻Loop heartbeat·${A.prompt}▾`)
    source.set({ loops: [A] })
    expect(toggleOf().textContent).toBe(`↻Loop heartbeat·every 30s·${A.prompt}▾`)
    source.set({ loops: [B] })
    expect(toggleOf().textContent).toBe(`↻Loop heartbeat·${A.prompt}▾`)
    source.set({ loops: 'broken' } as unknown as LoopProjection)
    expect(toggleOf().textContent).toBe(`↻Loop heartbeat·${A.prompt}▾`)
  })

  it('speaks Chinese and follows a language switch live, staying open', () => {
    const { setLanguage } = renderNode(heartbeatOf(D), [D], { language: 'zh' })
    expect(toggleOf().textContent).toBe('↻循环触发·每1小时30分钟·Tidy the changelog▾')
    fireEvent.click(toggleOf())
    expect(screen.getByLabelText('模型收到的文本')).toBe(textOf())
    setLanguage('en')
    expect(toggleOf().textContent).toBe('↻Loop heartbeat·every 1h 30m·Tidy the changelog▴')
    expect(textOf().hidden).toBe(false)
  })

  it('hands every other context row to DSH with the props and the conversation seat DSH would give it', () => {
    const data = {
      kind: 'context',
      content: [{ type: 'text', text: 'Skill catalog' }],
      source: { kind: 'skill-catalog' },
    }
    const { kit, bindNamespace, setLanguage } = renderNode(data, [A])
    expect(document.querySelector('[data-loop-heartbeat]')).toBeNull()
    expect(document.querySelector('[data-host-row]')!.textContent).toBe(
      'conversation/message.contextInjection: Context injection',
    )
    expect(bindNamespace).toHaveBeenCalledWith('conversation')
    const [props] = HostContextRow.mock.calls.at(-1)!
    expect(Object.keys(props).sort()).toEqual([
      'cwd',
      'node',
      'renderMessageImages',
      'sessionId',
      't',
      'useProjection',
      'useSession',
      'useTurnData',
    ])
    expect(props).toMatchObject({ ...kit, node: { key: 'input-message:m1', kind: 'context', data } })
    const before = props.t
    setLanguage('zh')
    expect(document.querySelector('[data-host-row]')!.textContent).toBe(
      'conversation/message.contextInjection: 上下文注入',
    )
    // A new seat after the switch, so DSH's memoized row re-renders.
    expect(HostContextRow.mock.calls.at(-1)![0].t).not.toBe(before)
  })

  it('hands a malformed loop message to DSH too', () => {
    renderNode({ content: [{ type: 'text', text: 'not a heartbeat' }], source: { kind: 'plugin', plugin: 'loop' } }, [
      A,
    ])
    expect(document.querySelector('[data-host-row]')).not.toBeNull()
  })

  it('throws for DSH to retire it when there is no DSH renderer to hand a row to', () => {
    // React reports the render error to the console and to window (jsdom would print it); the throw is the point here.
    const error = vi.spyOn(console, 'error').mockImplementation(() => undefined)
    const quiet = (event: ErrorEvent) => event.preventDefault()
    window.addEventListener('error', quiet)
    expect(() => renderNode({ content: [], source: { kind: 'user' } }, [A], { host: false })).toThrow(
      'dsh-plugin-loop: no DSH context renderer to hand non-heartbeat rows to',
    )
    window.removeEventListener('error', quiet)
    error.mockRestore()
  })
})

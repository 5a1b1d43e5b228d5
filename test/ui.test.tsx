// @vitest-environment jsdom
/**
 * The loop dock (src/ui/LoopsView.tsx, its pure rules in test/ui/dock.test.ts) in
 * jsdom: every state of the ui.md contract in English and Chinese, a live
 * language switch, the exact command lines it sends (once, however fast
 * Confirm is clicked), and proof that rendering and the countdown repaint
 * create no other timer and touch nothing but `useProjection('loop')`, the
 * `t` seat and the command executor.
 */
import { act, cleanup, fireEvent, render, screen, within } from '@testing-library/react'
import { createElement } from 'react'
import { describe, expect, it, vi } from 'vitest'
import { deferred, type Deferred } from './support/ui-deferred.ts'
import { languageSource, type Language } from './support/ui-locale.ts'
import { A, B, C, D, loop, projectionSource, runAtNow } from './support/ui-loops.ts'
import type { LoopProjection, LoopRecord } from '../src/types.ts'
import { LoopsView } from '../src/ui/LoopsView.tsx'
import { REPAINT_MS } from '../src/ui/dock.ts'
import type { LoopsViewProps } from '../src/ui/slot-props.ts'

const SUCCESS = { ok: true, value: { commandId: 'cmd-1', result: { kind: 'success', text: 'Deleted loop_aaaa1111.' } } }

/**
 * Render the dock the way the slot renderer does: the standard session kit
 * (every other hook and action a spy that must stay untouched), the owner
 * share, and this plugin's injected `executeCommand`.
 */
function renderDock(
  loops: readonly LoopRecord[] | undefined,
  execute = vi.fn<(line: string) => Promise<unknown>>(),
  language: Language = 'en',
) {
  const source = projectionSource(loops === undefined ? undefined : { loops: [...loops] })
  const languages = languageSource(language)
  const untouchable = {
    sessionId: 'session-5e55',
    useSession: vi.fn(),
    useInput: vi.fn(),
    useSessions: vi.fn(),
    useWorkspaces: vi.fn(),
    inputActions: { send: vi.fn(), steer: vi.fn(), followUp: vi.fn(), setText: vi.fn() },
    session: { sessionId: 'session-5e55', title: 'A session title' },
    input: { text: '' },
  }
  const props = { ...untouchable, useProjection: source.useProjection, executeCommand: execute }
  // The slot outlet re-renders its entries with a new `t` seat after a language switch.
  const Outlet = () => createElement(LoopsView, { ...props, t: languages.useSeat() } as LoopsViewProps)
  const view = render(createElement(Outlet))
  const untouched = () => {
    for (const spy of [
      untouchable.useSession,
      untouchable.useInput,
      untouchable.useSessions,
      untouchable.useWorkspaces,
      ...Object.values(untouchable.inputActions),
    ]) {
      expect(spy).not.toHaveBeenCalled()
    }
  }
  return {
    ...view,
    source,
    execute,
    untouched,
    setLoops: (next: readonly LoopRecord[]) => source.set({ loops: [...next] }),
    setLanguage: (next: Language) => act(() => languages.set(next)),
  }
}

const dock = () => document.querySelector<HTMLElement>('[data-loop-dock]')
const rows = () => [...document.querySelectorAll<HTMLLIElement>('[data-loop-row]')]
const rowOf = (prompt: string) => rows().find((row) => row.querySelector(`[title="${CSS.escape(prompt)}"]`) !== null)!
const cell = (row: HTMLElement, index: number) => row.children[index]!.textContent
const toggle = () => document.querySelector<HTMLButtonElement>('[data-loop-summary] button')!
/** Click Delete (in `row`, or the only one), then the one Confirm, and let the reply settle. */
const deleteAndConfirm = async (row: HTMLElement = document.body) => {
  fireEvent.click(within(row).getByRole('button', { name: 'Delete' }))
  await act(async () => void fireEvent.click(screen.getByRole('button', { name: 'Confirm' })))
}
const tick = (ms = REPAINT_MS) => act(() => void vi.advanceTimersByTime(ms))
const settle = async (pending: Deferred, outcome: { value: unknown } | { error: unknown }) => {
  await act(async () => {
    if ('value' in outcome) pending.resolve(outcome.value)
    else pending.reject(outcome.error)
    await pending.promise.catch(() => undefined)
  })
}

// Every test runs on fake timers from the test epoch and ends unmounted, on real timers, with every spy restored.
runAtNow()

describe('thresholds', () => {
  it('renders nothing and reserves no space for no projection, no loops or a malformed projection', () => {
    const { container, source } = renderDock(undefined)
    expect(container.innerHTML).toBe('')
    source.set({ loops: [] })
    expect(container.innerHTML).toBe('')
    source.set({ loops: 'broken' } as unknown as LoopProjection)
    expect(container.innerHTML).toBe('')
    expect(vi.getTimerCount()).toBe(0)
  })

  it('renders one row with only interval, countdown, prompt and Delete', () => {
    const { container } = renderDock([A])
    expect(dock()!.dataset.layout).toBe('rows')
    expect(rows()).toHaveLength(1)
    const row = rows()[0]!
    expect(cell(row, 0)).toBe('↻ every 30s')
    expect(cell(row, 1)).toBe('next in 8s')
    expect(cell(row, 2)).toBe('Check whether the build is healthy')
    expect(
      within(row)
        .getAllByRole('button')
        .map((button) => button.textContent),
    ).toEqual(['Delete'])
    expect(row.textContent).toBe('↻ every 30snext in 8sCheck whether the build is healthyDelete')
    expect(container.textContent).not.toMatch(/loop_|session|title/i)
    expect(screen.queryByRole('button', { name: /expand/i })).toBeNull()
  })

  it('renders two rows in projection order', () => {
    renderDock([A, B])
    expect(dock()!.dataset.layout).toBe('rows')
    expect(rows().map((row) => [cell(row, 0), cell(row, 1), cell(row, 2)])).toEqual([
      ['↻ every 30s', 'next in 8s', 'Check whether the build is healthy'],
      ['↻ every 1m 30s', 'next in 20s', 'Summarize new failures'],
    ])
    expect(screen.queryByRole('button', { name: /expand/i })).toBeNull()
  })

  it('collapses three and more into one summary row with an Expand button', () => {
    renderDock([A, B, C, D])
    expect(dock()!.dataset.layout).toBe('summary')
    const summary = document.querySelector('[data-loop-summary]')!
    expect(summary.firstElementChild!.textContent).toBe('↻ 4 active loops · next in 5s')
    const button = screen.getByRole('button', { name: 'Expand' })
    expect(button.textContent).toBe('Expand ▾')
    expect(button.getAttribute('aria-expanded')).toBe('false')
    const list = document.getElementById(button.getAttribute('aria-controls')!)!
    expect(list.tagName).toBe('UL')
    expect(list.hidden).toBe(true)
    expect(rows()).toHaveLength(0)
    expect(document.getElementById(button.getAttribute('aria-describedby')!)!.textContent).toBe(
      '↻ 4 active loops · next in 5s',
    )
  })

  it('expands in place and collapses with the same button', () => {
    renderDock([A, B, C])
    fireEvent.click(screen.getByRole('button', { name: 'Expand' }))
    const button = toggle()
    expect(button.textContent).toBe('Collapse ▴')
    expect(button.getAttribute('aria-expanded')).toBe('true')
    const list = document.getElementById(button.getAttribute('aria-controls')!)!
    expect(list.hidden).toBe(false)
    expect(
      within(list)
        .getAllByRole('listitem')
        .map((row) => cell(row, 2)),
    ).toEqual([A.prompt, B.prompt, C.prompt])
    expect(document.querySelector('[data-loop-summary]')!.firstElementChild!.textContent).toBe(
      '↻ 3 active loops · next in 5s',
    )
    fireEvent.click(button)
    expect(button.getAttribute('aria-expanded')).toBe('false')
    expect(rows()).toHaveLength(0)
  })

  it('collapses on Escape from inside the dock and returns focus to the expand button', () => {
    renderDock([A, B, C])
    fireEvent.click(screen.getByRole('button', { name: 'Expand' }))
    const del = within(rowOf(B.prompt)).getByRole('button', { name: 'Delete' })
    del.focus()
    const seen = vi.fn()
    document.addEventListener('keydown', seen)
    fireEvent.keyDown(del, { key: 'Tab' })
    expect(rows()).toHaveLength(3)
    fireEvent.keyDown(del, { key: 'Escape' })
    document.removeEventListener('keydown', seen)
    expect(rows()).toHaveLength(0)
    expect(toggle().getAttribute('aria-expanded')).toBe('false')
    expect(document.activeElement).toBe(toggle())
    // Tab reached the page; the consumed Escape did not.
    expect(seen.mock.calls.map(([event]) => (event as KeyboardEvent).key)).toEqual(['Tab'])
  })

  it('leaves Escape alone while collapsed', () => {
    renderDock([A, B, C])
    const button = toggle()
    button.focus()
    const seen = vi.fn()
    document.addEventListener('keydown', seen)
    fireEvent.keyDown(button, { key: 'Escape' })
    document.removeEventListener('keydown', seen)
    expect(seen).toHaveBeenCalledOnce()
    expect((seen.mock.calls[0]![0] as KeyboardEvent).defaultPrevented).toBe(false)
  })

  it('collapses on an outside click, returning focus to the expand button when it was in the dock', () => {
    const outside = document.body.appendChild(document.createElement('div'))
    renderDock([A, B, C])
    fireEvent.click(screen.getByRole('button', { name: 'Expand' }))
    fireEvent.click(rows()[0]!)
    expect(rows()).toHaveLength(3) // a click inside keeps it open
    within(rows()[2]!).getByRole('button', { name: 'Delete' }).focus()
    fireEvent.click(outside)
    expect(rows()).toHaveLength(0)
    expect(toggle().getAttribute('aria-expanded')).toBe('false')
    expect(document.activeElement).toBe(toggle())
    // Focus on the page body (nothing focused) also goes back to the button.
    fireEvent.click(toggle())
    ;(document.activeElement as HTMLElement).blur()
    expect(document.activeElement).toBe(document.body)
    fireEvent.click(outside)
    expect(rows()).toHaveLength(0)
    expect(document.activeElement).toBe(toggle())
    outside.remove()
  })

  it('does not steal focus that an outside click moved elsewhere', () => {
    const composer = document.body.appendChild(document.createElement('textarea'))
    renderDock([A, B, C])
    fireEvent.click(screen.getByRole('button', { name: 'Expand' }))
    composer.focus()
    fireEvent.click(composer)
    expect(rows()).toHaveLength(0)
    expect(document.activeElement).toBe(composer)
    composer.remove()
  })

  it('stops listening for outside clicks once collapsed or unmounted', () => {
    const add = vi.spyOn(document, 'addEventListener')
    const remove = vi.spyOn(document, 'removeEventListener')
    const { unmount } = renderDock([A, B, C])
    expect(add).not.toHaveBeenCalled()
    fireEvent.click(screen.getByRole('button', { name: 'Expand' }))
    expect(add.mock.calls.map(([type, , capture]) => [type, capture])).toEqual([['click', true]])
    fireEvent.click(toggle())
    expect(remove.mock.calls.map(([type, , capture]) => [type, capture])).toEqual([['click', true]])
    fireEvent.click(toggle())
    unmount()
    expect(remove).toHaveBeenCalledTimes(2)
  })

  it('follows the projection across the threshold and starts collapsed again at three', () => {
    const { setLoops, container } = renderDock([A])
    expect(rows()).toHaveLength(1)
    setLoops([A, B])
    expect(rows()).toHaveLength(2)
    setLoops([A, B, C])
    expect(rows()).toHaveLength(0)
    fireEvent.click(screen.getByRole('button', { name: 'Expand' }))
    expect(rows()).toHaveLength(3)
    setLoops([A, B])
    expect(dock()!.dataset.layout).toBe('rows')
    expect(rows()).toHaveLength(2)
    setLoops([A, B, D])
    expect(toggle().getAttribute('aria-expanded')).toBe('false')
    expect(rows()).toHaveLength(0)
    setLoops([])
    expect(container.innerHTML).toBe('')
  })
})

describe('intervals, countdowns and prompts', () => {
  it.each([
    [1, 'every 1s'],
    [45, 'every 45s'],
    [60, 'every 1m'],
    [90, 'every 1m 30s'],
    [600, 'every 10m'],
    [3_600, 'every 1h'],
    [5_400, 'every 1h 30m'],
    [3_661, 'every 1h 1m 1s'],
    [86_400, 'every 1d'],
    [90_061, 'every 1d 1h 1m 1s'],
  ])('shows %is as ↻ %s', (seconds, text) => {
    renderDock([loop('loop_x', 'p', seconds, 1_000)])
    expect(cell(rows()[0]!, 0)).toBe(`↻ ${text}`)
  })

  it.each([
    [1_000, 'next in 1s'],
    [1, 'next in 1s'],
    [59_000, 'next in 59s'],
    [125_000, 'next in 2m 5s'],
    [7_200_000, 'next in 2h'],
  ])('counts down %ims as %s', (dueInMs, text) => {
    renderDock([loop('loop_x', 'p', 30, dueInMs)])
    expect(cell(rows()[0]!, 1)).toBe(text)
  })

  it('says overdue in words and marks it, in a row and in the summary', () => {
    renderDock([loop('loop_late', 'Late one', 30, -3_000), A])
    const late = rowOf('Late one')
    const due = late.children[1] as HTMLElement
    expect(due.textContent).toBe('overdue by 3s')
    expect(due.dataset.overdue).toBe('true')
    expect(due.className).toMatch(/overdue/)
    const onTime = rowOf(A.prompt).children[1] as HTMLElement
    expect(onTime.dataset.overdue).toBeUndefined()
    expect(onTime.className).not.toMatch(/overdue/)
    cleanup()
    renderDock([loop('loop_late', 'Late one', 30, -65_000), B, C])
    const summary = document.querySelector<HTMLElement>('[data-loop-summary] > span')!
    expect(summary.textContent).toBe('↻ 3 active loops · overdue by 1m 5s')
    expect(summary.dataset.overdue).toBe('true')
  })

  it('repaints countdowns once a second and nothing else', () => {
    const { source } = renderDock([A, B])
    const renders = source.keys.length
    const seen: string[] = []
    for (let second = 1; second <= 10; second += 1) {
      tick()
      seen.push(cell(rows()[0]!, 1)!)
    }
    expect(seen).toEqual([
      'next in 7s',
      'next in 6s',
      'next in 5s',
      'next in 4s',
      'next in 3s',
      'next in 2s',
      'next in 1s',
      'overdue by 0s',
      'overdue by 1s',
      'overdue by 2s',
    ])
    expect(cell(rows()[1]!, 1)).toBe('next in 10s')
    expect(rows()[0]!.children[1]!.getAttribute('data-overdue')).toBe('true')
    // one render per second, each reading only the loop projection
    expect(source.keys.length - renders).toBe(10)
    expect(new Set(source.keys)).toEqual(new Set(['loop']))
  })

  it('repaints the summary countdown too', () => {
    renderDock([A, B, C])
    tick(2_000)
    expect(document.querySelector('[data-loop-summary] > span')!.textContent).toBe('↻ 3 active loops · next in 3s')
  })

  it('shows a long prompt on one line with the full text in its title and as the Delete description', () => {
    const long = `Check every service in the staging cluster, ${'then look again carefully, '.repeat(20)}and report anything unusual`
    renderDock([loop('loop_long', long, 300, 30_000)])
    const prompt = rows()[0]!.children[2] as HTMLElement
    expect(prompt.textContent).toBe(long)
    expect(prompt.title).toBe(long)
    expect(prompt.className).toMatch(/prompt/)
    const del = screen.getByRole('button', { name: 'Delete' })
    expect(document.getElementById(del.getAttribute('aria-describedby')!)).toBe(prompt)
  })
})

describe('delete', () => {
  it('asks in the row first and sends nothing until confirmed', () => {
    const { execute } = renderDock([A, B])
    const row = rowOf(A.prompt)
    fireEvent.click(within(row).getByRole('button', { name: 'Delete' }))
    expect(execute).not.toHaveBeenCalled()
    expect(within(row).getByRole('status').textContent).toBe('Delete this loop?')
    const confirm = within(row).getByRole('button', { name: 'Confirm' })
    expect(
      within(row)
        .getAllByRole('button')
        .map((button) => button.textContent),
    ).toEqual(['Confirm', 'Cancel'])
    expect(document.activeElement).toBe(confirm)
    expect(confirm.getAttribute('aria-describedby')).toBe(row.children[2]!.id)
    // the other row is untouched
    expect(
      within(rowOf(B.prompt))
        .getAllByRole('button')
        .map((button) => button.textContent),
    ).toEqual(['Delete'])
  })

  it('cancels back to Delete, focused, without sending anything', () => {
    const { execute } = renderDock([A])
    fireEvent.click(screen.getByRole('button', { name: 'Delete' }))
    fireEvent.click(screen.getByRole('button', { name: 'Cancel' }))
    expect(execute).not.toHaveBeenCalled()
    expect(screen.queryByRole('status')).toBeNull()
    expect(document.activeElement).toBe(screen.getByRole('button', { name: 'Delete' }))
  })

  it('sends /loop delete <id>, shows it is working, and keeps the row until the projection drops the loop', async () => {
    const pending = deferred()
    const execute = vi.fn<(line: string) => Promise<unknown>>(() => pending.promise)
    const { setLoops, untouched } = renderDock([A, B], execute)
    fireEvent.click(within(rowOf(A.prompt)).getByRole('button', { name: 'Delete' }))
    const confirm = screen.getByRole('button', { name: 'Confirm' })
    fireEvent.click(confirm)
    expect(execute.mock.calls).toEqual([['/loop delete loop_aaaa1111']])

    const row = rowOf(A.prompt)
    expect(row.getAttribute('aria-busy')).toBe('true')
    expect(within(row).getByRole('status').textContent).toBe('Deleting…')
    const buttons = within(row).getAllByRole('button')
    expect(buttons.map((button) => [button.textContent, button.getAttribute('aria-disabled')])).toEqual([
      ['Confirm', 'true'],
      ['Cancel', 'true'],
    ])
    expect(document.activeElement).toBe(confirm) // focus is not dropped while working
    fireEvent.click(buttons[0]!)
    fireEvent.click(buttons[1]!)
    expect(execute).toHaveBeenCalledOnce()
    expect(rowOf(B.prompt).getAttribute('aria-busy')).toBeNull()

    await settle(pending, { value: SUCCESS })
    expect(rows()).toHaveLength(2)
    expect(rowOf(A.prompt).getAttribute('aria-busy')).toBe('true')
    expect(within(rowOf(A.prompt)).getByRole('status').textContent).toBe('Deleting…')
    expect(screen.queryByRole('alert')).toBeNull()

    setLoops([B])
    expect(rows()).toHaveLength(1)
    expect(cell(rows()[0]!, 2)).toBe(B.prompt)
    // focus moves from the vanished row to the dock's next usable button
    expect(document.activeElement).toBe(screen.getByRole('button', { name: 'Delete' }))
    untouched()
  })

  it('moves focus once after a deleted row leaves, never again on later repaints', async () => {
    const composer = document.body.appendChild(document.createElement('textarea'))
    const { setLoops } = renderDock(
      [A, B],
      vi.fn(async () => SUCCESS),
    )
    await deleteAndConfirm(rowOf(A.prompt))
    setLoops([B])
    expect(document.activeElement).toBe(screen.getByRole('button', { name: 'Delete' }))
    composer.focus()
    tick()
    tick()
    expect(document.activeElement).toBe(composer)
    composer.remove()
  })

  it('forgets the delete state of a loop the projection dropped', () => {
    const { setLoops, source } = renderDock([A, B])
    fireEvent.click(within(rowOf(A.prompt)).getByRole('button', { name: 'Delete' }))
    setLoops([B])
    // Any later delete action prunes states of loops no longer shown.
    fireEvent.click(within(rowOf(B.prompt)).getByRole('button', { name: 'Delete' }))
    fireEvent.click(within(rowOf(B.prompt)).getByRole('button', { name: 'Cancel' }))
    source.set({ loops: [A, B] })
    expect(
      within(rowOf(A.prompt))
        .getAllByRole('button')
        .map((button) => button.textContent),
    ).toEqual(['Delete'])
  })

  it('lets the dock disappear after the last loop is deleted', async () => {
    const { setLoops, container } = renderDock(
      [A],
      vi.fn(async () => SUCCESS),
    )
    await deleteAndConfirm()
    setLoops([])
    expect(container.innerHTML).toBe('')
    expect(vi.getTimerCount()).toBe(0)
  })

  it('does not move focus when the deleted row did not hold it', async () => {
    const outside = document.body.appendChild(document.createElement('input'))
    const { setLoops } = renderDock(
      [A, B],
      vi.fn(async () => SUCCESS),
    )
    await deleteAndConfirm(rowOf(A.prompt))
    outside.focus()
    setLoops([B])
    expect(document.activeElement).toBe(outside)
    outside.remove()
  })

  it('leaves focus alone when the dock has no usable button left', async () => {
    const never = deferred()
    const execute = vi
      .fn<(line: string) => Promise<unknown>>()
      .mockReturnValueOnce(never.promise)
      .mockResolvedValueOnce(SUCCESS)
    const { setLoops } = renderDock([A, B], execute)
    fireEvent.click(within(rowOf(B.prompt)).getByRole('button', { name: 'Delete' }))
    fireEvent.click(within(rowOf(B.prompt)).getByRole('button', { name: 'Confirm' }))
    fireEvent.click(within(rowOf(A.prompt)).getByRole('button', { name: 'Delete' }))
    const confirmA = within(rowOf(A.prompt)).getByRole('button', { name: 'Confirm' })
    await act(async () => void fireEvent.click(confirmA))
    expect(document.activeElement).toBe(confirmA)
    setLoops([B])
    expect(
      within(rows()[0]!)
        .getAllByRole('button')
        .every((button) => button.getAttribute('aria-disabled') === 'true'),
    ).toBe(true)
    expect(document.activeElement).toBe(document.body)
  })

  it('copes with the projection dropping the loop before the reply arrives', async () => {
    const pending = deferred()
    const { setLoops } = renderDock(
      [A, B],
      vi.fn(() => pending.promise),
    )
    fireEvent.click(within(rowOf(A.prompt)).getByRole('button', { name: 'Delete' }))
    fireEvent.click(screen.getByRole('button', { name: 'Confirm' }))
    setLoops([B])
    await settle(pending, { value: SUCCESS })
    expect(rows().map((row) => cell(row, 2))).toEqual([B.prompt])
    expect(
      within(rows()[0]!)
        .getAllByRole('button')
        .map((button) => button.textContent),
    ).toEqual(['Delete'])
  })

  it.each([
    [
      'a rejected command',
      { ok: false, error: { code: 'agent-busy', message: 'agent is busy', details: {} } },
      'Delete failed: agent is busy',
    ],
    [
      'an unknown command',
      { ok: true, value: undefined },
      'Delete failed: the /loop command is not available in this session.',
    ],
    [
      'a command error',
      {
        ok: true,
        value: { commandId: 'cmd-2', result: { kind: 'error', text: 'Session persistence failed: disk full' } },
      },
      'Delete failed: Session persistence failed: disk full',
    ],
    [
      'a malformed result',
      { ok: true, value: { commandId: 'cmd-3', result: { kind: 'done' } } },
      'Delete failed: DSH sent an unexpected reply.',
    ],
    ['a non-object result', 'Deleted', 'Delete failed: DSH sent an unexpected reply.'],
  ])('keeps the row and confirmation on %s, with an alert, and retries', async (_name, reply, message) => {
    const first = deferred()
    const execute = vi
      .fn<(line: string) => Promise<unknown>>()
      .mockReturnValueOnce(first.promise)
      .mockResolvedValueOnce(SUCCESS)
    const { setLoops, untouched } = renderDock([A, B], execute)
    fireEvent.click(within(rowOf(A.prompt)).getByRole('button', { name: 'Delete' }))
    const confirm = screen.getByRole('button', { name: 'Confirm' })
    fireEvent.click(confirm)
    await settle(first, { value: reply })

    const row = rowOf(A.prompt)
    expect(within(row).getByRole('alert').textContent).toBe(message)
    expect(row.getAttribute('aria-busy')).toBeNull()
    expect(within(row).getByRole('status').textContent).toBe('Delete this loop?')
    expect(
      within(row)
        .getAllByRole('button')
        .map((button) => [button.textContent, button.getAttribute('aria-disabled')]),
    ).toEqual([
      ['Confirm', null],
      ['Cancel', null],
    ])
    expect(document.activeElement).toBe(confirm)
    expect(rows()).toHaveLength(2)

    await act(async () => void fireEvent.click(confirm))
    expect(execute.mock.calls).toEqual([['/loop delete loop_aaaa1111'], ['/loop delete loop_aaaa1111']])
    expect(screen.queryByRole('alert')).toBeNull()
    setLoops([B])
    expect(rows()).toHaveLength(1)
    untouched()
  })

  it.each([
    [
      'a rejected promise',
      () => Promise.reject(new Error('client api: commands/execute failed: socket closed')),
      'Delete failed: client api: commands/execute failed: socket closed',
    ],
    [
      'a synchronous throw',
      () => {
        throw 'no connection'
      },
      'Delete failed: no connection',
    ],
  ])('keeps the row and confirmation on %s and lets the user cancel', async (_name, fails, message) => {
    const execute = vi.fn<(line: string) => Promise<unknown>>(fails)
    renderDock([A], execute)
    await deleteAndConfirm()
    expect(screen.getByRole('alert').textContent).toBe(message)
    expect(rows()).toHaveLength(1)
    fireEvent.click(screen.getByRole('button', { name: 'Cancel' }))
    expect(screen.queryByRole('alert')).toBeNull()
    expect(screen.getByRole('button', { name: 'Delete' })).toBe(document.activeElement)
    expect(execute.mock.calls).toEqual([['/loop delete loop_aaaa1111']])
  })

  it('keeps a confirmation across collapse and expand of a long list', () => {
    renderDock([A, B, C])
    fireEvent.click(screen.getByRole('button', { name: 'Expand' }))
    fireEvent.click(within(rowOf(C.prompt)).getByRole('button', { name: 'Delete' }))
    fireEvent.keyDown(document.activeElement!, { key: 'Escape' })
    expect(document.activeElement).toBe(toggle())
    fireEvent.click(toggle())
    expect(
      within(rowOf(C.prompt))
        .getAllByRole('button')
        .map((button) => button.textContent),
    ).toEqual(['Confirm', 'Cancel'])
    expect(document.activeElement).toBe(toggle()) // re-expanding does not jump into the row
  })
})

describe('side effects', () => {
  it('creates only the repaint interval, only while loops are shown, and calls nothing but the executor on delete', async () => {
    const setInterval = vi.spyOn(globalThis, 'setInterval')
    const setTimeout = vi.spyOn(globalThis, 'setTimeout')
    const clearInterval = vi.spyOn(globalThis, 'clearInterval')
    const execute = vi.fn<(line: string) => Promise<unknown>>(async () => SUCCESS)
    const { source, setLoops, untouched, unmount } = renderDock(undefined, execute)
    expect(setInterval).not.toHaveBeenCalled()

    setLoops([A, B, C, D])
    expect(setInterval).toHaveBeenCalledOnce()
    expect(setInterval.mock.calls[0]![1]).toBe(1000)
    expect(vi.getTimerCount()).toBe(1)

    fireEvent.click(screen.getByRole('button', { name: 'Expand' }))
    tick(5_000)
    setLoops([A, B])
    tick(3_000)
    fireEvent.click(within(rowOf(A.prompt)).getByRole('button', { name: 'Delete' }))
    fireEvent.click(screen.getByRole('button', { name: 'Cancel' }))
    expect(vi.getTimerCount()).toBe(1)
    expect(setInterval).toHaveBeenCalledOnce()
    expect(execute).not.toHaveBeenCalled()

    await deleteAndConfirm(rowOf(A.prompt))
    expect(execute.mock.calls).toEqual([['/loop delete loop_aaaa1111']])
    expect(vi.getTimerCount()).toBe(1)

    setLoops([])
    expect(clearInterval).toHaveBeenCalledOnce()
    expect(vi.getTimerCount()).toBe(0)
    setLoops([B])
    expect(setInterval).toHaveBeenCalledTimes(2)
    unmount()
    expect(vi.getTimerCount()).toBe(0)
    expect(setTimeout).not.toHaveBeenCalled()
    expect(new Set(source.keys)).toEqual(new Set(['loop']))
    untouched()
  })
})

describe('languages', () => {
  it('shows every dock string in Chinese', async () => {
    const pending = deferred()
    const execute = vi.fn<(line: string) => Promise<unknown>>(() => pending.promise)
    renderDock([A, B, loop('loop_late', 'Late one', 90, -65_000)], execute, 'zh')
    const summary = document.querySelector('[data-loop-summary]')!
    expect(summary.firstElementChild!.textContent).toBe('↻ 3 个活动循环 · 已逾期1分钟5秒')
    const expand = screen.getByRole('button', { name: '展开' })
    expect(expand.textContent).toBe('展开 ▾')
    fireEvent.click(expand)
    expect(toggle().textContent).toBe('收起 ▴')
    expect(screen.getByRole('list', { name: '活动循环' })).toBeTruthy()
    expect(rows().map((row) => [cell(row, 0), cell(row, 1)])).toEqual([
      ['↻ 每30秒', '8秒后触发'],
      ['↻ 每1分钟30秒', '20秒后触发'],
      ['↻ 每1分钟30秒', '已逾期1分钟5秒'],
    ])
    const row = rowOf(A.prompt)
    fireEvent.click(within(row).getByRole('button', { name: '删除' }))
    expect(within(row).getByRole('status').textContent).toBe('删除此循环？')
    expect(
      within(row)
        .getAllByRole('button')
        .map((button) => button.textContent),
    ).toEqual(['确认', '取消'])
    // Apart from the prompts (the user's own words), not one Latin letter is left, visible or accessible.
    const labels = [...dock()!.querySelectorAll('[aria-label]')].map((element) => element.getAttribute('aria-label'))
    const words = [dock()!.textContent!, ...labels]
      .join(' ')
      .replace(A.prompt, '')
      .replace(B.prompt, '')
      .replace('Late one', '')
    expect(words).not.toMatch(/[A-Za-z]/)
    fireEvent.click(within(row).getByRole('button', { name: '确认' }))
    expect(within(row).getByRole('status').textContent).toBe('正在删除…')
    await settle(pending, { value: { ok: true, value: undefined } })
    expect(within(row).getByRole('alert').textContent).toBe('删除失败：此会话没有 /loop 命令。')
    expect(execute.mock.calls).toEqual([['/loop delete loop_aaaa1111']])
  })

  it('follows a language switch live, keeping expansion, confirmation and errors', async () => {
    const { setLanguage, execute } = renderDock(
      [A, B, C],
      vi.fn(async () => ({ ok: false })),
    )
    fireEvent.click(screen.getByRole('button', { name: 'Expand' }))
    const row = rowOf(B.prompt)
    fireEvent.click(within(row).getByRole('button', { name: 'Delete' }))
    await act(async () => void fireEvent.click(within(row).getByRole('button', { name: 'Confirm' })))
    expect(within(row).getByRole('alert').textContent).toBe('Delete failed: the command was rejected.')
    const list = screen.getByRole('list', { name: 'Active loops' })

    setLanguage('zh')
    // The same elements, now in Chinese: nothing remounted, no state lost.
    expect(screen.getByRole('list', { name: '活动循环' })).toBe(list)
    expect(rowOf(B.prompt)).toBe(row)
    expect(toggle().textContent).toBe('收起 ▴')
    expect(document.querySelector('[data-loop-summary] > span')!.textContent).toBe('↻ 3 个活动循环 · 5秒后触发')
    expect(cell(row, 0)).toBe('↻ 每1分钟30秒')
    expect(within(row).getByRole('status').textContent).toBe('删除此循环？')
    expect(within(row).getByRole('alert').textContent).toBe('删除失败：命令被拒绝。')

    setLanguage('en')
    expect(within(row).getByRole('alert').textContent).toBe('Delete failed: the command was rejected.')
    expect(cell(row, 1)).toBe('next in 20s')
    expect(execute).toHaveBeenCalledOnce()
  })
})

describe('double click on Confirm', () => {
  it('sends exactly one /loop delete when two clicks land before React re-renders', async () => {
    const pending = deferred()
    const execute = vi.fn<(line: string) => Promise<unknown>>(() => pending.promise)
    renderDock([A, B], execute)
    fireEvent.click(within(rowOf(A.prompt)).getByRole('button', { name: 'Delete' }))
    const confirm = screen.getByRole('button', { name: 'Confirm' })
    // Both clicks in one act: React has not re-rendered the disabled Confirm in between, as in one browser frame.
    act(() => {
      confirm.click()
      confirm.click()
    })
    expect(execute.mock.calls).toEqual([['/loop delete loop_aaaa1111']])
    expect(confirm.getAttribute('aria-disabled')).toBe('true')
    await settle(pending, { value: SUCCESS })
    expect(execute).toHaveBeenCalledOnce()
  })

  it('fences each loop on its own and lets a failed delete be retried', async () => {
    const execute = vi
      .fn<(line: string) => Promise<unknown>>()
      .mockResolvedValueOnce({ ok: false })
      .mockReturnValue(deferred().promise)
    renderDock([A, B], execute)
    fireEvent.click(within(rowOf(A.prompt)).getByRole('button', { name: 'Delete' }))
    fireEvent.click(within(rowOf(B.prompt)).getByRole('button', { name: 'Delete' }))
    const confirmA = within(rowOf(A.prompt)).getByRole('button', { name: 'Confirm' })
    const confirmB = within(rowOf(B.prompt)).getByRole('button', { name: 'Confirm' })
    await act(async () => {
      confirmA.click()
      confirmA.click()
      confirmB.click()
      confirmB.click()
    })
    expect(execute.mock.calls).toEqual([['/loop delete loop_aaaa1111'], ['/loop delete loop_bbbb2222']])
    expect(within(rowOf(A.prompt)).getByRole('alert').textContent).toBe('Delete failed: the command was rejected.')
    act(() => {
      confirmA.click()
      confirmA.click()
    })
    expect(execute.mock.calls).toEqual([
      ['/loop delete loop_aaaa1111'],
      ['/loop delete loop_bbbb2222'],
      ['/loop delete loop_aaaa1111'],
    ])
  })
})

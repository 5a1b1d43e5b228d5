// @vitest-environment jsdom
/**
 * The settings card (Settings → Plugins → Plugin configuration) and the tool
 * call rows in jsdom: the staged form over a settings scope whose section
 * resolves through the plugin's real `Config` schema (as the host's settings
 * service does), every card state in English and Chinese, validation equal to
 * the schema, exact writes on Save; and each tool's row (running, done,
 * failed, interrupted, odd blocks) in both languages.
 */
import { act, cleanup, fireEvent, render, screen, within } from '@testing-library/react'
import { createElement, useSyncExternalStore } from 'react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { languageSource, translator, type Language } from './support/ui-locale.ts'
import { Config, DEFAULT_LOOP_CONFIG, type LoopConfig } from '../src/config.ts'
import { LoopSettingsCard, type LoopSettingsCardProps } from '../src/ui/LoopSettingsCard.tsx'
import {
  LOOP_SETTING_FIELDS,
  LOOP_SETTING_RANGES,
  LOOP_SETTING_TOGGLES,
  LoopSettingsForm,
  parseDraft,
  type LoopSettingsCardState,
  type SettingsScopeLike,
  type SettingsScopeSnapshot,
} from '../src/ui/settings-form.ts'
import { ToolCallRow } from '../src/ui/ToolCallRow.tsx'
import { toolCallArgs, toolCallOutput, toolCallState, toolCallSummary, type LoopToolName, type ToolCallBlockLike } from '../src/ui/tool-call.ts'


/**
 * The `Config` schema applied to a partial section: schemastery fills the
 * defaults at run time, while its call signature is typed with the resolved shape.
 */
const resolveSection = Config as unknown as (section: object) => LoopConfig


afterEach(() => cleanup())

/** A promise the test settles by hand. */
function deferred() {
  let resolve!: () => void
  const promise = new Promise<void>((res) => {
    resolve = res
  })
  return { promise, resolve }
}

/**
 * The `loop` section as the host serves it to the browser: the value resolves
 * through the plugin's `Config` schema over the composition layer (`base`)
 * and the user layer; a write the schema refuses leaves the user layer as it
 * was (the host's recovery read), `hold` parks writes until released.
 */
function sectionScope(options: { base?: Record<string, number | boolean>; user?: Record<string, number | boolean>; status?: SettingsScopeSnapshot['status']; writable?: boolean } = {}) {
  const base = options.base ?? { ...DEFAULT_LOOP_CONFIG }
  let user: Record<string, number | boolean> | undefined = options.user
  let status = options.status ?? 'ready'
  const listeners = new Set<() => void>()
  const resolve = (): SettingsScopeSnapshot => ({
    status,
    value: status === 'ready' ? resolveSection({ ...base, ...user }) : undefined,
    base,
    user,
    writable: options.writable ?? true,
  })
  let snapshot = resolve()
  const publish = () => {
    snapshot = resolve()
    for (const listener of [...listeners]) listener()
  }
  const writes: [string, string, unknown?][] = []
  let hold: Promise<void> | undefined
  let throwing = false
  const commit = async (next: Record<string, number | boolean> | undefined) => {
    if (hold !== undefined) await hold
    if (throwing) throw new Error('settings.update: transport closed')
    try {
      resolveSection({ ...base, ...next })
      user = next
    } catch {
      // Refused by the schema: the host keeps the stored section.
    }
    act(() => publish())
  }
  const scope: SettingsScopeLike = {
    getSnapshot: () => snapshot,
    subscribe: (listener) => {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    set: async (field, value) => {
      writes.push(['set', field, value])
      await commit({ ...user, [field]: value as number | boolean })
    },
    unset: async (field) => {
      writes.push(['unset', field])
      const next = { ...user }
      delete next[field]
      await commit(Object.keys(next).length === 0 ? undefined : next)
    },
  }
  return {
    scope,
    writes,
    listeners,
    get user() {
      return user
    },
    /** An external change of the section (another window, a hand edit of settings.yaml). */
    change(next: { user?: Record<string, number | boolean>; status?: SettingsScopeSnapshot['status'] }) {
      if (next.status !== undefined) status = next.status
      if ('user' in next) user = next.user
      act(() => publish())
    },
    hold() {
      const gate = deferred()
      hold = gate.promise
      return () => {
        hold = undefined
        gate.resolve()
      }
    },
    throwOnWrite() {
      throwing = true
    },
  }
}

/** Render the card the way DSH's slot renderer does: `useLoopSettings` bound to the form, its actions, the seat. */
function renderCard(form: LoopSettingsForm, language: Language = 'en') {
  const languages = languageSource(language)
  function Outlet() {
    const props: LoopSettingsCardProps = {
      t: languages.useSeat(),
      useLoopSettings: <S,>(selector: (state: LoopSettingsCardState) => S) => selector(useSyncExternalStore(form.subscribe, form.getSnapshot)),
      edit: form.edit,
      resetField: form.resetField,
      toggle: form.toggle,
      resetToggle: form.resetToggle,
      save: form.save,
      discard: form.discard,
    }
    return createElement('ul', null, createElement(LoopSettingsCard, props))
  }
  const view = render(createElement(Outlet))
  return { ...view, languages }
}

const card = () => document.querySelector<HTMLLIElement>('[data-loop-settings]')
const header = () => card()!.querySelector<HTMLButtonElement>('button[aria-expanded]')!
const input = (label: string) => screen.getByLabelText<HTMLInputElement>(label)
const type = (label: string, text: string) => fireEvent.change(input(label), { target: { value: text } })
const hintOf = (label: string) => document.getElementById(input(label).getAttribute('aria-describedby')!)!.textContent
const button = (name: string) => screen.getByRole<HTMLButtonElement>('button', { name })

describe('settings form', () => {
  it('reads a draft as the schema does: blank clears, digits within the range set, anything else is refused', () => {
    const range = LOOP_SETTING_RANGES.maxLoopsPerSession
    expect(parseDraft('', range)).toEqual({ kind: 'clear' })
    expect(parseDraft('   ', range)).toEqual({ kind: 'clear' })
    expect(parseDraft(' 7 ', range)).toEqual({ kind: 'set', value: 7 })
    expect(parseDraft('1', range)).toEqual({ kind: 'set', value: 1 })
    expect(parseDraft('1000', range)).toEqual({ kind: 'set', value: 1000 })
    expect(parseDraft('007', range)).toEqual({ kind: 'set', value: 7 })
    for (const refused of ['0', '1001', '1.5', '1e3', '-1', '+5', 'ten', '0x10', '٣']) expect(parseDraft(refused, range), refused).toBeUndefined()
  })

  it('accepts exactly what the plugin Config schema accepts', () => {
    for (const field of LOOP_SETTING_FIELDS) {
      const { min, max } = LOOP_SETTING_RANGES[field]
      for (const value of [min, min + 1, max - 1, max]) {
        expect(resolveSection({ [field]: value })[field], `${field}=${value}`).toBe(value)
        expect(parseDraft(String(value), LOOP_SETTING_RANGES[field]), `${field}=${value}`).toEqual({ kind: 'set', value })
      }
      for (const value of [min - 1, max + 1, min + 0.5]) {
        expect(() => resolveSection({ [field]: value }), `${field}=${value}`).toThrow()
        expect(parseDraft(String(value), LOOP_SETTING_RANGES[field]), `${field}=${value}`).toBeUndefined()
      }
    }
    // Every setting of the schema is on the card: the bounds as fields, the switch as a checkbox.
    expect([...LOOP_SETTING_FIELDS, ...LOOP_SETTING_TOGGLES]).toEqual(Object.keys(DEFAULT_LOOP_CONFIG))
    for (const toggle of LOOP_SETTING_TOGGLES) {
      expect(resolveSection({})[toggle]).toBe(true)
      expect(resolveSection({ [toggle]: false })[toggle]).toBe(false)
      expect(() => resolveSection({ [toggle]: 'no' })).toThrow()
    }
  })

  it('shows the effective values, and marks a field overridden by its presence in the user layer, not by its value', () => {
    const host = sectionScope({ user: { maxPromptLength: 4000 } })
    const form = new LoopSettingsForm(host.scope)
    expect(form.getSnapshot()).toEqual<LoopSettingsCardState>({
      available: true,
      writable: true,
      dirty: false,
      invalid: false,
      saving: false,
      failed: false,
      fields: {
        maxLoopsPerSession: { text: '20', overridden: false, invalid: false },
        maxPromptLength: { text: '4000', overridden: true, invalid: false },
      },
      toggles: { resumeOnStart: { checked: true, overridden: false } },
    })
    expect(form.getSnapshot()).toBe(form.getSnapshot())
  })

  it('is unavailable until the host serves the section, and follows the scope until disposed', () => {
    const host = sectionScope({ status: 'loading' })
    const form = new LoopSettingsForm(host.scope)
    expect(form.getSnapshot()).toMatchObject({ available: false, fields: { maxLoopsPerSession: { text: '' } } })
    const stop = form.follow()
    const listener = vi.fn()
    const unsubscribe = form.subscribe(listener)
    host.change({ status: 'ready', user: { maxLoopsPerSession: 5 } })
    expect(listener).toHaveBeenCalledTimes(1)
    expect(form.getSnapshot()).toMatchObject({ available: true, fields: { maxLoopsPerSession: { text: '5', overridden: true } } })
    stop()
    expect(host.listeners.size).toBe(0)
    unsubscribe()
    form.edit('maxLoopsPerSession', '6')
    expect(listener).toHaveBeenCalledTimes(1)
  })

  it('stages edits, blocks Save on a draft the schema refuses, and writes exactly the valid ones', async () => {
    const host = sectionScope()
    const form = new LoopSettingsForm(host.scope)
    form.edit('maxLoopsPerSession', '0')
    expect(form.getSnapshot()).toMatchObject({ dirty: true, invalid: true, fields: { maxLoopsPerSession: { text: '0', overridden: false, invalid: true } } })
    await form.save()
    expect(host.writes).toEqual([])
    form.edit('maxLoopsPerSession', '1')
    form.edit('maxPromptLength', '4000') // equal to the effective value: nothing to write
    expect(form.getSnapshot()).toMatchObject({
      dirty: true,
      invalid: false,
      fields: { maxLoopsPerSession: { text: '1', overridden: true, invalid: false }, maxPromptLength: { text: '4000', overridden: false, invalid: false } },
    })
    await act(() => form.save())
    expect(host.writes).toEqual([['set', 'maxLoopsPerSession', 1]])
    expect(host.user).toEqual({ maxLoopsPerSession: 1 })
    expect(form.getSnapshot()).toMatchObject({ dirty: false, saving: false, failed: false, fields: { maxLoopsPerSession: { text: '1', overridden: true } } })
  })

  it('does nothing on Save with nothing staged, and ignores a second Save while one runs', async () => {
    const host = sectionScope()
    const form = new LoopSettingsForm(host.scope)
    await form.save()
    expect(host.writes).toEqual([])
    form.edit('maxPromptLength', '2000')
    const release = host.hold()
    const first = form.save()
    expect(form.getSnapshot()).toMatchObject({ saving: true, dirty: true })
    await form.save()
    release()
    await act(() => first)
    expect(host.writes).toEqual([['set', 'maxPromptLength', 2000]])
    expect(form.getSnapshot()).toMatchObject({ saving: false, dirty: false, fields: { maxPromptLength: { text: '2000', overridden: true } } })
  })

  it('resets a field to the composition value, clears the override on Save, and treats a blank draft the same', async () => {
    const host = sectionScope({ base: { maxLoopsPerSession: 8, maxPromptLength: 4000 }, user: { maxLoopsPerSession: 3, maxPromptLength: 900 } })
    const form = new LoopSettingsForm(host.scope)
    form.resetField('maxLoopsPerSession')
    expect(form.getSnapshot()).toMatchObject({ dirty: true, fields: { maxLoopsPerSession: { text: '8', overridden: false, invalid: false } } })
    form.edit('maxPromptLength', '  ')
    expect(form.getSnapshot().fields.maxPromptLength).toEqual({ text: '  ', overridden: false, invalid: false })
    await act(() => form.save())
    expect(host.writes).toEqual([
      ['unset', 'maxLoopsPerSession'],
      ['unset', 'maxPromptLength'],
    ])
    expect(host.user).toBeUndefined()
    expect(form.getSnapshot()).toMatchObject({ dirty: false, failed: false, fields: { maxLoopsPerSession: { text: '8', overridden: false }, maxPromptLength: { text: '4000', overridden: false } } })
    // A reset of a field the user layer does not hold writes nothing.
    form.resetField('maxPromptLength')
    expect(form.getSnapshot().dirty).toBe(false)
  })

  it('keeps the drafts and says so when the host did not take a write', async () => {
    const host = sectionScope({ base: { maxLoopsPerSession: 20 } })
    const form = new LoopSettingsForm(host.scope)
    // The host refuses the write (here: its schema, against a composition layer that lacks a field it validates).
    const refusing = sectionScope()
    const refusingForm = new LoopSettingsForm({ ...refusing.scope, set: async () => undefined })
    refusingForm.edit('maxLoopsPerSession', '9')
    await act(() => refusingForm.save())
    expect(refusingForm.getSnapshot()).toMatchObject({ failed: true, dirty: true, fields: { maxLoopsPerSession: { text: '9', overridden: true } } })
    refusingForm.discard()
    expect(refusingForm.getSnapshot()).toMatchObject({ failed: false, dirty: false, fields: { maxLoopsPerSession: { text: '20' } } })
    // A transport failure is a failed save too.
    host.throwOnWrite()
    form.edit('maxLoopsPerSession', '9')
    await act(() => form.save())
    expect(form.getSnapshot()).toMatchObject({ failed: true, dirty: true })
    form.edit('maxLoopsPerSession', '10') // a new edit clears the failure line
    expect(form.getSnapshot().failed).toBe(false)
    // An unset the host did not apply fails as well.
    const stuck = sectionScope({ user: { maxPromptLength: 100 } })
    const stuckForm = new LoopSettingsForm({ ...stuck.scope, unset: async () => undefined })
    stuckForm.resetField('maxPromptLength')
    await act(() => stuckForm.save())
    expect(stuckForm.getSnapshot()).toMatchObject({ failed: true, dirty: true })
  })

  it('discards nothing when nothing is staged', () => {
    const form = new LoopSettingsForm(sectionScope().scope)
    const listener = vi.fn()
    form.subscribe(listener)
    form.discard()
    expect(listener).not.toHaveBeenCalled()
  })
})

describe('settings card', () => {
  it('renders nothing while the host does not serve the loop section', () => {
    renderCard(new LoopSettingsForm(sectionScope({ status: 'unavailable' }).scope))
    expect(card()).toBeNull()
  })

  it('is a collapsed header with title and description that discloses both bounds with Discard and Save', () => {
    renderCard(new LoopSettingsForm(sectionScope().scope))
    expect(header().textContent).toBe('LoopsRecurring prompts created with /loop or by the model.')
    expect(header().getAttribute('aria-label')).toBe('Show settings: Loops')
    expect(header().getAttribute('aria-expanded')).toBe('false')
    expect(screen.queryByRole('textbox')).toBeNull()
    fireEvent.click(header())
    expect(header().getAttribute('aria-expanded')).toBe('true')
    expect(header().getAttribute('aria-label')).toBe('Hide settings: Loops')
    expect(input('Active loops per session').value).toBe('20')
    expect(input('Prompt length (characters)').value).toBe('4000')
    expect(input('Active loops per session').inputMode).toBe('numeric')
    expect(hintOf('Active loops per session')).toBe('From 1 to 1000. Creating one more is refused until a loop is deleted.')
    expect(hintOf('Prompt length (characters)')).toBe('From 1 to 100000. A longer prompt is refused, not cut; every heartbeat repeats the prompt.')
    expect(within(card()!).getAllByRole('button').map((element) => element.textContent)).toEqual([header().textContent, 'Discard', 'Save'])
    expect(button('Discard').disabled).toBe(true)
    expect(button('Save').disabled).toBe(true)
    expect(screen.queryByRole('status')).toBeNull()
    fireEvent.click(header())
    expect(screen.queryByRole('textbox')).toBeNull()
  })

  it('validates as the user types, marks the card Unsaved, saves, and offers Reset once a value is stored', async () => {
    const host = sectionScope()
    const form = new LoopSettingsForm(host.scope)
    renderCard(form)
    fireEvent.click(header())
    type('Active loops per session', '1001')
    expect(input('Active loops per session').getAttribute('aria-invalid')).toBe('true')
    expect(hintOf('Active loops per session')).toBe('Enter a whole number from 1 to 1000, or leave blank to use the default.')
    expect(button('Save').disabled).toBe(true)
    expect(button('Discard').disabled).toBe(false)
    expect(header().textContent).toBe('LoopsRecurring prompts created with /loop or by the model.Unsaved')
    type('Active loops per session', '1')
    expect(input('Active loops per session').getAttribute('aria-invalid')).toBe('false')
    expect(within(card()!).getByText('Overridden')).toBeTruthy()
    const release = host.hold()
    fireEvent.click(button('Save'))
    expect(button('Saving…').disabled).toBe(true)
    expect(button('Discard').disabled).toBe(true)
    await act(async () => release())
    expect(host.writes).toEqual([['set', 'maxLoopsPerSession', 1]])
    expect(button('Save').disabled).toBe(true)
    expect(header().textContent).toBe('LoopsRecurring prompts created with /loop or by the model.')
    fireEvent.click(button('Reset to default'))
    expect(input('Active loops per session').value).toBe('20')
    expect(within(card()!).queryByText('Overridden')).toBeNull()
    fireEvent.click(button('Discard'))
    expect(input('Active loops per session').value).toBe('1')
    expect(within(card()!).getByText('Overridden')).toBeTruthy()
  })

  it('switches resume on start off and back: a checkbox with its hint, saved as a boolean, reset to the composition value', async () => {
    const host = sectionScope()
    const form = new LoopSettingsForm(host.scope)
    renderCard(form)
    fireEvent.click(header())
    const box = () => screen.getByRole('checkbox', { name: 'Resume loops on start' }) as HTMLInputElement
    expect(box().checked).toBe(true)
    expect(document.getElementById(box().getAttribute('aria-describedby')!)!.textContent).toBe(
      'When DSH web starts, bring back every session holding an active loop, so loops keep running across a restart. Each such session is read in full and stays live; every overdue loop fires once, and each heartbeat is a model turn.',
    )
    fireEvent.click(box())
    expect(box().checked).toBe(false)
    expect(form.getSnapshot().toggles.resumeOnStart).toEqual({ checked: false, overridden: true })
    expect(header().textContent).toBe('LoopsRecurring prompts created with /loop or by the model.Unsaved')
    await act(async () => fireEvent.click(button('Save')))
    expect(host.writes).toEqual([['set', 'resumeOnStart', false]])
    expect(host.user).toEqual({ resumeOnStart: false })
    expect(form.getSnapshot()).toMatchObject({ dirty: false, toggles: { resumeOnStart: { checked: false, overridden: true } } })
    // Checking it again writes true (an explicit override, like any stored field); Reset clears it.
    fireEvent.click(box())
    expect(form.getSnapshot()).toMatchObject({ dirty: true, toggles: { resumeOnStart: { checked: true, overridden: true } } })
    fireEvent.click(button('Discard'))
    fireEvent.click(button('Reset to default'))
    expect(form.getSnapshot()).toMatchObject({ dirty: true, toggles: { resumeOnStart: { checked: true, overridden: false } } })
    await act(async () => fireEvent.click(button('Save')))
    expect(host.writes).toEqual([['set', 'resumeOnStart', false], ['unset', 'resumeOnStart']])
    expect(host.user).toBeUndefined()
    // Staging the value it already has, or a reset of nothing stored, writes nothing.
    fireEvent.click(box())
    fireEvent.click(box())
    form.resetToggle('resumeOnStart')
    expect(form.getSnapshot()).toMatchObject({ dirty: false, toggles: { resumeOnStart: { checked: true, overridden: false } } })
  })

  it('says when the host did not accept the values, and is read-only where the deployment is', async () => {
    const host = sectionScope()
    host.throwOnWrite()
    renderCard(new LoopSettingsForm(host.scope))
    fireEvent.click(header())
    type('Prompt length (characters)', '500')
    await act(async () => fireEvent.click(button('Save')))
    expect(screen.getByRole('status').textContent).toBe('The deployment did not accept these values; they were left for you to correct.')
    expect(input('Prompt length (characters)').value).toBe('500')
    cleanup()

    renderCard(new LoopSettingsForm(sectionScope({ writable: false, user: { maxLoopsPerSession: 4 } }).scope))
    fireEvent.click(header())
    expect(screen.getByRole('status').textContent).toBe('This deployment stores settings read-only.')
    expect(input('Active loops per session').disabled).toBe(true)
    expect(input('Prompt length (characters)').disabled).toBe(true)
    expect(button('Reset to default').disabled).toBe(true)
  })

  it('speaks Chinese, with no Latin letter but /loop, and follows a live switch in place', async () => {
    const host = sectionScope({ user: { maxLoopsPerSession: 3 } })
    host.throwOnWrite()
    const { languages } = renderCard(new LoopSettingsForm(host.scope), 'zh')
    expect(header().getAttribute('aria-label')).toBe('展开设置: 定时循环')
    fireEvent.click(header())
    type('提示词长度上限（字符）', '0')
    expect(hintOf('提示词长度上限（字符）')).toBe('请填写 1 到 100000 之间的整数；留空表示使用默认值。')
    expect(hintOf('每个会话的循环上限')).toBe('1 到 1000。达到上限后，需先删除一个循环才能再创建。')
    type('提示词长度上限（字符）', '100')
    await act(async () => fireEvent.click(button('保存')))
    expect(screen.getByRole('status').textContent).toBe('本部署没有接受这些值，已保留供你修改。')
    expect(within(card()!).getAllByRole('button').map((element) => element.textContent)).toEqual(['定时循环通过 /loop 或由模型创建的定时重复提示。未保存', '恢复默认', '恢复默认', '放弃修改', '保存'])
    const words = [card()!.textContent!, ...[...card()!.querySelectorAll('[aria-label]')].map((element) => element.getAttribute('aria-label'))].join(' ')
    expect(words.replace(/\/loop/g, '')).not.toMatch(/[A-Za-z]/)
    const before = card()
    act(() => languages.set('en'))
    expect(card()).toBe(before)
    expect(header().getAttribute('aria-label')).toBe('Hide settings: Loops')
    expect(screen.getByRole('status').textContent).toBe('The deployment did not accept these values; they were left for you to correct.')
    expect(input('Prompt length (characters)').value).toBe('100')
  })
})

/** A call block as DSH's tool view passes it: running (no `kind`) or settled. */
const running = (argsRaw: string): ToolCallBlockLike => ({ callId: 'call-1', argsRaw })
const settled = (argsRaw: string | null, content: NonNullable<ToolCallBlockLike['content']>, extra: Partial<ToolCallBlockLike> = {}): ToolCallBlockLike => ({
  callId: 'call-1',
  kind: 'tool-result',
  call: argsRaw === null ? null : { argsRaw },
  content,
  isError: false,
  ...extra,
})
const CREATE_ARGS = JSON.stringify({ time_in_seconds: 300, prompt: 'Check whether CI is green' })
const CREATED = '{"id":"loop_1a2b3c4d","prompt":"Check whether CI is green","time_in_seconds":300}'

function renderRow(tool: LoopToolName, block: ToolCallBlockLike, language: Language = 'en') {
  const languages = languageSource(language)
  function Outlet() {
    return createElement(ToolCallRow, { loopTool: tool, block, t: languages.useSeat() })
  }
  return { ...render(createElement(Outlet)), languages }
}
const rowButton = () => document.querySelector<HTMLButtonElement>('[data-loop-tool] button')!

describe('tool call rows', () => {
  it('reads a created loop as "Create loop · every 5m · <prompt>", expanding to what the tool returned', () => {
    const { languages } = renderRow('loop_create', settled(CREATE_ARGS, [{ type: 'text', text: CREATED }]))
    const row = document.querySelector('[data-loop-tool="loop_create"]')!
    expect(row.getAttribute('data-state')).toBe('ok')
    expect(rowButton().textContent).toBe('↻Create loop·every 5m·Check whether CI is green▾')
    expect(rowButton().getAttribute('aria-expanded')).toBe('false')
    const result = document.getElementById(rowButton().getAttribute('aria-controls')!)!
    expect(result.hidden).toBe(true)
    expect(result.getAttribute('aria-label')).toBe('What the tool returned to the model')
    expect(result.textContent).toBe(CREATED)
    fireEvent.click(rowButton())
    expect(result.hidden).toBe(false)
    expect(rowButton().textContent).toBe('↻Create loop·every 5m·Check whether CI is green▴')
    act(() => languages.set('zh'))
    expect(rowButton().textContent).toBe('↻创建循环·每5分钟·Check whether CI is green▴')
    expect(result.getAttribute('aria-label')).toBe('工具返回给模型的结果')
    fireEvent.click(rowButton())
    expect(result.hidden).toBe(true)
  })

  it('shows a running call from its arguments so far, not expandable, and says it runs', () => {
    renderRow('loop_create', running('{"time_in_seconds": 90, "prompt": "Tidy\\nthe changelog"}'), 'zh')
    expect(document.querySelector('[data-loop-tool]')!.getAttribute('data-state')).toBe('running')
    expect(rowButton().textContent).toBe('↻创建循环·每1分钟30秒·Tidy运行中')
    expect(rowButton().disabled).toBe(true)
    expect(rowButton().hasAttribute('aria-expanded')).toBe(false)
    expect(document.querySelector('pre')).toBeNull()
    cleanup()
    // Arguments still streaming do not parse yet: the title alone.
    renderRow('loop_create', running('{"time_in_seco'))
    expect(rowButton().textContent).toBe('↻Create loopRunning')
  })

  it('shows a failure by its first line in place of the summary, and an interrupted call as such', () => {
    const error = 'loop_create: time_in_seconds must be a whole number from 1 to 31536000.\nGot 0.'
    renderRow('loop_create', settled('{"time_in_seconds":0,"prompt":"x"}', [{ type: 'text', text: error }], { isError: true }))
    expect(document.querySelector('[data-loop-tool]')!.getAttribute('data-state')).toBe('error')
    expect(rowButton().textContent).toBe('↻Create loop·loop_create: time_in_seconds must be a whole number from 1 to 31536000.Failed▾')
    expect(document.querySelector('pre')!.textContent).toBe(error)
    cleanup()
    renderRow('loop_delete', settled('{"id":"loop_1a2b3c4d"}', [], { isError: true, error: { name: 'ToolError', code: 'interrupted' } }), 'zh')
    expect(document.querySelector('[data-loop-tool]')!.getAttribute('data-state')).toBe('stopped')
    expect(rowButton().textContent).toBe('↻删除循环·loop_1a2b3c4d已中断▾')
    expect(document.querySelector('pre')!.textContent).toBe('ToolError: interrupted')
  })

  it('titles a list call alone and a delete call with its loop id', () => {
    renderRow('loop_list', settled('{}', [{ type: 'text', text: '[]' }]))
    expect(rowButton().textContent).toBe('↻List loops▾')
    cleanup()
    renderRow('loop_list', settled('{}', [{ type: 'text', text: '[]' }]), 'zh')
    expect(rowButton().textContent).toBe('↻列出循环▾')
    cleanup()
    renderRow('loop_delete', settled('{"id":"loop_1a2b3c4d"}', [{ type: 'text', text: '{"deleted":true}' }]))
    expect(rowButton().textContent).toBe('↻Delete loop·loop_1a2b3c4d▾')
  })

  it('reads odd blocks defensively', () => {
    const t = translator('en')
    // Arguments: a dropped call head, JSON that is not an object, and values of the wrong type.
    expect(toolCallArgs(settled(null, []))).toEqual({})
    expect(toolCallArgs(running('[1,2]'))).toEqual({})
    expect(toolCallArgs(running('null'))).toEqual({})
    expect(toolCallArgs(running(''))).toEqual({})
    expect(toolCallArgs({ callId: 'c' })).toEqual({})
    expect(toolCallSummary(t, 'loop_create', { time_in_seconds: 1.5, prompt: '  ' })).toEqual([])
    expect(toolCallSummary(t, 'loop_create', { time_in_seconds: 0, prompt: 7 })).toEqual([])
    expect(toolCallSummary(t, 'loop_create', { time_in_seconds: '60', prompt: 'a' })).toEqual(['a'])
    expect(toolCallSummary(t, 'loop_create', { time_in_seconds: 3_661 })).toEqual(['every 1h 1m 1s'])
    expect(toolCallSummary(t, 'loop_delete', { id: '' })).toEqual([])
    expect(toolCallSummary(t, 'loop_delete', { id: 7 })).toEqual([])
    expect(toolCallSummary(t, 'loop_list', { id: 'loop_x' })).toEqual([])
    // Output: text verbatim, other blocks as JSON, nothing at all as no output.
    expect(toolCallOutput(running('{}'))).toBeNull()
    expect(toolCallOutput(settled('{}', [{ type: 'text', text: 'a' }, { type: 'image' }, { type: 'text' }]))).toBe('a\n{\n  "type": "image"\n}\n')
    expect(toolCallOutput(settled('{}', []))).toBeNull()
    expect(toolCallOutput({ callId: 'c', kind: 'tool-result' })).toBeNull()
    // State: settled without isError is ok.
    expect(toolCallState({ callId: 'c', kind: 'tool-result' })).toBe('ok')
    // A settled call with nothing to show cannot be expanded.
    renderRow('loop_list', settled('{}', []))
    expect(rowButton().disabled).toBe(true)
    expect(rowButton().textContent).toBe('↻List loops')
  })
})

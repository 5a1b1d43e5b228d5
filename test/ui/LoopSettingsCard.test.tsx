// @vitest-environment jsdom
/**
 * The settings card (Settings → Plugins → Plugin configuration,
 * src/ui/LoopSettingsCard.tsx) in jsdom over the staged form and a settings
 * scope that resolves through the plugin's schema: every card state in
 * English and Chinese, a hand-edited invalid value shown as invalid, edits
 * typed while saving kept, and a live language switch in place.
 */
import { act, cleanup, fireEvent, render, screen, within } from '@testing-library/react'
import { createElement, useSyncExternalStore } from 'react'
import { afterEach, describe, expect, it } from 'vitest'
import { languageSource, type Language } from '../support/ui-locale.ts'
import { sectionScope } from '../support/ui-settings-scope.ts'
import { LoopSettingsCard, type LoopSettingsCardProps } from '../../src/ui/LoopSettingsCard.tsx'
import { LoopSettingsForm, type LoopSettingsCardState } from '../../src/ui/settings-form.ts'

afterEach(() => cleanup())

/** Render the card the way DSH's slot renderer does: `useLoopSettings` bound to the form, its actions, the seat. */
function renderCard(form: LoopSettingsForm, language: Language = 'en') {
  const languages = languageSource(language)
  function Outlet() {
    const props: LoopSettingsCardProps = {
      t: languages.useSeat(),
      useLoopSettings: <S,>(selector: (state: LoopSettingsCardState) => S) =>
        selector(useSyncExternalStore(form.subscribe, form.getSnapshot)),
      edit: form.edit,
      resetField: form.resetField,
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
    expect(hintOf('Active loops per session')).toBe(
      'From 1 to 1000. Creating one more is refused until a loop is deleted.',
    )
    expect(hintOf('Prompt length (characters)')).toBe(
      'From 1 to 100000. A longer prompt is refused, not cut; every heartbeat repeats the prompt.',
    )
    expect(
      within(card()!)
        .getAllByRole('button')
        .map((element) => element.textContent),
    ).toEqual([header().textContent, 'Discard', 'Save'])
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
    expect(hintOf('Active loops per session')).toBe(
      'Enter a whole number from 1 to 1000, or leave blank to use the default.',
    )
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

  it('shows a hand-edited invalid value as invalid, and still saves another field', async () => {
    const host = sectionScope({ user: { maxLoopsPerSession: 0 } })
    const form = new LoopSettingsForm(host.scope)
    renderCard(form)
    fireEvent.click(header())
    // The stored value itself, not the last good one the plugin applies meanwhile.
    expect(input('Active loops per session').value).toBe('0')
    expect(input('Active loops per session').getAttribute('aria-invalid')).toBe('true')
    expect(hintOf('Active loops per session')).toBe(
      'The settings file holds an invalid value here; the last valid one applies until you fix it. Enter a whole number from 1 to 1000, or leave blank to use the default.',
    )
    expect(within(card()!).getByText('Overridden')).toBeTruthy()
    expect(form.getSnapshot()).toMatchObject({
      dirty: false,
      invalid: false,
      fields: { maxLoopsPerSession: { text: '0', overridden: true, invalid: true, invalidStored: true } },
    })
    type('Prompt length (characters)', '500')
    expect(button('Save').disabled).toBe(false)
    await act(async () => fireEvent.click(button('Save')))
    expect(host.writes).toEqual([['set', 'maxPromptLength', 500]])
    expect(host.user).toEqual({ maxLoopsPerSession: 0, maxPromptLength: 500 })
    expect(screen.queryByRole('status')).toBeNull()
    expect(input('Active loops per session').getAttribute('aria-invalid')).toBe('true')
    // Typing the same invalid text is still the document's value; a valid one is a draft that fixes it.
    type('Active loops per session', '0')
    expect(hintOf('Active loops per session')).toMatch(/^The settings file holds an invalid value here/)
    type('Active loops per session', '9')
    expect(input('Active loops per session').getAttribute('aria-invalid')).toBe('false')
    await act(async () => fireEvent.click(button('Save')))
    expect(host.writes.at(-1)).toEqual(['set', 'maxLoopsPerSession', 9])
    expect(hintOf('Active loops per session')).toBe(
      'From 1 to 1000. Creating one more is refused until a loop is deleted.',
    )
  })

  it('shows other hand-edited values as they are stored: a quoted number as JSON, an empty value as blank', () => {
    const host = sectionScope({
      user: { maxLoopsPerSession: '5' as unknown as number, maxPromptLength: null as unknown as number },
    })
    renderCard(new LoopSettingsForm(host.scope), 'zh')
    fireEvent.click(header())
    expect(input('每个会话的循环上限').value).toBe('"5"')
    expect(hintOf('每个会话的循环上限')).toBe(
      '设置文件中的这个值无效，正在沿用上一个有效值。请填写 1 到 1000 之间的整数；留空表示使用默认值。',
    )
    expect(input('提示词长度上限（字符）').value).toBe('')
    expect(input('提示词长度上限（字符）').getAttribute('aria-invalid')).toBe('false')
  })

  it('keeps what the user types while Saving…', async () => {
    const host = sectionScope()
    const form = new LoopSettingsForm(host.scope)
    renderCard(form)
    fireEvent.click(header())
    type('Active loops per session', '5')
    const release = host.hold()
    fireEvent.click(button('Save'))
    expect(button('Saving…').disabled).toBe(true)
    type('Prompt length (characters)', '700')
    type('Active loops per session', '6')
    await act(async () => release())
    expect(host.writes).toEqual([['set', 'maxLoopsPerSession', 5]])
    expect(input('Prompt length (characters)').value).toBe('700')
    expect(input('Active loops per session').value).toBe('6')
    expect(header().textContent).toBe('LoopsRecurring prompts created with /loop or by the model.Unsaved')
    await act(async () => fireEvent.click(button('Save')))
    expect(host.writes).toEqual([
      ['set', 'maxLoopsPerSession', 5],
      ['set', 'maxLoopsPerSession', 6],
      ['set', 'maxPromptLength', 700],
    ])
    expect(form.getSnapshot()).toMatchObject({
      dirty: false,
      fields: { maxLoopsPerSession: { text: '6' }, maxPromptLength: { text: '700' } },
    })
  })

  it('says when the host did not accept the values, and is read-only where the deployment is', async () => {
    const host = sectionScope()
    host.throwOnWrite()
    renderCard(new LoopSettingsForm(host.scope))
    fireEvent.click(header())
    type('Prompt length (characters)', '500')
    await act(async () => fireEvent.click(button('Save')))
    expect(screen.getByRole('status').textContent).toBe(
      'The deployment did not accept these values; they were left for you to correct.',
    )
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
    expect(
      within(card()!)
        .getAllByRole('button')
        .map((element) => element.textContent),
    ).toEqual(['定时循环通过 /loop 或由模型创建的定时重复提示。未保存', '恢复默认', '恢复默认', '放弃修改', '保存'])
    const words = [
      card()!.textContent!,
      ...[...card()!.querySelectorAll('[aria-label]')].map((element) => element.getAttribute('aria-label')),
    ].join(' ')
    expect(words.replace(/\/loop/g, '')).not.toMatch(/[A-Za-z]/)
    const before = card()
    act(() => languages.set('en'))
    expect(card()).toBe(before)
    expect(header().getAttribute('aria-label')).toBe('Hide settings: Loops')
    expect(screen.getByRole('status').textContent).toBe(
      'The deployment did not accept these values; they were left for you to correct.',
    )
    expect(input('Prompt length (characters)').value).toBe('100')
  })
})

// @vitest-environment jsdom
/**
 * One text per setting: what the host's `Config` describes each field with
 * (src/config.ts, the README's configuration table) is what the Settings card
 * shows as that field's hint after its range, in both languages; both come
 * from src/shared/settings-text.ts.
 */
import { cleanup, fireEvent, render, screen } from '@testing-library/react'
import { createElement } from 'react'
import { afterEach, describe, expect, it } from 'vitest'
import { Config } from '../../src/config.ts'
import { LOOP_SETTING_RANGES } from '../../src/shared/limits.ts'
import { LOOP_SETTING_TEXTS } from '../../src/shared/settings-text.ts'
import { LoopSettingsCard } from '../../src/ui/LoopSettingsCard.tsx'
import { LOOP_SETTING_FIELDS, LoopSettingsForm, type LoopSettingsCardState } from '../../src/ui/settings-form.ts'
import { translator, type Language } from '../support/ui-locale.ts'
import { sectionScope } from '../support/ui-settings-scope.ts'

afterEach(() => cleanup())

/** Each field's description in `Config`, by language. */
const fields = (Config as unknown as { dict: Record<string, { meta: { description?: Record<string, string> } }> }).dict

/** The card, open, in one language: each field's hint by field. */
function cardHints(language: Language): Record<string, string> {
  const form = new LoopSettingsForm(sectionScope().scope)
  const props = {
    t: translator(language),
    useLoopSettings: <S,>(selector: (state: LoopSettingsCardState) => S) => selector(form.getSnapshot()),
    edit: form.edit,
    resetField: form.resetField,
    save: form.save,
    discard: form.discard,
  }
  render(createElement('ul', null, createElement(LoopSettingsCard, props)))
  fireEvent.click(document.querySelector('[data-loop-settings] button[aria-expanded]')!)
  const inputs = screen.getAllByRole('textbox')
  expect(inputs).toHaveLength(LOOP_SETTING_FIELDS.length)
  return Object.fromEntries(
    LOOP_SETTING_FIELDS.map((field, index) => [
      field,
      document.getElementById(inputs[index]!.getAttribute('aria-describedby')!)!.textContent!,
    ]),
  )
}

describe('one text per setting', () => {
  for (const language of ['en', 'zh'] as const) {
    it(`shows in ${language} the same text in Config and on the Settings card`, () => {
      const t = translator(language)
      const hints = cardHints(language)
      expect(Object.keys(fields)).toEqual(Object.keys(LOOP_SETTING_TEXTS[language]))
      for (const [field, schema] of Object.entries(fields)) {
        const text = LOOP_SETTING_TEXTS[language][field as keyof typeof LOOP_SETTING_TEXTS.en]
        expect(schema.meta.description?.[language], field).toBe(text)
        const { min, max } = LOOP_SETTING_RANGES[field as keyof typeof LOOP_SETTING_RANGES]
        expect(hints[field], field).toBe(t('settings.hint', { min, max, text }))
        expect(hints[field]!.endsWith(text), field).toBe(true)
      }
    })
  }
})

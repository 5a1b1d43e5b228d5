/**
 * What each setting does, in the plugin's two languages: the one text both
 * surfaces show. The host's `Config` carries it as each field's description
 * (`../config.ts`, `.i18n`; the README's configuration table quotes it), and the
 * Settings card shows it as the field's hint after its range (`ui/locales.ts`
 * puts it in the `loop` dictionaries). Host-free (only a type import), so both
 * bundles read the same words.
 * @module dsh-plugin-loop/settings-text
 */
import type { LoopConfig } from './limits.ts'

/** One sentence per setting. */
export type LoopSettingTexts = { readonly [Field in keyof LoopConfig]: string }

/** The settings' texts, by language (the languages of the `loop` dictionaries). */
export const LOOP_SETTING_TEXTS: { readonly en: LoopSettingTexts; readonly zh: LoopSettingTexts } = Object.freeze({
  en: Object.freeze({
    maxLoopsPerSession: 'Creating one more is refused until a loop is deleted.',
    maxPromptLength: 'A longer prompt is refused, not cut; every heartbeat repeats the prompt.',
  }),
  zh: Object.freeze({
    maxLoopsPerSession: '达到上限后，需先删除一个循环才能再创建。',
    maxPromptLength: '超长的提示词会被拒绝而不是截断；每次触发都会重复发送提示词。',
  }),
})

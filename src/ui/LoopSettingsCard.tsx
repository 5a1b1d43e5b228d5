/**
 * The plugin's card in DSH's Settings → Plugins → Plugin configuration: a
 * header naming the plugin and what its settings govern, disclosing the two
 * bounds in place (`maxLoopsPerSession`, `maxPromptLength`) with Discard and
 * Save. Built like the host's own cards (`@deepseek-ai/dsh-client-ui-settings-plugins`
 * rc.8 `PluginCard` and `ValueField`, which that package does not export):
 * disclosure is card-local state, staged edits outlive collapsing and mark the
 * header `Unsaved`, and the card renders nothing while the host does not serve
 * the `loop` namespace. Every word comes from the `loop` dictionaries.
 * @module dsh-plugin-loop/ui/LoopSettingsCard
 */
import { useId, useState } from 'react'
import styles from './LoopSettingsCard.module.css'
import { LOOP_SETTING_RANGES } from '../shared/limits.ts'
import type { LoopLocaleKey, LoopTranslate } from './locales.ts'
import {
  LOOP_SETTING_FIELDS,
  type LoopSettingField,
  type LoopSettingFieldState,
  type LoopSettingsActions,
  type LoopSettingsCardState,
} from './settings-form.ts'

/** The card's props: the `loop` seat, the state hook DSH binds from the injected store, and the form actions. */
export interface LoopSettingsCardProps extends LoopSettingsActions {
  readonly t: LoopTranslate
  /** `use<Name>` hook the slot renderer makes of the injected `hooks.loopSettings` store. */
  readonly useLoopSettings: <S>(selector: (state: LoopSettingsCardState) => S) => S
}

const FIELD_WORDS: {
  readonly [Field in LoopSettingField]: { readonly label: LoopLocaleKey; readonly hint: LoopLocaleKey }
} = {
  maxLoopsPerSession: { label: 'settings.maxLoopsPerSession', hint: 'settings.maxLoopsPerSessionHint' },
  maxPromptLength: { label: 'settings.maxPromptLength', hint: 'settings.maxPromptLengthHint' },
}

const selectAll = (state: LoopSettingsCardState): LoopSettingsCardState => state

/**
 * Render the loop card.
 * @param props - the seat, the card state hook, and the form actions.
 * @returns the card, or nothing while the namespace is not served.
 */
export function LoopSettingsCard(props: LoopSettingsCardProps) {
  const { t } = props
  const state = props.useLoopSettings(selectAll)
  const [open, setOpen] = useState(false)
  const idPrefix = useId()
  if (!state.available) return null
  const title = t('settings.title')
  return (
    <li className={open ? `${styles.card} ${styles.cardOpen}` : styles.card} data-loop-settings="">
      <button
        type="button"
        className={styles.header}
        aria-expanded={open}
        aria-label={`${t(open ? 'settings.collapse' : 'settings.expand')}: ${title}`}
        onClick={() => setOpen(!open)}
      >
        <span className={styles.headText}>
          <span className={styles.name}>{title}</span>
          <span className={styles.description}>{t('settings.description')}</span>
        </span>
        {state.dirty ? <span className={styles.pending}>{t('settings.unsaved')}</span> : null}
        <svg
          className={open ? `${styles.chevron} ${styles.chevronOpen}` : styles.chevron}
          width="14"
          height="14"
          viewBox="0 0 14 14"
          aria-hidden="true"
        >
          <path
            d="M3 5.25 7 9.25 11 5.25"
            fill="none"
            stroke="currentColor"
            strokeWidth="1.4"
            strokeLinecap="round"
            strokeLinejoin="round"
          />
        </svg>
      </button>
      {open ? (
        <div className={styles.body}>
          {state.writable ? null : (
            <p className={styles.readOnly} role="status">
              {t('settings.readOnly')}
            </p>
          )}
          {LOOP_SETTING_FIELDS.map((field) => (
            <SettingField
              key={field}
              id={`${idPrefix}-${field}`}
              field={field}
              state={state.fields[field]}
              disabled={!state.writable}
              t={t}
              edit={props.edit}
              resetField={props.resetField}
            />
          ))}
          <div className={styles.footer}>
            {state.failed ? (
              <p className={styles.failed} role="status">
                {t('settings.saveFailed')}
              </p>
            ) : null}
            <button
              type="button"
              className={styles.discard}
              disabled={!state.dirty || state.saving}
              onClick={props.discard}
            >
              {t('settings.discard')}
            </button>
            <button
              type="button"
              className={styles.save}
              disabled={!state.dirty || state.invalid || state.saving}
              onClick={() => void props.save()}
            >
              {t(state.saving ? 'settings.saving' : 'settings.save')}
            </button>
          </div>
        </div>
      ) : null}
    </li>
  )
}

interface SettingFieldProps extends Pick<LoopSettingsCardProps, 't' | 'edit' | 'resetField'> {
  readonly id: string
  readonly field: LoopSettingField
  readonly state: LoopSettingFieldState
  readonly disabled: boolean
}

/** One bound: label, override badge and reset, the text input (digits keypad), and the hint or the range error. */
function SettingField({ id, field, state, disabled, t, edit, resetField }: SettingFieldProps) {
  const { min, max } = LOOP_SETTING_RANGES[field]
  const hintId = `${id}-hint`
  return (
    <div className={styles.field}>
      <div className={styles.head}>
        <label className={styles.label} htmlFor={id}>
          {t(FIELD_WORDS[field].label)}
        </label>
        {state.overridden ? (
          <span className={styles.badges}>
            <span className={styles.badge}>{t('settings.overridden')}</span>
            <button type="button" className={styles.reset} disabled={disabled} onClick={() => resetField(field)}>
              {t('settings.reset')}
            </button>
          </span>
        ) : null}
      </div>
      <input
        id={id}
        className={styles.input}
        type="text"
        inputMode="numeric"
        aria-invalid={state.invalid}
        aria-describedby={hintId}
        value={state.text}
        disabled={disabled}
        onChange={(event) => edit(field, event.target.value)}
      />
      <p id={hintId} className={state.invalid ? styles.invalid : styles.hint}>
        {state.invalidStored
          ? t('settings.invalidStored', { min, max })
          : state.invalid
            ? t('settings.invalid', { min, max })
            : t('settings.hint', { min, max, text: t(FIELD_WORDS[field].hint) })}
      </p>
    </div>
  )
}

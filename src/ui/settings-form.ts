/**
 * The staged form behind the plugin's card in DSH's Settings → Plugins →
 * Plugin configuration: the two bounds of the `loop` settings namespace
 * (`maxLoopsPerSession`, `maxPromptLength`), edited as text, checked against
 * the same whole-number ranges as the host's `Config` schema, and written only
 * on Save through the host's settings scope (`ctx.settingsScope.bind({ namespace: 'loop' })`),
 * which stores them in the `loop` section of `$DSH_HOME/settings.yaml`.
 *
 * It follows DSH's own plugin cards (`@deepseek-ai/dsh-client-ui-settings-plugins`,
 * `CardForm`): a field shows its effective value (user layer over the
 * composition layer over the schema default); presence in the user layer, not
 * a value comparison, marks it overridden; an empty draft or "Reset to
 * default" clears the override; the host is the authority on whether a write
 * landed, so the outcome is read back from the scope, and a save that did not
 * land keeps the drafts. Unlike the host's generic number field, a draft
 * outside the schema's range blocks Save here instead of failing at the host.
 *
 * The host registers the section without judging its fields (`LOOP_SETTINGS_SECTION`
 * in `src/config.ts`), so a value hand-edited into settings.yaml outside its
 * range reaches this form as it is: the field shows it and is marked invalid
 * (the plugin applies the field's last valid value meanwhile), and it does not
 * block saving another field. Edits typed while a save runs stay staged.
 * @module dsh-plugin-loop/ui/settings-form
 */

import { LOOP_SETTING_RANGES, type LoopBoundSetting, type WholeNumberRange } from '../shared/limits.ts'

/** One editable field of the `loop` section. */
export type LoopSettingField = LoopBoundSetting

/** The fields in the order the card shows them. */
export const LOOP_SETTING_FIELDS: readonly LoopSettingField[] = ['maxLoopsPerSession', 'maxPromptLength']

/**
 * The browser's sync state of one settings namespace, as rc.8's
 * `@deepseek-ai/dsh-client-runtime` declares `SettingsScopeSnapshot` (typed
 * locally: that package's client types import a slots package never published at rc.8).
 */
export interface SettingsScopeSnapshot {
  /** `ready` once the host served the section; the card shows nothing otherwise. */
  readonly status: 'loading' | 'ready' | 'unavailable'
  /** The resolved section (schema defaults, then composition layer, then user layer). */
  readonly value: unknown
  /** The composition layer (the plugin's patch row config): what a cleared field reverts to. */
  readonly base: unknown
  /** The raw user layer as stored; a field present here is overridden. */
  readonly user: unknown
  /** Whether the host document accepts writes. */
  readonly writable: boolean
}

/** The settings scope face the form uses (`SettingsScope<T>` in rc.8's client runtime). */
export interface SettingsScopeLike {
  getSnapshot(): SettingsScopeSnapshot
  subscribe(listener: () => void): () => void
  /** Queue one field write; settles after the write and any recovery read. */
  set(field: string, value: unknown): Promise<void>
  /** Queue one field clear, so the field re-inherits the composition layer. */
  unset(field: string): Promise<void>
}

/** What one field shows. */
export interface LoopSettingFieldState {
  /** The draft, or the effective value when nothing is staged. */
  readonly text: string
  /** Whether a save would leave (or the document holds) a user override. */
  readonly overridden: boolean
  /** Whether the text shown is not a whole number in range: a draft (it blocks Save), or the document's own value. */
  readonly invalid: boolean
  /** Whether the invalid text is what the settings document holds (the plugin applies the last valid value), not a draft. */
  readonly invalidStored: boolean
}

/** What the card shows: the form as a whole and each field. */
export interface LoopSettingsCardState {
  /** The host serves the `loop` namespace; otherwise the card renders nothing. */
  readonly available: boolean
  readonly writable: boolean
  /** A save would write something (or an invalid draft waits). */
  readonly dirty: boolean
  /** Some draft is not acceptable. */
  readonly invalid: boolean
  readonly saving: boolean
  /** The last save did not land; the drafts are kept. */
  readonly failed: boolean
  readonly fields: { readonly [Field in LoopSettingField]: LoopSettingFieldState }
}

/** The actions the card's slot entry injects next to its state hook. */
export interface LoopSettingsActions {
  /** Stage what the user typed. */
  edit(field: LoopSettingField, text: string): void
  /** Stage a clear: the field shows the composition value and the save removes the override. */
  resetField(field: LoopSettingField): void
  /** Write every staged edit (no-op while nothing is staged, a draft is invalid or a save runs). */
  save(): Promise<void>
  /** Drop every staged edit and the failure line. */
  discard(): void
}

/** A staged edit: the text shown, and whether it was staged as a reset. */
interface Staged {
  readonly text: string
  readonly clear: boolean
}

/** How a draft converts: clear the override, store a value, or not acceptable. */
type DraftWrite = { readonly kind: 'clear' } | { readonly kind: 'set'; readonly value: number } | undefined

/** One planned write; `run` is missing for a draft that blocks the save. */
interface PlannedWrite {
  readonly run: (() => Promise<boolean>) | undefined
}

/**
 * Read a draft as the schema would: blank clears; digits only, within the field's range.
 * @param text - what the user typed.
 * @param range - the field's accepted values.
 * @returns the write it means, or undefined when it is not acceptable.
 */
export function parseDraft(text: string, range: WholeNumberRange): DraftWrite {
  const trimmed = text.trim()
  if (trimmed === '') return { kind: 'clear' }
  if (!/^\d+$/.test(trimmed)) return undefined
  const value = Number(trimmed)
  return value >= range.min && value <= range.max ? { kind: 'set', value } : undefined
}

/**
 * A section field's value as the input shows it: numbers as digits, nothing
 * (absent, or an empty YAML value) as blank, anything else hand-edited in as
 * JSON, so a quoted `'5'` shows as `"5"`, not as a number it is not.
 */
function formatValue(value: unknown): string {
  if (typeof value === 'number') return String(value)
  return value === undefined || value === null ? '' : JSON.stringify(value)
}

/** A field of an object-shaped layer, or undefined. */
function fieldOf(layer: unknown, field: LoopSettingField): unknown {
  return typeof layer === 'object' && layer !== null ? (layer as Record<string, unknown>)[field] : undefined
}

/**
 * Stages the card's edits over the `loop` settings scope and writes them on
 * save. A snapshot store (`getSnapshot`/`subscribe`), so DSH's slot renderer
 * turns it into the card's `useLoopSettings(selector)` hook.
 */
export class LoopSettingsForm implements LoopSettingsActions {
  private readonly staged = new Map<LoopSettingField, Staged>()
  private readonly listeners = new Set<() => void>()
  private saving = false
  private failed = false
  private snapshot: LoopSettingsCardState

  /** @param scope - the bound settings scope of the `loop` namespace. */
  constructor(private readonly scope: SettingsScopeLike) {
    this.snapshot = this.project()
  }

  /**
   * Follow the scope: every change of the host's section re-derives the card.
   * @returns the disposer.
   */
  follow(): () => void {
    return this.scope.subscribe(() => this.publish())
  }

  /** The current card state (stable until the next change). */
  readonly getSnapshot = (): LoopSettingsCardState => this.snapshot

  /** Observe card state replacements. */
  readonly subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener)
    return () => {
      this.listeners.delete(listener)
    }
  }

  readonly edit = (field: LoopSettingField, text: string): void => {
    this.stage(field, { text, clear: false })
  }

  readonly resetField = (field: LoopSettingField): void => {
    this.stage(field, { text: formatValue(fieldOf(this.scope.getSnapshot().base, field)), clear: true })
  }

  readonly discard = (): void => {
    if (this.staged.size === 0 && !this.failed) return
    this.staged.clear()
    this.failed = false
    this.publish()
  }

  readonly save = async (): Promise<void> => {
    const plan = this.plan()
    const writes = plan.flatMap((item) => (item.run === undefined ? [] : [item.run]))
    if (plan.length === 0 || this.saving || writes.length !== plan.length) return
    this.saving = true
    this.failed = false
    this.publish()
    // What this save writes; anything typed while it runs is a newer edit and stays staged.
    const saved = new Map(this.staged)
    let landed = true
    // One at a time, in the order the user staged them: the scope serializes writes anyway.
    for (const write of writes) landed = (await write().catch(() => false)) && landed
    if (landed) for (const [field, edit] of saved) if (this.staged.get(field) === edit) this.staged.delete(field)
    this.saving = false
    this.failed = !landed
    this.publish()
  }

  private stage(field: LoopSettingField, edit: Staged): void {
    this.staged.set(field, edit)
    this.failed = false
    this.publish()
  }

  private publish(): void {
    this.snapshot = this.project()
    for (const listener of [...this.listeners]) listener()
  }

  private project(): LoopSettingsCardState {
    const scope = this.scope.getSnapshot()
    const plan = this.plan()
    return {
      available: scope.status === 'ready',
      writable: scope.writable,
      dirty: plan.length > 0,
      invalid: plan.some((item) => item.run === undefined),
      saving: this.saving,
      failed: this.failed,
      fields: { maxLoopsPerSession: this.field('maxLoopsPerSession'), maxPromptLength: this.field('maxPromptLength') },
    }
  }

  private field(field: LoopSettingField): LoopSettingFieldState {
    const staged = this.staged.get(field)
    const current = formatValue(fieldOf(this.scope.getSnapshot().value, field))
    const range = LOOP_SETTING_RANGES[field]
    // The effective value as the document holds it: only a hand edit can make it unacceptable.
    const kept = (text: string): LoopSettingFieldState => {
      const invalid = parseDraft(text, range) === undefined
      return { text, overridden: this.stored(field), invalid, invalidStored: invalid }
    }
    if (staged === undefined) return kept(current)
    if (staged.clear) return { text: staged.text, overridden: false, invalid: false, invalidStored: false }
    // A draft equal to the effective value writes nothing, so it keeps whatever the document holds.
    if (staged.text === current) return kept(staged.text)
    const write = parseDraft(staged.text, range)
    return { text: staged.text, overridden: write?.kind === 'set', invalid: write === undefined, invalidStored: false }
  }

  /** Every staged edit a save would write, in staging order; an unacceptable draft carries no write. */
  private plan(): PlannedWrite[] {
    const plan: PlannedWrite[] = []
    for (const [field, staged] of this.staged) {
      if (staged.clear) {
        if (this.stored(field)) plan.push({ run: () => this.clear(field) })
        continue
      }
      if (staged.text === formatValue(fieldOf(this.scope.getSnapshot().value, field))) continue
      const write = parseDraft(staged.text, LOOP_SETTING_RANGES[field])
      if (write === undefined) plan.push({ run: undefined })
      else if (write.kind === 'clear') plan.push({ run: () => this.clear(field) })
      else plan.push({ run: () => this.store(field, write.value) })
    }
    return plan
  }

  private async clear(field: LoopSettingField): Promise<boolean> {
    await this.scope.unset(field)
    return !this.stored(field)
  }

  private async store(field: LoopSettingField, value: number): Promise<boolean> {
    await this.scope.set(field, value)
    return fieldOf(this.scope.getSnapshot().user, field) === value
  }

  private stored(field: LoopSettingField): boolean {
    const user = this.scope.getSnapshot().user
    return typeof user === 'object' && user !== null && Object.hasOwn(user, field)
  }
}

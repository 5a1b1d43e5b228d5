/**
 * The plugin's configuration, the bounds that keep a runaway model or a pasted
 * document from turning a loop into unbounded spend: the plugin row's `config:`
 * (DSH validates it with {@link Config} and refuses a bad one) and, where DSH
 * mounts its settings service, the user's `loop` section, judged field by field
 * ({@link resolveLoopSettings}) so one bad value never hides the others.
 * @module dsh-plugin-loop/config
 */
import type { Context } from '@deepseek-ai/cordis'
import z from '@deepseek-ai/schemastery'
import { installSettingsSection, settingsNamespace } from '@deepseek-ai/dsh-settings'
import { isRecord } from './shared/guards.ts'
import type { LoopReport } from './report.ts'
import {
  DEFAULT_LOOP_CONFIG,
  LOOP_SETTINGS_NAMESPACE,
  LOOP_SETTING_RANGES,
  type LoopBoundSetting,
  type LoopConfig,
} from './shared/limits.ts'
import { LOOP_SETTING_TEXTS } from './shared/settings-text.ts'

export { DEFAULT_LOOP_CONFIG, type LoopConfig }

/** How one setting is judged: its schema (default included) and what it accepts, in words for a warning. */
interface SettingRule<T> {
  readonly schema: z<T>
  readonly accepts: string
}

/** The rule of a whole-number bound, from its range in `shared/limits.ts`. */
function boundRule(field: LoopBoundSetting): SettingRule<number> {
  const { min, max } = LOOP_SETTING_RANGES[field]
  return {
    schema: z.natural().min(min).max(max).default(DEFAULT_LOOP_CONFIG[field]),
    accepts: `a whole number from ${min} to ${max}`,
  }
}

/** One rule per setting: the single source of {@link Config}, the section schema and the per-field check. */
const SETTING_RULES: { readonly [Field in keyof LoopConfig]: SettingRule<LoopConfig[Field]> } = {
  maxLoopsPerSession: boundRule('maxLoopsPerSession'),
  maxPromptLength: boundRule('maxPromptLength'),
}

/** The settings, in the order warnings name them. */
const SETTING_FIELDS = Object.keys(SETTING_RULES) as (keyof LoopConfig)[]

/** Schemastery schema DSH validates the row's `config:` with (strict: a bad row refuses the load). */
export const Config: z<LoopConfig> = z
  .object({
    maxLoopsPerSession: SETTING_RULES.maxLoopsPerSession.schema,
    maxPromptLength: SETTING_RULES.maxPromptLength.schema,
  })
  .i18n(LOOP_SETTING_TEXTS) as z<LoopConfig>

/**
 * The schema the `loop` namespace is registered with: every field passes
 * through. DSH's settings service resolves the whole section through it at
 * registration, on every write and on every reload, and a throw there refuses
 * all three; judging fields here keeps them working while one field is wrong.
 */
export const LOOP_SETTINGS_SECTION = z.object(Object.fromEntries(SETTING_FIELDS.map((field) => [field, z.any()])))

/** A stored setting the plugin cannot use. */
export interface InvalidSetting {
  readonly field: keyof LoopConfig
  /** The value as stored. */
  readonly value: unknown
  /** What the field accepts, in words. */
  readonly accepts: string
  /** The value applied instead: the field's last valid value. */
  readonly kept: LoopConfig[keyof LoopConfig]
}

/** The configuration a section yields, and the fields it could not use. */
export interface ResolvedLoopSettings {
  readonly config: LoopConfig
  readonly invalid: readonly InvalidSetting[]
}

/**
 * Judge a resolved settings section field by field: a valid field applies
 * (an absent or empty one resolves to its default), an invalid one keeps the
 * field's last valid value.
 * @param section - the section as the settings service resolved it (composition layer under the user layer).
 * @param lastValid - the configuration in force, whose fields an invalid value leaves as they are.
 * @returns the configuration to apply, and every field that was not usable.
 */
export function resolveLoopSettings(section: unknown, lastValid: LoopConfig): ResolvedLoopSettings {
  const raw = isRecord(section) ? section : {}
  const config: Record<string, unknown> = { ...lastValid }
  const invalid: InvalidSetting[] = []
  for (const field of SETTING_FIELDS) {
    const rule = SETTING_RULES[field]
    try {
      config[field] = rule.schema(raw[field] as never)
    } catch {
      invalid.push({ field, value: raw[field], accepts: rule.accepts, kept: lastValid[field] })
    }
  }
  return { config: config as unknown as LoopConfig, invalid }
}

/**
 * The warning for one unusable setting: the setting, the stored value, what it
 * accepts, and the value in force meanwhile.
 * @param problem - the unusable setting.
 * @returns one line for the host log.
 */
export function describeInvalidSetting(problem: InvalidSetting): string {
  const { field, value, accepts, kept } = problem
  return (
    `settings: ${LOOP_SETTINGS_NAMESPACE}.${field} is ${JSON.stringify(value)}, but it accepts ${accepts}; ` +
    `keeping ${JSON.stringify(kept)} (its last valid value) until the settings document holds a valid one`
  )
}

/**
 * Follow the configuration source: the user's settings section while DSH's
 * settings service is mounted, the patch row otherwise. Each field applies its
 * last valid value while the section holds an invalid one, and each distinct
 * invalid value is warned about once.
 * @param ctx - plugin context.
 * @param entry - the row's validated config: the starting point, and what a lost settings service falls back to.
 * @param report - where warnings about the section go (the host log and the terminal).
 * @returns a getter for the current configuration, read at every decision.
 */
export function watchLoopConfig(ctx: Context, entry: LoopConfig, report: Pick<LoopReport, 'warn'>): () => LoopConfig {
  let source = (): unknown => entry
  let seen: unknown = entry
  let current = entry
  /** The invalid value last warned about, per field, as JSON. */
  const warned = new Map<keyof LoopConfig, string>()
  const read = (): LoopConfig => {
    const section = source()
    // The settings service hands out one frozen value per commit, so identity is change.
    if (section === seen) return current
    seen = section
    const resolved = resolveLoopSettings(section, current)
    current = resolved.config
    const invalidNow = new Set<keyof LoopConfig>()
    for (const problem of resolved.invalid) {
      invalidNow.add(problem.field)
      // Settings values are JSON data (the settings service refuses anything else), so this is total.
      const key = JSON.stringify(problem.value)
      if (warned.get(problem.field) === key) continue
      warned.set(problem.field, key)
      report.warn(describeInvalidSetting(problem))
    }
    for (const field of warned.keys()) if (!invalidNow.has(field)) warned.delete(field)
    return current
  }
  installSettingsSection(
    ctx,
    settingsNamespace(LOOP_SETTINGS_NAMESPACE),
    LOOP_SETTINGS_SECTION as z<LoopConfig>,
    entry,
    {
      setSource: (next) => {
        source = next
      },
      // Read at once, so a bad value is warned about when it appears, not at the next create.
      onChange: () => void read(),
    },
  )
  return read
}

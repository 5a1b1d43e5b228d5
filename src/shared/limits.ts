/**
 * The facts both bundles read: the settings' ranges and defaults and the
 * settings namespace. Host-free (no imports), so the host half (`../config.ts`)
 * and the Settings card (`../ui/settings-form.ts`) judge by the same numbers.
 * @module dsh-plugin-loop/limits
 */

/** The resolved configuration. */
export interface LoopConfig {
  /** Most active loops one session may hold; a create beyond it is refused. */
  readonly maxLoopsPerSession: number
  /** Longest prompt, in UTF-16 code units; a longer one is refused, never cut. */
  readonly maxPromptLength: number
}

/** Defaults: room for a real workflow, far from a runaway. */
export const DEFAULT_LOOP_CONFIG: LoopConfig = Object.freeze({
  maxLoopsPerSession: 20,
  maxPromptLength: 4000,
})

/** An inclusive whole-number range. */
export interface WholeNumberRange {
  readonly min: number
  readonly max: number
}

/** The settings that are whole-number bounds. */
export type LoopBoundSetting = 'maxLoopsPerSession' | 'maxPromptLength'

/** What each bound accepts: the host's `Config` schema and the card's draft check are built from it. */
export const LOOP_SETTING_RANGES: { readonly [Field in LoopBoundSetting]: WholeNumberRange } = Object.freeze({
  maxLoopsPerSession: Object.freeze({ min: 1, max: 1000 }),
  maxPromptLength: Object.freeze({ min: 1, max: 100_000 }),
})

/** The settings namespace the loop section is stored under (`settings.yaml`, key `loop`). */
export const LOOP_SETTINGS_NAMESPACE = 'loop'

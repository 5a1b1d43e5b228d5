/**
 * DSH's locale seat for the browser half's jsdom tests: a strict `t` and a
 * language source whose switch gives every outlet a new `t`, as DSH's locale
 * face does.
 */
import { useMemo, useSyncExternalStore } from 'react'
import { LOOP_DICTIONARIES, type LoopTranslate } from '../../src/ui/locales.ts'

/** A language the `loop` namespace ships. */
export type Language = keyof typeof LOOP_DICTIONARIES

/**
 * The `t` seat as DSH's locale runtime fills it (`{name}` placeholders), but
 * strict: a key the active dictionary lacks throws instead of falling back to
 * English or to the key, so every rendered state proves its words exist.
 * @param language - the active language.
 * @returns the translate function.
 */
export function translator(language: Language): LoopTranslate {
  const dictionary: Readonly<Record<string, string>> = LOOP_DICTIONARIES[language]
  return (key, params) => {
    const template = dictionary[key]
    if (template === undefined) throw new Error(`loop/${language} has no "${key}"`)
    return params === undefined
      ? template
      : template.replace(/\{(\w+)\}/g, (match, name: string) => (name in params ? String(params[name]) : match))
  }
}

/**
 * The active language as DSH's locale face publishes it.
 * @param initial - the language at first render.
 * @returns a hook for the seat and a switch (call it inside `act`).
 */
export function languageSource(initial: Language) {
  let active = initial
  const listeners = new Set<() => void>()
  const subscribe = (listener: () => void) => {
    listeners.add(listener)
    return () => listeners.delete(listener)
  }
  return {
    useSeat(): LoopTranslate {
      const language = useSyncExternalStore(subscribe, () => active)
      return useMemo(() => translator(language), [language])
    },
    set(next: Language) {
      active = next
      for (const listener of listeners) listener()
    },
  }
}

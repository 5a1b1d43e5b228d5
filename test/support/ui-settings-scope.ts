/**
 * The `loop` settings section as DSH's settings scope serves it to the
 * browser half's jsdom tests (the settings form and the settings card).
 */
import { act } from '@testing-library/react'
import { DEFAULT_LOOP_CONFIG, LOOP_SETTINGS_SECTION, type LoopConfig } from '../../src/config.ts'
import type { SettingsScopeLike, SettingsScopeSnapshot } from '../../src/ui/settings-form.ts'
import { deferred } from './ui-deferred.ts'

/**
 * The namespace's registered schema applied to a section: it passes every
 * field through as stored (the plugin judges fields itself), typed here with
 * the resolved shape.
 */
const resolveSection = LOOP_SETTINGS_SECTION as unknown as (section: object) => LoopConfig

/**
 * The `loop` section as the host serves it to the browser: the value resolves
 * through the plugin's `Config` schema over the composition layer (`base`)
 * and the user layer; a write the schema refuses leaves the user layer as it
 * was (the host's recovery read), `hold` parks writes until released.
 */
export function sectionScope(
  options: {
    base?: Record<string, number>
    user?: Record<string, number>
    status?: SettingsScopeSnapshot['status']
    writable?: boolean
  } = {},
) {
  const base = options.base ?? { ...DEFAULT_LOOP_CONFIG }
  let user: Record<string, number> | undefined = options.user
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
  const commit = async (next: Record<string, number> | undefined) => {
    if (hold !== undefined) await hold
    if (throwing) throw new Error('settings.update: transport closed')
    user = next
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
      await commit({ ...user, [field]: value as number })
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
    change(next: { user?: Record<string, number>; status?: SettingsScopeSnapshot['status'] }) {
      if (next.status !== undefined) status = next.status
      if ('user' in next) user = next.user
      act(() => publish())
    },
    hold() {
      const gate = deferred<void>()
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

// @vitest-environment jsdom
/**
 * The settings card's staged form (src/ui/settings-form.ts) over a settings
 * scope whose section resolves through the schema the plugin registers the
 * namespace with (as the host's settings service does): drafts parsed as the
 * row's `Config` schema, effective values, overridden by presence, exact
 * `set`/`unset` writes on Save, reset and blank, failed writes keeping the
 * drafts, discard.
 */
import { act, cleanup } from '@testing-library/react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { sectionScope } from '../support/ui-settings-scope.ts'
import { Config, DEFAULT_LOOP_CONFIG, type LoopConfig } from '../../src/config.ts'
import { LOOP_SETTING_RANGES } from '../../src/shared/limits.ts'
import {
  LOOP_SETTING_FIELDS,
  LoopSettingsForm,
  parseDraft,
  type LoopSettingsCardState,
} from '../../src/ui/settings-form.ts'

/** The row's strict `Config` schema over a partial section (schemastery fills the defaults). */
const resolveRow = Config as unknown as (section: object) => LoopConfig

afterEach(() => cleanup())

describe('settings form', () => {
  it('reads a draft as the schema does: blank clears, digits within the range set, anything else is refused', () => {
    const range = LOOP_SETTING_RANGES.maxLoopsPerSession
    expect(parseDraft('', range)).toEqual({ kind: 'clear' })
    expect(parseDraft('   ', range)).toEqual({ kind: 'clear' })
    expect(parseDraft(' 7 ', range)).toEqual({ kind: 'set', value: 7 })
    expect(parseDraft('1', range)).toEqual({ kind: 'set', value: 1 })
    expect(parseDraft('1000', range)).toEqual({ kind: 'set', value: 1000 })
    expect(parseDraft('007', range)).toEqual({ kind: 'set', value: 7 })
    for (const refused of ['0', '1001', '1.5', '1e3', '-1', '+5', 'ten', '0x10', '٣'])
      expect(parseDraft(refused, range), refused).toBeUndefined()
  })

  it('accepts exactly what the plugin Config schema accepts', () => {
    for (const field of LOOP_SETTING_FIELDS) {
      const { min, max } = LOOP_SETTING_RANGES[field]
      for (const value of [min, min + 1, max - 1, max]) {
        expect(resolveRow({ [field]: value })[field], `${field}=${value}`).toBe(value)
        expect(parseDraft(String(value), LOOP_SETTING_RANGES[field]), `${field}=${value}`).toEqual({
          kind: 'set',
          value,
        })
      }
      for (const value of [min - 1, max + 1, min + 0.5]) {
        expect(() => resolveRow({ [field]: value }), `${field}=${value}`).toThrow()
        expect(parseDraft(String(value), LOOP_SETTING_RANGES[field]), `${field}=${value}`).toBeUndefined()
      }
    }
    // Every setting of the schema is on the card.
    expect(LOOP_SETTING_FIELDS).toEqual(Object.keys(DEFAULT_LOOP_CONFIG))
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
        maxLoopsPerSession: { text: '20', overridden: false, invalid: false, invalidStored: false },
        maxPromptLength: { text: '4000', overridden: true, invalid: false, invalidStored: false },
      },
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
    expect(form.getSnapshot()).toMatchObject({
      available: true,
      fields: { maxLoopsPerSession: { text: '5', overridden: true } },
    })
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
    expect(form.getSnapshot()).toMatchObject({
      dirty: true,
      invalid: true,
      fields: { maxLoopsPerSession: { text: '0', overridden: false, invalid: true, invalidStored: false } },
    })
    await form.save()
    expect(host.writes).toEqual([])
    form.edit('maxLoopsPerSession', '1')
    form.edit('maxPromptLength', '4000') // equal to the effective value: nothing to write
    expect(form.getSnapshot()).toMatchObject({
      dirty: true,
      invalid: false,
      fields: {
        maxLoopsPerSession: { text: '1', overridden: true, invalid: false, invalidStored: false },
        maxPromptLength: { text: '4000', overridden: false, invalid: false, invalidStored: false },
      },
    })
    await act(() => form.save())
    expect(host.writes).toEqual([['set', 'maxLoopsPerSession', 1]])
    expect(host.user).toEqual({ maxLoopsPerSession: 1 })
    expect(form.getSnapshot()).toMatchObject({
      dirty: false,
      saving: false,
      failed: false,
      fields: { maxLoopsPerSession: { text: '1', overridden: true } },
    })
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
    expect(form.getSnapshot()).toMatchObject({
      saving: false,
      dirty: false,
      fields: { maxPromptLength: { text: '2000', overridden: true } },
    })
  })

  it('resets a field to the composition value, clears the override on Save, and treats a blank draft the same', async () => {
    const host = sectionScope({
      base: { maxLoopsPerSession: 8, maxPromptLength: 4000 },
      user: { maxLoopsPerSession: 3, maxPromptLength: 900 },
    })
    const form = new LoopSettingsForm(host.scope)
    form.resetField('maxLoopsPerSession')
    expect(form.getSnapshot()).toMatchObject({
      dirty: true,
      fields: { maxLoopsPerSession: { text: '8', overridden: false, invalid: false, invalidStored: false } },
    })
    form.edit('maxPromptLength', '  ')
    expect(form.getSnapshot().fields.maxPromptLength).toEqual({
      text: '  ',
      overridden: false,
      invalid: false,
      invalidStored: false,
    })
    await act(() => form.save())
    expect(host.writes).toEqual([
      ['unset', 'maxLoopsPerSession'],
      ['unset', 'maxPromptLength'],
    ])
    expect(host.user).toBeUndefined()
    expect(form.getSnapshot()).toMatchObject({
      dirty: false,
      failed: false,
      fields: {
        maxLoopsPerSession: { text: '8', overridden: false },
        maxPromptLength: { text: '4000', overridden: false },
      },
    })
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
    expect(refusingForm.getSnapshot()).toMatchObject({
      failed: true,
      dirty: true,
      fields: { maxLoopsPerSession: { text: '9', overridden: true } },
    })
    refusingForm.discard()
    expect(refusingForm.getSnapshot()).toMatchObject({
      failed: false,
      dirty: false,
      fields: { maxLoopsPerSession: { text: '20' } },
    })
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

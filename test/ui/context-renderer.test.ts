/**
 * The DSH context renderer the heartbeat row shadows (src/ui/context-renderer.ts);
 * recognizing a heartbeat itself (`readHeartbeat`) is in test/shared/heartbeat.test.ts.
 */
import { describe, expect, it } from 'vitest'
import { shadowedContextRenderer, type ChatNodeEntry } from '../../src/ui/context-renderer.ts'

describe('the shadowed context renderer (src/ui/context-renderer.ts)', () => {
  it('finds the context renderer this entry shadows, when its props can be assembled', () => {
    const self = () => null
    const host = () => null
    const mine: ChatNodeEntry = {
      component: self,
      options: { key: 'context', priority: -1 },
      locale: 'loop',
      inject: () => ({}),
    }
    const theirs: ChatNodeEntry = { component: host, options: { key: 'context' }, locale: 'conversation' }
    const user: ChatNodeEntry = { component: host, options: { key: 'user' }, locale: 'conversation' }
    expect(shadowedContextRenderer([user, mine, theirs], self)).toEqual({ component: host, locale: 'conversation' })
    expect(shadowedContextRenderer([user, mine], self)).toBeUndefined()
    const { locale: _locale, ...unlocalized } = theirs
    expect(shadowedContextRenderer([mine, unlocalized], self)).toBeUndefined()
    expect(shadowedContextRenderer([mine, { ...theirs, inject: () => ({}) }], self)).toBeUndefined()
    expect(shadowedContextRenderer([mine, { ...theirs, store: {} }], self)).toBeUndefined()
    expect(shadowedContextRenderer([mine, { ...theirs, children: {} }], self)).toBeUndefined()
  })
})

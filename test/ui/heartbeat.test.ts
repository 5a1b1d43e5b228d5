/**
 * Recognizing a heartbeat in the browser: `readHeartbeat` (src/shared/heartbeat.ts)
 * as the inverse of `renderHeartbeat` and nothing else, and the DSH context
 * renderer the heartbeat row shadows (src/ui/heartbeat.ts).
 */
import { describe, expect, it } from 'vitest'
import { T0 } from '../support/ui-loops.ts'
import { readHeartbeat, renderHeartbeat } from '../../src/shared/heartbeat.ts'
import { shadowedContextRenderer, type ChatNodeEntry } from '../../src/ui/heartbeat.ts'

describe('heartbeat rules (src/ui/heartbeat.ts)', () => {
  const fromLoop = (text: string, source: unknown = { kind: 'plugin', plugin: 'loop' }) => ({
    content: [{ type: 'text', text }],
    source,
  })

  it.each([
    'Check whether CI is green',
    'Compare a < b && c > d, then "quote" it and don\'t stop',
    'First line\n\tsecond line\n  third',
    'Already escaped: &amp; &lt;tag&gt; stays literal',
  ])('reads back the loop id and prompt the runtime wrote: %j', (prompt) => {
    const text = renderHeartbeat({ id: 'loop_0a1b2c3d', prompt, time_in_seconds: 60, next_at: T0 })
    expect(readHeartbeat(fromLoop(text))).toEqual({ loopId: 'loop_0a1b2c3d', prompt, text })
  })

  it('joins text blocks as the model received them', () => {
    const text = renderHeartbeat({ id: 'loop_1', prompt: 'p', time_in_seconds: 1, next_at: T0 })
    const data = {
      content: [
        { type: 'text', text: text.slice(0, 20) },
        { type: 'text', text: text.slice(20) },
      ],
      source: { kind: 'plugin', plugin: 'loop' },
    }
    expect(readHeartbeat(data)).toEqual({ loopId: 'loop_1', prompt: 'p', text })
  })

  it('recognizes nothing else', () => {
    const text = renderHeartbeat({ id: 'loop_1', prompt: 'p', time_in_seconds: 1, next_at: T0 })
    for (const data of [
      undefined,
      'text',
      { content: [{ type: 'text', text }] },
      fromLoop(text, { kind: 'user' }),
      fromLoop(text, { kind: 'plugin', plugin: 'goal' }),
      { content: text, source: { kind: 'plugin', plugin: 'loop' } },
      { content: [{ type: 'image', data: 'x' }], source: { kind: 'plugin', plugin: 'loop' } },
      { content: [null], source: { kind: 'plugin', plugin: 'loop' } },
      { content: [{ type: 'text', text: 42 }], source: { kind: 'plugin', plugin: 'loop' } },
      fromLoop(`${text}\n`),
      fromLoop(text.replace('<prompt>p', '<prompt>a & b')),
      fromLoop(text.replace('loop_1', 'loop_&x;')),
      fromLoop('<heartbeat><loop_id>loop_1</loop_id><prompt>p</prompt></heartbeat>'),
    ]) {
      expect(readHeartbeat(data)).toBeUndefined()
    }
  })

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

/** The heartbeat message (src/shared/heartbeat.ts): escaping, the exact rendered element, and recognising its own (as the runtime and the browser read it). */
import { describe, expect, it } from 'vitest'
import { escapeXml, readHeartbeat, renderHeartbeat } from '../../src/shared/heartbeat.ts'
import { NOW } from '../support/epoch.ts'
import { heartbeatText } from '../support/heartbeat-xml.ts'
import { loopA } from '../support/loop-fixtures.ts'

describe('heartbeat', () => {
  it('escapes the five XML specials', () => {
    expect(escapeXml(`a & b < c > d " e ' f`)).toBe('a &amp; b &lt; c &gt; d &quot; e &apos; f')
  })

  it('renders the exact element with escaped id and prompt', () => {
    expect(renderHeartbeat({ ...loopA, id: 'loop_x-1', prompt: 'Is "main" <green> & \'ok\'?' })).toBe(
      heartbeatText('loop_x-1', 'Is &quot;main&quot; &lt;green&gt; &amp; &apos;ok&apos;?'),
    )
  })

  it('recognises its own heartbeats and nothing else', () => {
    const text = renderHeartbeat({ ...loopA, id: 'loop_1a2b3c4d' })
    const plugin = { kind: 'plugin', plugin: 'loop' }
    expect(readHeartbeat({ source: plugin, content: [{ type: 'text', text }] })?.loopId).toBe('loop_1a2b3c4d')
    expect(readHeartbeat({ source: { kind: 'user' }, content: [{ type: 'text', text }] })).toBeUndefined()
    expect(
      readHeartbeat({ source: { kind: 'plugin', plugin: 'goal' }, content: [{ type: 'text', text }] }),
    ).toBeUndefined()
    expect(
      readHeartbeat({
        source: plugin,
        content: [
          { type: 'text', text },
          { type: 'text', text },
        ],
      }),
    ).toBeUndefined()
    expect(readHeartbeat({ source: plugin, content: [{ type: 'image' }] })).toBeUndefined()
    expect(readHeartbeat({ source: plugin, content: [{ type: 'text' }] })).toBeUndefined()
    expect(readHeartbeat({ source: plugin, content: [{ type: 'text', text: 'hello' }] })).toBeUndefined()
  })
})

describe('readHeartbeat', () => {
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
    const text = renderHeartbeat({ id: 'loop_0a1b2c3d', prompt, time_in_seconds: 60, next_at: NOW })
    expect(readHeartbeat(fromLoop(text))).toEqual({ loopId: 'loop_0a1b2c3d', prompt, text })
  })

  it('joins text blocks as the model received them', () => {
    const text = renderHeartbeat({ id: 'loop_1', prompt: 'p', time_in_seconds: 1, next_at: NOW })
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
    const text = renderHeartbeat({ id: 'loop_1', prompt: 'p', time_in_seconds: 1, next_at: NOW })
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
})

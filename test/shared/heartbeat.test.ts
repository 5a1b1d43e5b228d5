/** The heartbeat message (src/shared/heartbeat.ts): escaping, the exact rendered element, and recognising its own. */
import { describe, expect, it } from 'vitest'
import { escapeXml, readHeartbeat, renderHeartbeat } from '../../src/shared/heartbeat.ts'
import { loopA } from '../support/loop-fixtures.ts'

describe('heartbeat', () => {
  it('escapes the five XML specials', () => {
    expect(escapeXml(`a & b < c > d " e ' f`)).toBe('a &amp; b &lt; c &gt; d &quot; e &apos; f')
  })

  it('renders the exact element with escaped id and prompt', () => {
    expect(renderHeartbeat({ ...loopA, id: 'loop_x-1', prompt: 'Is "main" <green> & \'ok\'?' })).toBe(
      '<heartbeat>\n  <loop_id>loop_x-1</loop_id>\n  <prompt>Is &quot;main&quot; &lt;green&gt; &amp; &apos;ok&apos;?</prompt>\n</heartbeat>',
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

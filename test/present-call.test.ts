/** How loop tool calls read in the conversation (each tool's presentCall in src/tools.ts). */
import { describe, expect, it } from 'vitest'
import { createFakeAgent, useHosts } from './support/host.ts'

const { boot } = useHosts()

describe('how calls read in the conversation', () => {
  it('presents each call as what it does', async () => {
    const host = await boot()
    const fake = await createFakeAgent(host, 'ses-present')
    const present = (name: string, args: unknown) => host.ctx.tools.get(name, fake.agent)!.presentCall!(args)
    expect(present('loop_create', { prompt: 'Check whether CI is green', time_in_seconds: 300 })).toEqual({
      card: 'generic',
      kind: 'other',
      title: 'Create loop · every 5m · Check whether CI is green',
      rawInput: 'Check whether CI is green',
    })
    expect(
      (present('loop_create', { prompt: `  ${'word '.repeat(40)}\n`, time_in_seconds: 90 }) as { title: string }).title,
    ).toBe(`Create loop · every 1m 30s · ${'word '.repeat(16).slice(0, 79)}…`)
    // A surrogate pair across the cut: the title stays well-formed (a UTF-16 cut left a lone \ud83d).
    const emoji = (
      present('loop_create', { prompt: `${'a'.repeat(78)}😀😀 more`, time_in_seconds: 60 }) as { title: string }
    ).title
    expect(emoji).toBe(`Create loop · every 1m · ${'a'.repeat(78)}😀…`)
    expect(/\p{Cs}/u.test(emoji)).toBe(false)
    expect(present('loop_list', {})).toEqual({ card: 'generic', kind: 'read', title: 'List loops' })
    expect(present('loop_delete', { id: 'loop_1a2b3c4d' })).toEqual({
      card: 'generic',
      kind: 'delete',
      title: 'Delete loop · loop_1a2b3c4d',
    })
  })
})

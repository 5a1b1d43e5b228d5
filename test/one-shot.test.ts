/** One-shot hosts (dsh --profile headless): loops are saved and the model is told, but nothing fires. */
import { describe, expect, it, vi } from 'vitest'
import { advance, createFakeAgent, loopChanges, runTool, TEST_NOW, useHosts } from './support/host.ts'

const { boot } = useHosts()

describe('one-shot hosts (dsh --profile headless)', () => {
  const NOTE =
    'This is a one-shot run (dsh --profile headless): loops are saved in this session but nothing fires in this run; they start when the session is opened in a long-lived DSH (dsh web).'

  it('saves loops, tells the model, and never dispatches or arms a timer', async () => {
    const host = await boot({ oneShot: true })
    const fake = await createFakeAgent(host, 'ses-oneshot')
    const schema = host.ctx.tools.schemas(fake.agent).find((candidate) => candidate.name === 'loop_create')!
    expect(schema.description.endsWith(` ${NOTE}`)).toBe(true)
    const created = await runTool(host, fake.agent, 'loop_create', { prompt: 'later', time_in_seconds: 1 })
    expect(created.content).toEqual([
      { type: 'text', text: `${JSON.stringify(created.isError ? undefined : created.value)}\n${NOTE}` },
    ])
    await advance(5000)
    expect(fake.send).not.toHaveBeenCalled()
    expect(vi.getTimerCount()).toBe(0)
    expect(loopChanges(fake.agent)).toEqual([
      {
        version: 1,
        operation: 'create',
        loop: { id: expect.any(String), prompt: 'later', time_in_seconds: 1, next_at: TEST_NOW + 1000 },
      },
    ])
  })
})

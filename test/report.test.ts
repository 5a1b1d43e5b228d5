import { afterEach, describe, expect, it, vi } from 'vitest'
import * as loopPlugin from '../src/index.ts'
import { createReport } from '../src/report.ts'
import { bootHost, type Host } from './support/host.ts'

let host: Host | undefined
afterEach(async () => {
  await host?.dispose()
  vi.restoreAllMocks()
})

/** Boot a real host whose logger exporter records the plugin's lines, and capture stderr lines. */
async function capture() {
  host = await bootHost({ loop: false })
  const logged: [string, string][] = []
  host.ctx.logger.exporter({
    levels: { default: 3 },
    export: (message) => void (message.name === 'loop' && logged.push([message.type, String(message.args[0])])),
  })
  const printed: unknown[][] = []
  vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void printed.push(args))
  return { report: createReport(host.ctx.logger('loop')), logged, printed }
}

describe('the report', () => {
  it('sends a warning to the logger at warn and to stderr as `loop: <line>`, once each', async () => {
    const { report, logged, printed } = await capture()
    report.warn('session "s": a corrupt log (50%)')
    expect(logged).toEqual([['warn', 'session "s": a corrupt log (50%)']])
    expect(printed).toEqual([['loop: session "s": a corrupt log (50%)']])
  })

  it('keeps detail in the logger only', async () => {
    const { report, logged, printed } = await capture()
    report.info('session "s": loop_a was rescheduled')
    expect(logged).toEqual([['info', 'session "s": loop_a was rescheduled']])
    expect(printed).toEqual([])
  })
  it('is how the plugin warns: an unresolved event catalog reaches the logger and stderr', async () => {
    const { logged, printed } = await capture()
    const entry = process.argv[1]
    process.argv[1] = '/nonexistent/dsh/lib/bin.js'
    try {
      await host!.ctx.plugin(loopPlugin)
    } finally {
      process.argv[1] = entry as string
    }
    const line = `could not resolve the host's @deepseek-ai/dsh-session from its entry point (/nonexistent/dsh/lib/bin.js); only the plugin's own copy knows "loop/change", so sessions holding loops may fail to reopen after a restart if the host uses another copy`
    expect(logged).toEqual([['warn', line]])
    expect(printed).toEqual([[`loop: ${line}`]])
  })
})

/**
 * Test-only Cordis plugin: print every log message of level `warn` or worse on
 * stderr. DSH web (rc.8) mounts no log sink: plugin loggers only fill Cordis'
 * in-memory buffer, so without this a test cannot read the host log.
 */
export const name = 'log-sink'

/** @param {import('@deepseek-ai/cordis').Context} ctx */
export function apply(ctx) {
  const print = (message) => void process.stderr.write(`[${message.type}] ${message.name} ${message.args.map(String).join(' ')}\n`)
  // Plugins loaded before this one logged into the buffer only: replay what it kept.
  for (const message of ctx.logger.buffer ?? []) if (message.type === 'warn' || message.type === 'error') print(message)
  ctx.logger.exporter({ levels: { default: 2 }, export: print })
}

// Imports the compiled host entry the way DSH does, with process.argv[1] set to an
// entry point (the spec's section 12 check): the plugin resolves the host's event
// catalog relative to it, so this must load without starting an agent.
import { pathToFileURL } from 'node:url'
import { resolve } from 'node:path'

const entry = resolve('lib/index.js')
process.argv[1] = entry
const plugin = await import(pathToFileURL(entry).href)
if (plugin.name !== 'loop' || typeof plugin.apply !== 'function' || !Array.isArray(plugin.inject)) {
  console.error('lib/index.js is not the loop plugin', Object.keys(plugin))
  process.exit(1)
}
console.log(`lib/index.js: plugin "${plugin.name}", inject ${JSON.stringify(plugin.inject)}`)

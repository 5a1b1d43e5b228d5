/**
 * The host-alone side of row 6 in real `dsh web` (dsh-open.ts): registers `loop/change` in the host's event catalog,
 * as the plugin does, and nothing else, because a real DSH refuses to open a log holding an unregistered event type.
 * Loaded by absolute path from a `--patch` file.
 */
import { realpathSync } from 'node:fs'
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'

// The host's own copy of dsh-session, resolved from its entry point (the copy its persistence reads).
const hostSession = createRequire(realpathSync(process.argv[1])).resolve('@deepseek-ai/dsh-session')
;(await import(pathToFileURL(hostSession).href)).KNOWN_SESSION_EVENT_TYPES.add('loop/change')

export const name = 'loop-catalog-only'

export function apply() {}

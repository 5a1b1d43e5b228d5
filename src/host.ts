/**
 * The host's own DSH packages, found from its entry point (`process.argv[1]`):
 * a plugin installed in a profile may resolve other copies than the host runs,
 * so what the host writes is read from the host's copies, and the plugin's own
 * resolution is the fallback where the entry sees none (a test runner, a bundled host).
 * @module dsh-plugin-loop/host
 */
import { readFileSync, realpathSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'
import * as ownSessionModule from '@deepseek-ai/dsh-session'
import { DSH_PACKAGES, type HostFacts } from './host-support.ts'

/** What load-time code learns about the host. */
export interface HostInspection {
  /** The facts {@link judgeHost} decides on. */
  readonly facts: HostFacts
  /** The host's `@deepseek-ai/dsh-session` module, or `undefined` where the entry does not see one. */
  readonly hostSessionModule: unknown
}

/** Resolve `request` as a module at `path` would, or `undefined` where it sees none. */
function resolveAt(path: string | undefined, request: string): string | undefined {
  try {
    // The pnpm shim passes a symlinked entry that resolves only with its NODE_PATH; the real path always works.
    return createRequire(realpathSync(path ?? '')).resolve(request)
  } catch {
    return undefined
  }
}

/** A package's `version`, from the copy the host's entry sees, else the plugin's own. */
function packageVersion(entry: string | undefined, pluginPath: string, name: string): string | undefined {
  const request = `${name}/package.json`
  const path = resolveAt(entry, request) ?? resolveAt(pluginPath, request)
  const manifest: unknown = path === undefined ? undefined : JSON.parse(readFileSync(path, 'utf8'))
  const version = (manifest as { version?: unknown } | undefined)?.version
  return typeof version === 'string' ? version : undefined
}

/**
 * Read the host's DSH package versions and session format, and load its session module.
 * @param entry - the host's entry point (`process.argv[1]`).
 * @param pluginPath - where the plugin's own resolution starts: this module's file.
 * @returns the facts and the host's session module.
 */
export async function inspectHost(
  entry: string | undefined,
  pluginPath: string = fileURLToPath(import.meta.url),
): Promise<HostInspection> {
  const sessionPath = resolveAt(entry, '@deepseek-ai/dsh-session')
  let hostSessionModule: unknown
  try {
    hostSessionModule = sessionPath === undefined ? undefined : await import(pathToFileURL(sessionPath).href)
  } catch {
    hostSessionModule = undefined
  }
  const sessionModule = (hostSessionModule ?? ownSessionModule) as { SESSION_FORMAT_VERSION?: unknown }
  return {
    facts: {
      packages: DSH_PACKAGES.map((name) => ({ name, version: packageVersion(entry, pluginPath, name) })),
      sessionFormat: sessionModule.SESSION_FORMAT_VERSION,
    },
    hostSessionModule,
  }
}

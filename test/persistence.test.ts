/** The event-catalog registration of src/persistence.ts: which copies of dsh-session (src/host.ts finds the host's) learn "loop/change". */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { KNOWN_SESSION_EVENT_TYPES } from '@deepseek-ai/dsh-session'
import { afterEach, describe, expect, it } from 'vitest'
import { inspectHost } from '../src/host.ts'
import { registerLoopEventType } from '../src/persistence.ts'
import { tempDir } from '../harness/temp-dir.ts'

afterEach(() => {
  ;(KNOWN_SESSION_EVENT_TYPES as Set<string>).add('loop/change')
})

describe('event catalog', () => {
  it('also extends the catalog of the session module the host entry resolves', async () => {
    ;(KNOWN_SESSION_EVENT_TYPES as Set<string>).delete('loop/change')
    // From this repository the host entry resolves the same instance: one catalog, extended once.
    expect(registerLoopEventType((await inspectHost(`${process.cwd()}/package.json`)).hostSessionModule)).toEqual({
      catalogs: 1,
      hostResolved: true,
    })
    expect(KNOWN_SESSION_EVENT_TYPES.has('loop/change')).toBe(true)
    // No host entry to resolve from: only the plugin's own copy learns the type.
    expect(registerLoopEventType((await inspectHost(undefined)).hostSessionModule)).toEqual({
      catalogs: 1,
      hostResolved: false,
    })
    expect(registerLoopEventType((await inspectHost('')).hostSessionModule)).toEqual({
      catalogs: 1,
      hostResolved: false,
    })
    expect(registerLoopEventType((await inspectHost('/nonexistent/dsh/lib/bin.js')).hostSessionModule)).toEqual({
      catalogs: 1,
      hostResolved: false,
    })
  })

  it('follows a symlinked host entry to the host own copy of dsh-session (pnpm layout)', async () => {
    // A host installed by pnpm: node_modules/@deepseek-ai/dsh is a link into the store, where the
    // CLI's dependencies are its siblings. Only the link's real path can see them.
    const root = tempDir('loop-host-layout-')
    const store = join(root, 'store', 'node_modules', '@deepseek-ai')
    const hostSession = join(store, 'dsh-session')
    mkdirSync(join(store, 'dsh', 'lib'), { recursive: true })
    mkdirSync(hostSession, { recursive: true })
    writeFileSync(join(store, 'dsh', 'lib', 'bin.js'), '')
    writeFileSync(
      join(hostSession, 'package.json'),
      JSON.stringify({ name: '@deepseek-ai/dsh-session', type: 'module', exports: './index.js' }),
    )
    writeFileSync(join(hostSession, 'index.js'), 'export const KNOWN_SESSION_EVENT_TYPES = new Set(["user/message"])\n')
    mkdirSync(join(root, 'project', 'node_modules', '@deepseek-ai'), { recursive: true })
    symlinkSync(join(store, 'dsh'), join(root, 'project', 'node_modules', '@deepseek-ai', 'dsh'))

    const entry = join(root, 'project', 'node_modules', '@deepseek-ai', 'dsh', 'lib', 'bin.js')
    expect(registerLoopEventType((await inspectHost(entry)).hostSessionModule)).toEqual({
      catalogs: 2,
      hostResolved: true,
    })
    const hostCatalog = (
      (await import(pathToFileURL(join(hostSession, 'index.js')).href)) as { KNOWN_SESSION_EVENT_TYPES: Set<string> }
    ).KNOWN_SESSION_EVENT_TYPES
    expect([...hostCatalog]).toEqual(['user/message', 'loop/change'])
    expect(KNOWN_SESSION_EVENT_TYPES.has('loop/change')).toBe(true)
  })
})

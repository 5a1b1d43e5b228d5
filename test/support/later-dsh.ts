/**
 * A later DSH as the host check sees it: real rc.8 packages whose metadata reports another version.
 * @module test/support/later-dsh
 */
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { tempDir } from '../../harness/temp-dir.ts'

/**
 * A host entry in a fresh directory whose `node_modules` holds real DSH packages with their
 * metadata edited: each `package.json` a copy with another version, its `lib` a link to the real one.
 * @param versions - package name → the version its metadata reports.
 * @returns the entry to pass as `process.argv[1]`.
 */
export function hostWithVersions(versions: Readonly<Record<string, string>>): string {
  const root = tempDir('loop-later-dsh-')
  const require = createRequire(import.meta.url)
  for (const [name, version] of Object.entries(versions)) {
    const real = dirname(require.resolve(`${name}/package.json`))
    const copy = join(root, 'node_modules', name)
    mkdirSync(copy, { recursive: true })
    const manifest = JSON.parse(readFileSync(join(real, 'package.json'), 'utf8')) as Record<string, unknown>
    writeFileSync(join(copy, 'package.json'), JSON.stringify({ ...manifest, version }))
    symlinkSync(join(real, 'lib'), join(copy, 'lib'))
  }
  const entry = join(root, 'dsh', 'lib', 'bin.js')
  mkdirSync(dirname(entry), { recursive: true })
  writeFileSync(entry, '')
  return entry
}

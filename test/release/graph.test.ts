/**
 * The release command runs on Node alone, from the tarball of a plugin already removed (SPEC.md
 * §13 "Leaving loop"): nothing it imports, however deep, may need a package.
 */
import { readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')

/** Every module specifier a source file imports, for its names, its effects or dynamically (type-only imports aside). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8')
  return [...text.matchAll(/^import (?!type )(?:[^'"]*?from )?'([^']+)'|import\('([^']+)'\)/gm)].map(
    ([, from, dynamic]) => (from ?? dynamic)!,
  )
}

describe("the release command's module graph", () => {
  it('reaches nothing but Node built-ins and the fold, from its executable down', () => {
    const seen = new Set<string>()
    const packages = new Set<string>()
    const visit = (file: string) => {
      if (seen.has(file)) return
      seen.add(file)
      for (const specifier of importsOf(file))
        if (specifier.startsWith('.')) visit(join(dirname(file), specifier))
        else packages.add(specifier)
    }
    visit(join(root, 'src', 'release', 'bin.ts'))
    expect([...packages].filter((specifier) => !specifier.startsWith('node:'))).toEqual([])
    expect(
      [...seen]
        .map((file) => file.slice(root.length + 1))
        .filter((file) => !file.startsWith('src/release/'))
        .sort(),
    ).toEqual(['src/fold.ts', 'src/shared/guards.ts'])
  })
})

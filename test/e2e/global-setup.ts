/**
 * Packs the plugin once per run; every test installs that tarball into a fresh
 * DSH_HOME with `dsh plugin add`, exactly as a user would.
 */
import { rmSync } from 'node:fs'
import { dirname } from 'node:path'
import type { TestProject } from 'vitest/node'
import { packPlugin } from '../../harness/dsh-stack.ts'

declare module 'vitest' {
  export interface ProvidedContext {
    /** Absolute path of the packed plugin tarball. */
    loopTarball: string
  }
}

export default function setup(project: TestProject): () => void {
  const started = Date.now()
  const tarball = packPlugin()
  console.log(`e2e: packed ${tarball} in ${Date.now() - started} ms`)
  project.provide('loopTarball', tarball)
  return () => rmSync(dirname(tarball), { recursive: true, force: true })
}

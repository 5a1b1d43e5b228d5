import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

/**
 * The real-browser test: packs the plugin, installs it into a real `dsh web`
 * and drives Debian's Chromium through playwright-core. Run with
 * `pnpm run test:browser` (which installs Chromium when missing). Not part of
 * the coverage run; it exercises the built bundle, not the sources.
 */
export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: {
    include: ['test/browser/**/*.browser.test.ts'],
    environment: 'node',
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 180_000,
  },
})

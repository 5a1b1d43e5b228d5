import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

// The end-to-end suite: real `dsh web` processes with the plugin installed from its
// packed tarball (packed once per run by the global setup) and the mock model on loopback.
export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: {
    include: ['test/e2e/**/*.e2e.test.ts'],
    globalSetup: ['test/e2e/global-setup.ts'],
    fileParallelism: false,
    maxWorkers: 1,
    testTimeout: 90_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
    coverage: { enabled: false },
  },
})

import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

// The real-timer soak: minutes of wall-clock time with real JSONL persistence, so it
// runs on its own (`pnpm run test:soak`), not inside the coverage run.
export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: {
    include: ['test/soak/**/*.soak.ts'],
    fileParallelism: false,
    maxWorkers: 1,
    testTimeout: 600_000,
    hookTimeout: 60_000,
    coverage: { enabled: false },
  },
})

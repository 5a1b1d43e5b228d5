import { defineConfig } from 'tsdown'

export default defineConfig([
  {
    // The host half: an ESM Cordis plugin; host packages and zod stay external (peer/runtime deps).
    entry: { index: 'src/index.ts' },
    outDir: 'lib',
    clean: false,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    tsconfig: 'tsconfig.json',
    dts: true,
    sourcemap: true,
    hash: false,
    outExtensions: () => ({ js: '.js', dts: '.d.ts' }),
  },
])

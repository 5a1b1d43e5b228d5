import { defineConfig } from 'tsdown'
import { HOST_SEED_MODULES, dshCssModules, dshPurityGate, moduleLoaderAddons } from './scripts/dsh-client-build.ts'

/** The client bundle's module-loader id: DSH keys client bundles by package name. */
const CLIENT_ID = 'dsh-plugin-loop'

export default defineConfig([
  {
    // The host half: an ESM Cordis plugin; host packages (peers) and zod (the one dependency) stay external.
    // The release command (`bin`) rides along: it imports node built-ins only.
    entry: { index: 'src/index.ts', cli: 'src/release/bin.ts' },
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
  {
    // The browser half: a classic script, `window.__ModuleLoader__.load({ id, factory })`,
    // whose factory body is rolldown's CJS output; react and cordis come from the host.
    name: 'client',
    entry: { client: 'src/ui/index.ts' },
    outDir: 'lib',
    clean: false,
    format: 'cjs',
    // A cjs build defaults to platform node unless the rolldown input says otherwise.
    inputOptions: { platform: 'browser' },
    target: 'es2022',
    tsconfig: 'tsconfig.client.json',
    dts: false,
    sourcemap: true,
    hash: false,
    minify: false,
    outExtensions: () => ({ js: '.js' }),
    deps: { neverBundle: [...HOST_SEED_MODULES], onlyBundle: false },
    ...moduleLoaderAddons(CLIENT_ID),
    plugins: [dshCssModules({ pluginId: CLIENT_ID }), dshPurityGate({ id: CLIENT_ID })],
  },
])

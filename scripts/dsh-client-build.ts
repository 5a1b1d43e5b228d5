/**
 * Build pieces that turn the ESM + React client entry into a DSH client bundle:
 * the classic script `window.__ModuleLoader__.load({ id, factory })` that DSH
 * web serves at `/plugins/<package>/client.js` and materializes lazily.
 *
 * - `moduleLoaderAddons`: banner and footer wrapping rolldown's CJS chunk body
 *   into the factory (`require` is the host's module table).
 * - `dshCssModules`: `*.module.css` → lightningcss CSS-modules transform → a
 *   module that injects one `<style data-plugin data-plugin-css>` when the
 *   factory runs and default-exports the class-name map.
 * - `dshPurityGate`: fails the build when the chunk requires anything the
 *   host's module table does not answer, imports dynamically, or kept ESM syntax.
 *
 * Shapes follow DSH rc.8's own bundles (`@deepseek-ai/dsh-client-ui-goal/lib/client.js`).
 * @module scripts/dsh-client-build
 */
import { readFile } from 'node:fs/promises'
import { basename, relative } from 'node:path'
import { transform } from 'lightningcss'
import type { Rolldown } from 'tsdown'

/** What DSH web's module table answers without any client package (rc.8 shell seed). */
export const HOST_SEED_MODULES = [
  'react',
  'react/jsx-runtime',
  'react-dom',
  'react-dom/client',
  '@deepseek-ai/cordis',
  '@deepseek-ai/dsh-client-ui-slots',
  '@deepseek-ai/dsh-client-ui-primitives',
] as const

const CSS_PREFIX = '\0dsh-css:'
// tsdown's css guard rejects module ids ending in `.css` unless @tsdown/css is installed.
const CSS_SUFFIX = '.mjs'

/**
 * Banner and footer for a `format: 'cjs'` build: the chunk body becomes the factory body.
 * @param id - registration id; must equal the package name (the host's boot-graph row id).
 * @returns tsdown `banner` and `footer`.
 */
export function moduleLoaderAddons(id: string): { banner: string; footer: string } {
  return {
    banner: [
      'window.__ModuleLoader__.load({',
      `\tid: ${JSON.stringify(id)},`,
      '\tfactory: (require) => {',
      '\t\tvar module = { exports: {} };',
      '\t\tvar exports = module.exports;',
    ].join('\n'),
    footer: ['\t\treturn module.exports;', '\t}', '});'].join('\n'),
  }
}

/**
 * CSS modules for the client bundle, injected as a `<style>` by the factory.
 * @param options - `pluginId` is the package name (`data-plugin`, and the `data-plugin-css` prefix).
 * @returns a rolldown plugin.
 */
export function dshCssModules({ pluginId }: { pluginId: string }): Rolldown.Plugin {
  return {
    name: 'dsh-css-modules',
    async resolveId(source, importer) {
      if (!source.endsWith('.module.css')) return null
      const resolved = await this.resolve(source, importer, { skipSelf: true })
      if (resolved === null) return null
      return { id: `${CSS_PREFIX}${resolved.id}${CSS_SUFFIX}`, moduleSideEffects: true }
    },
    async load(id) {
      if (!id.startsWith(CSS_PREFIX)) return null
      const file = id.slice(CSS_PREFIX.length, -CSS_SUFFIX.length)
      this.addWatchFile(file)
      const result = transform({
        // A relative name keeps the class-name hashes independent of the checkout path.
        filename: relative(process.cwd(), file).split('\\').join('/'),
        code: await readFile(file),
        minify: true,
        cssModules: { pattern: '[hash]_[local]', dashedIdents: false },
      })
      const classes: Record<string, string> = {}
      for (const [local, entry] of Object.entries(result.exports ?? {}).sort(([a], [b]) => a.localeCompare(b))) {
        classes[local] = [entry.name, ...entry.composes.filter((c) => c.type === 'local').map((c) => c.name)].join(' ')
      }
      const tagId = `${pluginId}/${basename(file)}`
      const code = [
        `const css = ${JSON.stringify(result.code.toString())};`,
        `const tagId = ${JSON.stringify(tagId)};`,
        'if (typeof document !== "undefined" && document.querySelector("style[data-plugin-css=" + JSON.stringify(tagId) + "]") === null) {',
        '\tconst tag = document.createElement("style");',
        `\ttag.dataset.plugin = ${JSON.stringify(pluginId)};`,
        '\ttag.dataset.pluginCss = tagId;',
        '\ttag.textContent = css;',
        '\tdocument.head.appendChild(tag);',
        '}',
        `export default ${JSON.stringify(classes, null, '\t')};`,
      ].join('\n')
      return { code, moduleSideEffects: true, moduleType: 'js' }
    },
  }
}

/**
 * Fail the build unless the bundle is one chunk whose every `require` the host answers.
 * @param options - `id` names the bundle in errors; `extraExternals` are other client packages
 *   the bundle may require (declare them in `dsh.client.external` too).
 * @returns a rolldown plugin.
 */
export function dshPurityGate({
  id,
  extraExternals = [],
}: {
  id: string
  extraExternals?: readonly string[]
}): Rolldown.Plugin {
  const allowed = new Set<string>([...HOST_SEED_MODULES, ...extraExternals])
  return {
    name: 'dsh-purity-gate',
    generateBundle(_options, bundle) {
      const chunks = Object.values(bundle).filter((output) => output.type === 'chunk')
      if (chunks.length !== 1) this.error(`${id}: a DSH client bundle must be one chunk, got ${chunks.length}`)
      for (const chunk of chunks) {
        const foreign = chunk.imports.filter((spec) => !allowed.has(spec))
        if (foreign.length > 0)
          this.error(`${id}: ${chunk.fileName} requires modules the DSH host does not serve: ${foreign.join(', ')}`)
        if (chunk.dynamicImports.length > 0 || /\bimport\s*\(/.test(chunk.code))
          this.error(`${id}: ${chunk.fileName} imports dynamically`)
        if (/^\s*(import|export)\s/m.test(chunk.code)) this.error(`${id}: ${chunk.fileName} still contains ESM syntax`)
      }
    },
  }
}

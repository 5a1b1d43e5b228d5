// Every repository path the Markdown docs name must exist: a renamed or removed file
// otherwise leaves the docs pointing at nothing, silently. This reads the hand-written
// docs (both READMEs, SPEC.md, ui.md, docs/*.md), takes each backticked path whose
// first segment is a top-level entry of the repository (`src/loop.ts`, `scripts/bench/`,
// `test/support/*.ts`) and each relative Markdown link (`(docs/testing.md)`,
// `(../ui.md#10-packaging)`, resolved against the linking file), and fails listing
// file:line and the path for each one that does not exist, and for each link whose
// `#anchor` names no heading of the target. URLs, `$DSH_HOME/...`, package names and
// generated folders (`lib/`, `artifacts/`, node_modules) are not repository paths.
// Fenced code blocks are skipped: they hold commands and output, not references.
//
//   node scripts/check-doc-paths.mjs           (part of pnpm run check)
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
/** Build output, test output and installed packages: named in prose, never committed. */
const GENERATED = new Set(['node_modules', 'lib', 'artifacts', '.git', 'coverage'])

/** The hand-written Markdown files this check reads (BENCHMARKS.md is generated). */
function docFiles() {
  const top = ['README.md', 'README.zh.md', 'SPEC.md', 'ui.md']
  const docs = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
  return [...top, ...docs.map((name) => `docs/${name}`)].filter((file) => existsSync(join(root, file)))
}

/** Every file under the repository, as forward-slash paths relative to the root. */
function allFiles(dir = root, out = []) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (dir === root && GENERATED.has(entry.name)) continue
    if (entry.name === 'node_modules') continue
    const full = join(dir, entry.name)
    if (entry.isDirectory()) allFiles(full, out)
    else out.push(relative(root, full).split(sep).join('/'))
  }
  return out
}

const files = allFiles()
/** Top-level entries: a backticked token starting with one of these is a repository path. */
const roots = new Set(readdirSync(root).filter((name) => !GENERATED.has(name)))

/** Whether a repository-relative path (maybe a glob with `*` / `**`, maybe ending in `/`) exists. */
function exists(path) {
  const clean = path.replace(/\/+$/, '')
  if (clean === '' || clean === '.') return true
  if (!clean.includes('*')) return existsSync(join(root, clean))
  const pattern = clean
    .split('**')
    .map((part) =>
      part
        .split('*')
        .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
        .join('[^/]*'),
    )
    .join('.*')
  const re = new RegExp(`^${pattern}(/.*)?$`)
  return files.some((file) => re.test(file))
}

/** GitHub's heading anchors of a Markdown file (lowercase, punctuation dropped, spaces to `-`, repeats numbered). */
function anchors(file) {
  const seen = new Map()
  const out = new Set()
  let fenced = false
  for (const line of readFileSync(join(root, file), 'utf8').split('\n')) {
    if (line.trimStart().startsWith('```')) fenced = !fenced
    const heading = !fenced && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)
    if (!heading) continue
    const base = heading[1]
      .replace(/`/g, '')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-')
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    out.add(count === 0 ? base : `${base}-${count}`)
  }
  return out
}

const problems = []
for (const file of docFiles()) {
  const lines = readFileSync(join(root, file), 'utf8').split('\n')
  let fenced = false
  lines.forEach((line, index) => {
    if (line.trimStart().startsWith('```')) {
      fenced = !fenced
      return
    }
    if (fenced) return
    const where = `${file}:${index + 1}`
    // Inline code spans: a repository path when the first segment is a top-level entry.
    for (const [, code] of line.matchAll(/`([^`\s]+)`/g)) {
      const path = code.replace(/[#:].*$/, '').replace(/^\.\//, '')
      const first = path.split('/')[0]
      if (!roots.has(first) || (!path.includes('/') && !/\.[a-z]+$/.test(path))) continue
      if (!exists(path)) problems.push(`${where}: \`${code}\` does not exist`)
    }
    // Markdown links, images and reference definitions: relative targets resolve against the linking file.
    const targets = [...line.matchAll(/\]\(<?([^)\s>]+)>?(?:\s+"[^"]*")?\)/g)].map((match) => match[1])
    const definition = /^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?/.exec(line)
    if (definition) targets.push(definition[1])
    for (const target of targets) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue
      const [pathPart, anchor] = target.split('#')
      const abs = pathPart === '' ? join(root, file) : resolve(dirname(join(root, file)), pathPart)
      const rel = relative(root, abs).split(sep).join('/')
      if (rel.startsWith('..')) {
        problems.push(`${where}: (${target}) points outside the repository`)
        continue
      }
      if (!exists(rel)) {
        problems.push(`${where}: (${target}) does not exist`)
        continue
      }
      if (anchor && rel.endsWith('.md') && statSync(abs).isFile() && !anchors(rel).has(anchor)) {
        problems.push(`${where}: (${target}) names no heading of ${rel}`)
      }
    }
  })
}

if (problems.length > 0) {
  console.error(`check-doc-paths: ${problems.length} path(s) in the docs do not exist:`)
  for (const problem of problems) console.error(`  ${problem}`)
  process.exit(1)
}
console.log('check-doc-paths: every repository path the docs name exists')

// Every citation resolves inside the repository (SPEC.md is where the user's specification is
// restated, and names the section it restates). In src/, test/ and scripts/ a section sign is
// `SPEC.md` or `ui.md`, the section's number and its name in quotes, as that file's
// `## N. Name` heading has them (or a standard's own, RFC or XML); every SPEC.md or ui.md section
// the docs cite exists; only SPEC.md names the specification's sections; code points at no
// document the repository does not hold.
//
//   node scripts/check-citations.mjs      (part of pnpm run check)
import { readFileSync, readdirSync } from 'node:fs'
import { join, relative } from 'node:path'

const root = join(import.meta.dirname, '..')
const headings = (file) =>
  new Map(
    [...readFileSync(join(root, file), 'utf8').matchAll(/^## (\d+)\. (.+)$/gm)].map(([, number, name]) => [
      number,
      name,
    ]),
  )
const DOCUMENTS = { 'SPEC.md': headings('SPEC.md'), 'ui.md': headings('ui.md') }

/** Files under a folder whose names match, recursively. */
function files(folder, pattern) {
  return readdirSync(join(root, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && pattern.test(entry.name))
    .map((entry) => relative(root, join(entry.parentPath, entry.name)))
}

const problems = []
const code = [
  ...files('src', /\.(ts|tsx|css)$/),
  ...files('test', /\.(ts|tsx)$/),
  ...files('scripts', /\.(ts|mjs|sh|yml)$/),
  ...files('harness', /\.ts$/),
]
// The section sign, spelled so that this file cites nothing.
const SIGN = '\u00a7'
for (const file of code) {
  // A citation may wrap: comment leaders at line starts read as one space.
  const text = readFileSync(join(root, file), 'utf8').replace(/\n[ \t]*(?:\*(?!\/)|\/\/|#)?[ \t]*/g, ' ')
  for (const match of text.matchAll(new RegExp(SIGN, 'g'))) {
    const before = text.slice(0, match.index)
    const after = text.slice(match.index)
    const where = `${file}: ${text.slice(Math.max(0, match.index - 40), match.index + 40)}`
    if (/(RFC \d+|XML 1\.0) $/.test(before)) continue
    const document = /(SPEC\.md|ui\.md) $/.exec(before)?.[1]
    const cited = new RegExp(`^${SIGN}(\\d+) "([^"]+)"`).exec(after)
    if (document === undefined || cited === null) {
      problems.push(`${where}: cite a section as SPEC.md ${SIGN}N "Name" or ui.md ${SIGN}N "Name"`)
      continue
    }
    const name = DOCUMENTS[document].get(cited[1])
    if (name !== cited[2])
      problems.push(
        `${where}: ${document} has no ${SIGN}${cited[1]} "${cited[2]}"${name === undefined ? '' : ` (it is "${name}")`}`,
      )
  }
}
// A pointer to a document the repository does not hold (the user's specification and test plan,
// the developers' notes on the host, their guide) resolves nowhere: say it, or cite SPEC.md.
const OUTSIDE =
  /\b(host notes|dsh-host-notes|DEVELOPERS\.md|the guide\b|the test plan\b|the specification (?:allows|says|asks|requires|forbids))/i
for (const file of code) {
  if (file === 'scripts/check-citations.mjs') continue
  readFileSync(join(root, file), 'utf8')
    .split('\n')
    .forEach((line, index) => {
      const pointer = OUTSIDE.exec(line)?.[1]
      if (pointer !== undefined && !line.includes(`SPEC.md ${SIGN}`))
        problems.push(`${file}:${index + 1}: "${pointer}" points outside the repository: ${line.trim()}`)
    })
}

const docs = ['README.md', 'README.zh.md', 'ui.md', 'BENCHMARKS.md', ...files('docs', /\.md$/)]
for (const file of docs)
  readFileSync(join(root, file), 'utf8')
    .split('\n')
    .forEach((line, index) => {
      const where = `${file}:${index + 1}`
      if (new RegExp(`(specification's|规范) ?${SIGN}`).test(line))
        problems.push(`${where}: only SPEC.md names the specification's sections: ${line.trim()}`)
      for (const [, document, number] of line.matchAll(
        new RegExp(`(SPEC\\.md|ui\\.md)(?:\\]\\([^)]*\\))? ${SIGN}(\\d+)`, 'g'),
      ))
        if (!DOCUMENTS[document].has(number)) problems.push(`${where}: ${document} has no ${SIGN}${number}`)
    })

if (problems.length > 0) {
  console.error(`check-citations: ${problems.length} citation(s) do not resolve:\n  ${problems.join('\n  ')}`)
  process.exit(1)
}
console.log('check-citations: every citation resolves inside the repository')

// The two READMEs are one document in two languages. README.i18n.yaml records the
// git blob hash of each side as of the last state confirmed consistent (the format
// DSH's own packages use). This check fails when either side changed since then, or
// when the two differ in shape: headings, images, links to files, fenced blocks and
// the blocks test/docs.test.ts checks.
//
//   node scripts/check-readme-pair.mjs           check (part of pnpm run check)
//   node scripts/check-readme-pair.mjs --write   after bringing both sides in step, re-record
import { createHash } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const RECORD = 'README.i18n.yaml'
const SIDES = ['README.md', 'README.zh.md']
const HEADER = `# Bilingual-pair consistency record: the git blob hash of each side as of the last
# confirmed-consistent state. Both languages carry equal authority; after editing either
# side, bring the other along and re-record with:
#   node scripts/check-readme-pair.mjs --write
`

/** The git blob hash of a file's bytes (what `git hash-object` prints). */
function blobHash(bytes) {
  return createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex')
}

/** The parts of a README that must be the same in both languages, one string per line. */
function shape(text, self) {
  const parts = []
  let fenced = false
  for (const line of text.split('\n')) {
    if (line.trimStart().startsWith('```')) {
      fenced = !fenced
      if (fenced) parts.push(`fence ${line.trim()}`)
      continue
    }
    if (fenced) continue
    const heading = /^(#{1,6}) /.exec(line)
    if (heading) parts.push(`heading level ${heading[1].length}`)
    for (const marker of line.matchAll(/<!-- (\/?docs-check:[a-z-]+) -->/g)) parts.push(marker[1])
    for (const link of line.matchAll(/(!?)\[[^\]]*\]\(([^)\s]+)\)/g)) {
      const target = link[2].split('#')[0]
      // In-page anchors differ by language; the language switch points at the other side.
      if (target === '' || /^https?:/.test(target)) continue
      parts.push(
        `${link[1] === '!' ? 'image' : 'link'} ${SIDES.includes(target) && target !== self ? 'the other README' : target}`,
      )
    }
  }
  return parts
}

const texts = SIDES.map((side) => readFileSync(join(root, side)))
const problems = []

const [english, chinese] = SIDES.map((side, index) => shape(texts[index].toString('utf8'), side))
for (let index = 0; index < Math.max(english.length, chinese.length); index += 1) {
  if (english[index] !== chinese[index]) {
    problems.push(
      `the two READMEs differ in shape at item ${index + 1}: ${SIDES[0]} has ${english[index] ?? 'nothing more'}, ${SIDES[1]} has ${chinese[index] ?? 'nothing more'}`,
    )
    break
  }
}

const hashes = texts.map(blobHash)
if (process.argv.includes('--write')) {
  if (problems.length > 0) {
    console.error(`${RECORD} not written:\n  ${problems.join('\n  ')}`)
    process.exit(1)
  }
  writeFileSync(join(root, RECORD), `${HEADER}${SIDES.map((side, index) => `${side}: ${hashes[index]}`).join('\n')}\n`)
  console.log(`${RECORD}: recorded ${SIDES.map((side, index) => `${side} ${hashes[index].slice(0, 12)}`).join(', ')}`)
  process.exit(0)
}

const recorded = new Map()
if (!existsSync(join(root, RECORD)))
  problems.push(
    `${RECORD} is missing; once both sides are in step, create it with node scripts/check-readme-pair.mjs --write`,
  )
for (const line of existsSync(join(root, RECORD)) ? readFileSync(join(root, RECORD), 'utf8').split('\n') : []) {
  const entry = /^([^#\s][^:]*):\s*([0-9a-f]{40})\s*$/.exec(line)
  if (entry) recorded.set(entry[1], entry[2])
}
SIDES.forEach((side, index) => {
  const other = SIDES[1 - index]
  if (!existsSync(join(root, RECORD))) return
  if (!recorded.has(side)) problems.push(`${RECORD} records no hash for ${side}`)
  else if (recorded.get(side) !== hashes[index])
    problems.push(
      `${side} changed since the pair was recorded (recorded ${recorded.get(side).slice(0, 12)}, now ${hashes[index].slice(0, 12)}): bring ${other} along, then run node scripts/check-readme-pair.mjs --write`,
    )
})
for (const side of recorded.keys())
  if (!SIDES.includes(side)) problems.push(`${RECORD} records ${side}, which is not one of the pair`)

if (problems.length > 0) {
  console.error(`README pair out of step:\n  ${problems.join('\n  ')}`)
  process.exit(1)
}
console.log(`README pair in step (${SIDES.join(' ↔ ')}, ${RECORD})`)

/**
 * SPEC.md §10 "Departures from the specification", read as data: each row's key, sentence and
 * the tests that show its defect, joined with the edits that revert it
 * (`harness/departure-reverts.ts`). The docs test checks every row against the tests it names
 * and its edits; `scripts/revert-departures.sh` reverts each row and runs them. Run as a script,
 * it prints one case a line for the shell: `key|file::perl edit;;file::perl edit|test file|test title pattern`.
 * @module harness/departures
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { DEPARTURE_REVERTS, type RevertEdit } from './departure-reverts.ts'

/** A test a row names: its file and the start of its title (`…` marks a start, `%j` any value). */
interface NamedTest {
  readonly file: string
  readonly title: string
}

/** One row of the table. */
interface Departure {
  readonly key: string
  readonly sentence: string
  readonly tests: readonly NamedTest[]
  readonly reverts: readonly RevertEdit[]
}

/** A table row's cells, `\|` kept as a `|` inside its cell. */
function cellsOf(line: string): string[] {
  return line
    .slice(1, line.lastIndexOf('|'))
    .split(/(?<!\\)\|/)
    .map((cell) => cell.trim().replaceAll('\\|', '|'))
}

/**
 * The departures of SPEC.md's text.
 * @param spec - SPEC.md.
 * @returns each row of the departures table, in order.
 */
export function readDepartures(spec: string): Departure[] {
  const section = spec.slice(spec.indexOf('## 10. Departures'), spec.indexOf('**Extensions**'))
  const lines = section.split('\n').filter((line) => line.startsWith('|'))
  const header = cellsOf(lines[0]!)
  const testColumn = header.indexOf('Test')
  return lines.slice(2).map((line) => {
    const cells = cellsOf(line)
    const key = cells[0]!.replaceAll('`', '')
    const tests: NamedTest[] = []
    let file: string | undefined
    for (const [, path, title] of cells[testColumn]!.matchAll(/`(test\/[^`]+)`|"([^"]+)"/g))
      if (path !== undefined) file = path
      else if (file !== undefined) tests.push({ file, title: title!.replace(/,? …$/, '') })
    return { key, sentence: cells[1]!, tests, reverts: DEPARTURE_REVERTS[key] ?? [] }
  })
}

/**
 * A title as a pattern for `vitest -t`: its text exact, a `%j` or `%s` any value.
 * @param title - the start of a test's title.
 * @returns the pattern.
 */
function titlePattern(title: string): string {
  return title
    .split(/%[jsdio]/)
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*')
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const spec = readFileSync(new URL('../SPEC.md', import.meta.url), 'utf8')
  for (const departure of readDepartures(spec)) {
    const edits = departure.reverts.map(({ file, perl }) => `${file}::${perl}`).join(';;')
    for (const { file, title } of departure.tests)
      process.stdout.write(`${departure.key}|${edits}|${file}|${titlePattern(title)}\n`)
  }
}

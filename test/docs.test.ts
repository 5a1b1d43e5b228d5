/**
 * The READMEs' reference blocks against what the code registers. Each block sits
 * between `<!-- docs-check:NAME -->` and `<!-- /docs-check:NAME -->`:
 *
 * - `tool-schemas`: one fenced JSON block, equal to `ctx.tools.schemas(agent)`
 *   for the loop tools of a root agent in a real host;
 * - `one-shot-note`: the sentence a one-shot host appends to `loop_create`;
 * - `error-codes`: a table `code | when` with every `LoopErrorCode` (src/errors.ts)
 *   once, in declaration order; the English `when` is the member's comment, the
 *   Chinese one holds the same `code` spans and numbers;
 * - `config`: a table `setting | type | default | range | effect`, one row per
 *   `Config` field (src/config.ts) in schema order, the effect being the field's
 *   description in that README's language (the Settings card shows the same text).
 *
 * On a mismatch the assertion prints the expected text, so adding a setting or
 * a code means pasting one row into both READMEs.
 *
 * SPEC.md §10 "Departures from the specification", its table, is checked the same way: every row names
 * test files that exist and test titles each file holds, and has edits to files that exist
 * (harness/departure-reverts.ts, by the row's key).
 */
import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEPARTURE_REVERTS } from '../harness/departure-reverts.ts'
import { readDepartures } from '../harness/departures.ts'
import { Config } from '../src/config.ts'
import { bootHost, createFakeAgent, type Host } from './support/host.ts'

const root = fileURLToPath(new URL('..', import.meta.url))

/** The two READMEs and the language of each one's config descriptions. */
const READMES = [
  { file: 'README.md', lang: 'en' },
  { file: 'README.zh.md', lang: 'zh' },
] as const

/**
 * The text between a block's two markers.
 * @param text - a README.
 * @param name - the block name.
 * @returns the block's inner text.
 */
function docsBlock(text: string, name: string): string {
  const open = `<!-- docs-check:${name} -->`
  const close = `<!-- /docs-check:${name} -->`
  const start = text.indexOf(open)
  const end = text.indexOf(close)
  if (start < 0 || end < start) throw new Error(`no ${open} … ${close} block`)
  if (text.indexOf(open, start + open.length) >= 0) throw new Error(`${open} appears twice`)
  return text.slice(start + open.length, end)
}

/**
 * The cells of every table body row in a block (the header and the `|---|` rule are skipped).
 * @param block - block text holding one Markdown table.
 * @returns rows of trimmed cells.
 */
function tableRows(block: string): string[][] {
  const lines = block.split('\n').filter((line) => line.trim().startsWith('|'))
  return lines.slice(2).map((line) =>
    line
      .trim()
      .replace(/^\|/, '')
      .replace(/\|$/, '')
      .split('|')
      .map((cell) => cell.trim()),
  )
}

/** The one fenced JSON block of a block, parsed. */
function fencedJson(block: string): unknown {
  const match = /```json\n([\s\S]*?)\n```/.exec(block)
  if (match === null) throw new Error('no ```json fence in the block')
  return JSON.parse(match[1]!)
}

/**
 * The members of `LoopErrorCode`, each with the comment that says when it is thrown,
 * read from the source so the type stays the one list.
 */
function loopErrorCodes(): { readonly code: string; readonly when: string }[] {
  const path = `${root}src/errors.ts`
  const text = readFileSync(path, 'utf8')
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest)
  const alias = source.statements.find(
    (node): node is ts.TypeAliasDeclaration => ts.isTypeAliasDeclaration(node) && node.name.text === 'LoopErrorCode',
  )
  if (alias === undefined || !ts.isUnionTypeNode(alias.type))
    throw new Error('LoopErrorCode is no longer a union in src/errors.ts')
  const members = alias.type.types
  return members.map((member, index) => {
    if (!ts.isLiteralTypeNode(member) || !ts.isStringLiteral(member.literal))
      throw new Error(`LoopErrorCode member ${member.getText(source)} is not a string literal`)
    // The member's comment sits before its `|`, after the member before it (or the `=`).
    const trivia = text.slice(index === 0 ? alias.type.pos : members[index - 1]!.end, member.getStart(source))
    const when = /\/\*\*\s*([\s\S]*?)\s*\*\/\s*\|?\s*$/.exec(trivia)?.[1]
    if (when === undefined) throw new Error(`LoopErrorCode member ${member.literal.text} has no comment saying when`)
    return { code: member.literal.text, when }
  })
}

/** The facts a sentence states that can go stale: its `code` spans and its numbers. */
const checkedFacts = (text: string) => [...text.matchAll(/`[^`]+`|\d+/g)].map(([fact]) => fact).sort()

/** What schemastery keeps about one field (the parts the table states). */
interface FieldSchema {
  readonly type: string
  readonly meta: {
    readonly default?: unknown
    readonly min?: number
    readonly max?: number
    readonly step?: number
    readonly description?: Record<string, string>
  }
}

/** A number as the table writes it: digits grouped by commas. */
const grouped = (value: number) => value.toLocaleString('en-US')

/**
 * The table row a `Config` field must have.
 * @param name - field name.
 * @param field - its schemastery schema.
 * @param lang - the README's language, for the effect column.
 * @returns the row's cells.
 */
function configRow(name: string, field: FieldSchema, lang: 'en' | 'zh'): string[] {
  const { meta } = field
  let type: string
  let range: string
  if (field.type === 'number') {
    type = meta.step === 1 ? '`integer`' : '`number`'
    range = `${meta.min === undefined ? '' : grouped(meta.min)}–${meta.max === undefined ? '' : grouped(meta.max)}`
  } else if (field.type === 'boolean' || field.type === 'string') {
    type = `\`${field.type}\``
    range = '—'
  } else {
    throw new Error(
      `config field ${name} has schema type ${field.type}; teach test/docs.test.ts how the README states it`,
    )
  }
  const fallback = typeof meta.default === 'number' ? grouped(meta.default) : String(meta.default)
  // The Settings card shows the same text in the user's language, so each language needs its own.
  const description = meta.description?.[lang]
  if (description === undefined)
    throw new Error(`config field ${name} has no ${lang} description; give it one in Config's i18n`)
  return [`\`${name}\``, type, fallback, range, description]
}

/** A table rendered back to text, so a failing comparison prints the rows to paste. */
const renderRows = (rows: string[][]) => rows.map((cells) => `| ${cells.join(' | ')} |`).join('\n')

describe('README reference blocks match the code', () => {
  let host: Host
  let oneShotHost: Host
  let schemas: unknown[]
  let oneShotCreateDescription: string

  beforeAll(async () => {
    host = await bootHost()
    const fake = await createFakeAgent(host, 'docs-check')
    schemas = host.ctx.tools.schemas(fake.agent).filter((schema) => schema.name.startsWith('loop_'))
    oneShotHost = await bootHost({ oneShotHost: true })
    const oneShotFake = await createFakeAgent(oneShotHost, 'docs-check-one-shot')
    oneShotCreateDescription = oneShotHost.ctx.tools
      .schemas(oneShotFake.agent)
      .find((schema) => schema.name === 'loop_create')!.description
  })

  afterAll(async () => {
    await host.dispose()
    await oneShotHost.dispose()
  })

  for (const { file, lang } of READMES) {
    describe(file, () => {
      const text = readFileSync(`${root}${file}`, 'utf8')

      it('shows the loop tools exactly as the host hands them to the model', () => {
        expect(schemas.map((schema) => (schema as { name: string }).name)).toEqual([
          'loop_create',
          'loop_list',
          'loop_delete',
        ])
        expect(JSON.stringify(fencedJson(docsBlock(text, 'tool-schemas')), null, 2)).toBe(
          JSON.stringify(schemas, null, 2),
        )
      })

      it('quotes the sentence a one-shot host appends to loop_create', () => {
        const create = (schemas as { name: string; description: string }[]).find(
          (schema) => schema.name === 'loop_create',
        )!
        const note = docsBlock(text, 'one-shot-note')
          .replace(/\s+/g, ' ')
          .trim()
          .replace(/^\*(.*)\*$/, '$1')
        expect(`${create.description} ${note}`).toBe(oneShotCreateDescription)
      })

      it('lists every error code once, in the order of LoopErrorCode, saying when as its comment in the code does', () => {
        const rows = tableRows(docsBlock(text, 'error-codes'))
        const codes = loopErrorCodes()
        expect(rows.map(([code]) => code).join('\n')).toBe(codes.map(({ code }) => `\`${code}\``).join('\n'))
        // English quotes the comment; Chinese says it in its words, with the same identifiers and numbers.
        if (lang === 'en')
          expect(renderRows(rows)).toBe(renderRows(codes.map(({ code, when }) => [`\`${code}\``, when])))
        else expect(rows.map(([, when]) => checkedFacts(when!))).toEqual(codes.map(({ when }) => checkedFacts(when)))
      })

      it('has one configuration row per Config field, with its type, default, range and description', () => {
        const fields = (Config as unknown as { dict: Record<string, FieldSchema> }).dict
        const expected = Object.entries(fields).map(([name, field]) => configRow(name, field, lang))
        expect(renderRows(tableRows(docsBlock(text, 'config')))).toBe(renderRows(expected))
      })
    })
  }
})

describe("SPEC.md's departures", () => {
  const departures = readDepartures(readFileSync(`${root}SPEC.md`, 'utf8'))

  it('each name the tests that show their defect, every test named is there, and the edits that revert it', () => {
    expect(departures.length).toBeGreaterThan(10)
    // Every key of the edits has its row, once.
    expect(departures.map((departure) => departure.key).sort()).toEqual(Object.keys(DEPARTURE_REVERTS).sort())
    for (const { sentence, tests, reverts } of departures) {
      expect(tests.length, `the tests of "${sentence}"`).toBeGreaterThan(0)
      for (const { file, title } of tests) {
        const source = readFileSync(`${root}${file}`, 'utf8')
        // A title with `%j` holds each part between the placeholders.
        for (const part of title.split(/%[jsdio]/)) expect(source, `"${title}" in ${file}`).toContain(part)
      }
      expect(reverts.length, `the revert of "${sentence}"`).toBeGreaterThan(0)
      for (const { file, perl } of reverts) {
        expect(existsSync(`${root}${file}`), `${file}, reverted for "${sentence}"`).toBe(true)
        expect(perl, `the edit of "${sentence}"`).toMatch(/^s\/.+\/.*\/m?$/s)
      }
    }
  })
})

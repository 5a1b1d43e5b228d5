/**
 * A small strict XML reader for heartbeat messages. It accepts only what XML 1.0
 * accepts for element-only documents without attributes, declarations or CDATA, and
 * refuses everything a lenient parser would guess at (a bare `&` or `<`, an unknown
 * entity, a mismatched end tag, a character outside the XML `Char` production), so
 * a heartbeat that reads back here is well-formed for any conforming parser.
 */

/** One parsed element: its name and its children in document order. */
export interface XmlElement {
  readonly name: string
  readonly children: readonly (XmlElement | string)[]
}

/** A heartbeat read back from its text. */
export interface ParsedHeartbeat {
  readonly loopId: string
  readonly prompt: string
}

const PREDEFINED_ENTITIES: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }

/** XML 1.0 `Char`: TAB, LF, CR, U+0020–U+D7FF, U+E000–U+FFFD, U+10000–U+10FFFF. */
function isXmlChar(codePoint: number): boolean {
  return (
    codePoint === 0x9 ||
    codePoint === 0xa ||
    codePoint === 0xd ||
    (codePoint >= 0x20 && codePoint <= 0xd7ff) ||
    (codePoint >= 0xe000 && codePoint <= 0xfffd) ||
    (codePoint >= 0x10000 && codePoint <= 0x10ffff)
  )
}

/** A deliberately narrow XML `Name`: what heartbeat element names need. */
const NAME = /^[A-Za-z_][A-Za-z0-9_.-]*/

/** Cursor over normalized document text. */
class Reader {
  position = 0
  constructor(readonly text: string) {}

  fail(reason: string): never {
    throw new Error(`not well-formed XML at offset ${this.position}: ${reason}`)
  }

  startsWith(token: string): boolean {
    return this.text.startsWith(token, this.position)
  }

  expect(token: string): void {
    if (!this.startsWith(token)) this.fail(`expected ${JSON.stringify(token)}`)
    this.position += token.length
  }

  name(): string {
    const match = NAME.exec(this.text.slice(this.position))
    if (match === null) this.fail('expected a name')
    this.position += match[0].length
    return match[0]
  }

  /** One element with no attributes; whitespace is allowed only before `>` of a tag. */
  element(): XmlElement {
    this.expect('<')
    const name = this.name()
    this.skipSpace()
    this.expect('>')
    const children: (XmlElement | string)[] = []
    for (;;) {
      if (this.position >= this.text.length) this.fail(`unclosed <${name}>`)
      if (this.startsWith('</')) {
        this.position += 2
        const closing = this.name()
        if (closing !== name) this.fail(`</${closing}> closes <${name}>`)
        this.skipSpace()
        this.expect('>')
        return { name, children }
      }
      if (this.startsWith('<')) children.push(this.element())
      else children.push(this.characterData())
    }
  }

  /** Text up to the next `<`, with references resolved and every character checked. */
  characterData(): string {
    let value = ''
    while (this.position < this.text.length && !this.startsWith('<')) {
      if (this.startsWith(']]>')) this.fail('"]]>" in character data')
      if (this.startsWith('&')) {
        value += this.reference()
        continue
      }
      const codePoint = this.text.codePointAt(this.position)!
      if (!isXmlChar(codePoint)) this.fail(`character U+${codePoint.toString(16).toUpperCase().padStart(4, '0')} is not allowed`)
      value += String.fromCodePoint(codePoint)
      this.position += codePoint > 0xffff ? 2 : 1
    }
    return value
  }

  /** `&name;`, `&#N;` or `&#xH;`. */
  reference(): string {
    const match = /^&(?:([A-Za-z]+)|#([0-9]+)|#x([0-9A-Fa-f]+));/.exec(this.text.slice(this.position))
    if (match === null) this.fail('bare "&"')
    this.position += match[0].length
    const [, entity, decimal, hex] = match
    if (entity !== undefined) {
      const resolved = PREDEFINED_ENTITIES[entity]
      if (resolved === undefined) this.fail(`undeclared entity &${entity};`)
      return resolved
    }
    const codePoint = decimal !== undefined ? Number.parseInt(decimal, 10) : Number.parseInt(hex!, 16)
    if (!isXmlChar(codePoint)) this.fail(`character reference to U+${codePoint.toString(16)} is not allowed`)
    return String.fromCodePoint(codePoint)
  }

  skipSpace(): void {
    while (/^[ \t\n]/.test(this.text.slice(this.position, this.position + 1))) this.position += 1
  }
}

/**
 * Parse a document holding exactly one root element.
 * Line ends are normalized first (CRLF and lone CR become LF), as every XML processor does.
 * @param text - the document.
 * @returns the root element.
 * @throws Error naming the first well-formedness violation.
 */
export function parseXmlDocument(text: string): XmlElement {
  const reader = new Reader(text.replace(/\r\n?/g, '\n'))
  reader.skipSpace()
  const root = reader.element()
  reader.skipSpace()
  if (reader.position !== reader.text.length) reader.fail('content after the root element')
  return root
}

/** The text of an element that may hold only character data. */
function textOf(element: XmlElement): string {
  if (element.children.some((child) => typeof child !== 'string')) throw new Error(`<${element.name}> must hold only text`)
  return element.children.join('')
}

/**
 * Read a heartbeat back: `<heartbeat>` holding exactly `<loop_id>` then `<prompt>`,
 * separated only by whitespace.
 * @param text - the text given to `agent.send`.
 * @returns the id and prompt exactly as a conforming XML parser reads them.
 */
export function parseHeartbeat(text: string): ParsedHeartbeat {
  const root = parseXmlDocument(text)
  if (root.name !== 'heartbeat') throw new Error(`root is <${root.name}>, not <heartbeat>`)
  const elements = root.children.filter((child): child is XmlElement => typeof child !== 'string')
  const stray = root.children.find((child) => typeof child === 'string' && child.trim() !== '')
  if (stray !== undefined) throw new Error(`text ${JSON.stringify(stray)} directly inside <heartbeat>`)
  if (elements.map((element) => element.name).join(',') !== 'loop_id,prompt') {
    throw new Error(`<heartbeat> holds ${elements.map((element) => `<${element.name}>`).join('')}, not <loop_id><prompt>`)
  }
  return { loopId: textOf(elements[0]!), prompt: textOf(elements[1]!) }
}

/**
 * Heartbeat messages read back by an independent, maintained XML 1.0 parser
 * (saxes: strict, conforming, a well-formedness error for anything a lenient
 * parser would guess at: a bare `&` or `<`, an unknown entity, a mismatched end
 * tag, a character outside the XML `Char` production). On top of well-formedness
 * the heartbeat's own shape is enforced: element-only, no attributes,
 * declarations, comments, processing instructions or CDATA, so a heartbeat that
 * reads back here reads back the same in any conforming parser.
 *
 * Also the one place the tests write a heartbeat's text out ({@link heartbeatText},
 * independently of the plugin's renderer) and read its loop id from a log or a
 * request ({@link heartbeatLoopId}).
 * @module test/support/heartbeat-xml
 */
import { SaxesParser } from 'saxes'

/**
 * The exact text of a heartbeat, written out independently of the plugin's code.
 * @param loopId - the loop's id.
 * @param escapedPrompt - its prompt as the heartbeat carries it, XML specials already escaped.
 * @returns the text given to `agent.send`.
 */
export function heartbeatText(loopId: string, escapedPrompt: string): string {
  return `<heartbeat>\n  <loop_id>${loopId}</loop_id>\n  <prompt>${escapedPrompt}</prompt>\n</heartbeat>`
}

/**
 * The loop id a heartbeat's text names, read as a log or a request shows it (no well-formedness check: {@link parseHeartbeat} is the strict reader).
 * @param text - a message's text.
 * @returns the id, or `undefined` when the text names none.
 */
export function heartbeatLoopId(text: string): string | undefined {
  return /<loop_id>([^<]*)<\/loop_id>/.exec(text)?.[1]
}

/** A heartbeat read back from its text. */
export interface ParsedHeartbeat {
  readonly loopId: string
  readonly prompt: string
}

/** One parsed element: its name and its children in document order. */
interface XmlElement {
  readonly name: string
  readonly children: (XmlElement | string)[]
}

/**
 * Parse a document holding exactly one root element, as saxes reads it (line ends
 * normalized, references resolved).
 * @param text - the document.
 * @returns the root element.
 * @throws Error naming the first well-formedness or shape violation.
 */
function parseXmlDocument(text: string): XmlElement {
  const parser = new SaxesParser()
  const refuse = (what: string) => () => {
    throw new Error(`not a heartbeat document: ${what}`)
  }
  const open: XmlElement[] = []
  let root: XmlElement | undefined
  parser.on('error', (error) => {
    throw new Error(`not well-formed XML: ${error.message}`)
  })
  parser.on('xmldecl', refuse('an XML declaration'))
  parser.on('doctype', refuse('a document type declaration'))
  parser.on('comment', refuse('a comment'))
  parser.on('processinginstruction', refuse('a processing instruction'))
  parser.on('cdata', refuse('a CDATA section'))
  parser.on('opentag', (tag) => {
    if (Object.keys(tag.attributes).length > 0)
      throw new Error(`not a heartbeat document: <${tag.name}> has attributes`)
    const element: XmlElement = { name: tag.name, children: [] }
    const parent = open.at(-1)
    if (parent === undefined) root = element
    else parent.children.push(element)
    open.push(element)
  })
  parser.on('closetag', () => void open.pop())
  // Whitespace around the root is reported too; only text inside an element belongs to it.
  parser.on('text', (data) => void open.at(-1)?.children.push(data))
  parser.write(text).close()
  if (root === undefined) throw new Error('not well-formed XML: no root element')
  return root
}

/** The text of an element that may hold only character data. */
function textOf(element: XmlElement): string {
  if (element.children.some((child) => typeof child !== 'string'))
    throw new Error(`<${element.name}> must hold only text`)
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
    throw new Error(
      `<heartbeat> holds ${elements.map((element) => `<${element.name}>`).join('')}, not <loop_id><prompt>`,
    )
  }
  return { loopId: textOf(elements[0]!), prompt: textOf(elements[1]!) }
}

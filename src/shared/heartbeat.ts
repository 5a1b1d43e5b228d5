/**
 * The heartbeat format, both ways: the text a due occurrence delivers and how a
 * logged or waiting message is read back as a heartbeat. Host-free, so the
 * runtime (waiting and per-turn heartbeats) and the dock's heartbeat row share
 * one rule.
 * @module dsh-plugin-loop/heartbeat
 */
import { isRecord } from './guards.ts'
import type { LoopRecord } from '../types.ts'

/** The `source` of every heartbeat message: how the runtime marks what it sends and how a reader knows it. */
export const HEARTBEAT_SOURCE = Object.freeze({ kind: 'plugin', plugin: 'loop' } as const)

const XML_ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&apos;',
}
const XML_ENTITIES: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }

/**
 * Escape the five XML special characters.
 * @param text - raw text.
 * @returns text safe inside an XML element.
 */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => XML_ESCAPES[char]!)
}

/** Undo {@link escapeXml}; text with any other `&` was not escaped by it. */
function unescapeXml(text: string): string | undefined {
  if (/&(?!(?:amp|lt|gt|quot|apos);)/.test(text)) return undefined
  return text.replace(/&(amp|lt|gt|quot|apos);/g, (_match, name: string) => XML_ENTITIES[name]!)
}

/**
 * The heartbeat text delivered for one occurrence.
 * @param loop - the due loop.
 * @returns the `<heartbeat>` element with escaped id and prompt.
 */
export function renderHeartbeat(loop: LoopRecord): string {
  return [
    '<heartbeat>',
    `  <loop_id>${escapeXml(loop.id)}</loop_id>`,
    `  <prompt>${escapeXml(loop.prompt)}</prompt>`,
    '</heartbeat>',
  ].join('\n')
}

/** A heartbeat read back from a message. */
export interface Heartbeat {
  /** The loop that sent it. */
  readonly loopId: string
  /** The prompt, unescaped. */
  readonly prompt: string
  /** The exact text the model received. */
  readonly text: string
}

const HEARTBEAT = /^<heartbeat>\n {2}<loop_id>([^<>]*)<\/loop_id>\n {2}<prompt>([^<>]*)<\/prompt>\n<\/heartbeat>$/

/**
 * Read a heartbeat out of a user message (or a conversation node's data): source
 * {@link HEARTBEAT_SOURCE} and text blocks that, joined as the model
 * received them, are exactly one `<heartbeat>` element.
 * @param message - `{ content, source, … }`, untrusted.
 * @returns the heartbeat, or undefined for every other message.
 */
export function readHeartbeat(message: unknown): Heartbeat | undefined {
  if (
    !isRecord(message) ||
    !isRecord(message.source) ||
    message.source.kind !== HEARTBEAT_SOURCE.kind ||
    message.source.plugin !== HEARTBEAT_SOURCE.plugin
  )
    return undefined
  if (!Array.isArray(message.content)) return undefined
  let text = ''
  for (const block of message.content as unknown[]) {
    if (!isRecord(block) || block.type !== 'text' || typeof block.text !== 'string') return undefined
    text += block.text
  }
  const match = HEARTBEAT.exec(text)
  if (match === null) return undefined
  const loopId = unescapeXml(match[1]!)
  const prompt = unescapeXml(match[2]!)
  if (loopId === undefined || prompt === undefined) return undefined
  return { loopId, prompt, text }
}

/**
 * Pure rules of the heartbeat row: recognizing a loop heartbeat among the
 * conversation's context nodes, reading its loop id and prompt back out of the
 * `<heartbeat>` text (the inverse of `renderHeartbeat` in `../domain.ts`), and
 * finding the host renderer every other context row falls through to.
 * @module dsh-plugin-loop/ui/heartbeat
 */

/** A heartbeat as the conversation logged it. */
export interface Heartbeat {
  /** The loop that sent it. */
  readonly loopId: string
  /** The prompt, unescaped. */
  readonly prompt: string
  /** The exact text the model received. */
  readonly text: string
}

const HEARTBEAT = /^<heartbeat>\n {2}<loop_id>([^<>]*)<\/loop_id>\n {2}<prompt>([^<>]*)<\/prompt>\n<\/heartbeat>$/
const ENTITIES: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null

/**
 * Undo the heartbeat's XML escaping; text with any other `&` is not one of ours.
 * @param text - escaped element text.
 * @returns the raw text, or undefined.
 */
function unescapeXml(text: string): string | undefined {
  if (/&(?!(?:amp|lt|gt|quot|apos);)/.test(text)) return undefined
  return text.replace(/&(amp|lt|gt|quot|apos);/g, (_match, name: string) => ENTITIES[name]!)
}

/**
 * Read a heartbeat out of a `context` chat node's data: a `user/message` whose
 * source is `{ kind: 'plugin', plugin: 'loop' }` and whose text blocks, joined
 * as the model received them, are exactly one `<heartbeat>` element.
 * @param data - the node's `data` (`{ content, source, … }`), untrusted.
 * @returns the heartbeat, or undefined for every other context message.
 */
export function readHeartbeat(data: unknown): Heartbeat | undefined {
  if (!isObject(data) || !isObject(data.source) || data.source.kind !== 'plugin' || data.source.plugin !== 'loop') return undefined
  if (!Array.isArray(data.content)) return undefined
  let text = ''
  for (const block of data.content as unknown[]) {
    if (!isObject(block) || block.type !== 'text' || typeof block.text !== 'string') return undefined
    text += block.text
  }
  const match = HEARTBEAT.exec(text)
  if (match === null) return undefined
  const loopId = unescapeXml(match[1]!)
  const prompt = unescapeXml(match[2]!)
  if (loopId === undefined || prompt === undefined) return undefined
  return { loopId, prompt, text }
}

/** What the slot registry keeps of one `conversation.chat.node` entry (rc.8 `StoredEntry`, the parts read here). */
export interface ChatNodeEntry {
  readonly component: unknown
  readonly options: { readonly key?: string; readonly priority?: number }
  readonly locale?: string
  readonly inject?: unknown
  readonly store?: unknown
  readonly children?: unknown
}

/** The host renderer a non-heartbeat context row is handed to, with the namespace of its `t` seat. */
export interface ShadowedRenderer {
  readonly component: unknown
  readonly locale: string
}

/**
 * The `context` renderer this plugin's entry shadows: the next entry under the
 * same key in the registry's priority order (DSH's own ContextMessageNodeView).
 * Only an entry whose props this plugin can assemble is returned: one that
 * declares a locale namespace and no `inject`, `store` or `children`.
 * @param entries - `ctx.slots.entries('conversation.chat.node')`, lowest priority (the winner) first.
 * @param self - this plugin's component.
 * @returns the renderer, or undefined when there is none this plugin can stand in for.
 */
export function shadowedContextRenderer(entries: readonly ChatNodeEntry[], self: unknown): ShadowedRenderer | undefined {
  const next = entries.find((entry) => entry.options.key === 'context' && entry.component !== self)
  if (next === undefined || typeof next.locale !== 'string') return undefined
  if (next.inject !== undefined || next.store !== undefined || next.children !== undefined) return undefined
  return { component: next.component, locale: next.locale }
}

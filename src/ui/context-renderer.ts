/**
 * Pure rule of the heartbeat row: finding the host's context renderer, which
 * the row shadows and every context row that is not a heartbeat falls through
 * to. Recognizing a heartbeat is `readHeartbeat` in `../shared/heartbeat.ts`,
 * the rule the runtime uses too.
 * @module dsh-plugin-loop/ui/context-renderer
 */

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
export function shadowedContextRenderer(
  entries: readonly ChatNodeEntry[],
  self: unknown,
): ShadowedRenderer | undefined {
  const next = entries.find((entry) => entry.options.key === 'context' && entry.component !== self)
  if (next === undefined || typeof next.locale !== 'string') return undefined
  if (next.inject !== undefined || next.store !== undefined || next.children !== undefined) return undefined
  return { component: next.component, locale: next.locale }
}

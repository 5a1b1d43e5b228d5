/**
 * Browser half of dsh-plugin-loop: the `loop` locale namespace, one entry in
 * the selected session's `conversation.input.dock` (between DSH's goal bar,
 * order 10, and queue strip, order 20), and the heartbeat row in the
 * conversation (`conversation.chat.node`, key `context`, one priority below
 * DSH's own renderer). Built into `lib/client.js` in DSH's module-loader
 * format; the factory returns these named exports (no default export: the
 * host's loader would take a default for the plugin).
 * @module dsh-plugin-loop/ui
 */
import { ContextNode, type AnyTranslate, type HeartbeatRowInjected } from './HeartbeatRow.tsx'
import { shadowedContextRenderer, type ChatNodeEntry } from './heartbeat.ts'
import { LoopDock } from './LoopDock.tsx'
import { LOCALE_NS, LOOP_DICTIONARIES, type LoopDictionary } from './locales.ts'
import type { LoopDockInjected } from './slot-props.ts'

/** Dock order: todo 0, goal 10, loop 15, queue 20. */
const LOOP_DOCK_ORDER = 15

/**
 * Shadowing rank of the heartbeat renderer: DSH's slot registry renders the
 * lowest priority of a keyed cell, and DSH's own `context` renderer has the
 * default 0, so -1 puts this entry in front of it and no further.
 */
const HEARTBEAT_ROW_PRIORITY = -1

/** Client services the entry uses: slots, the `commands` remote namespace, and the locale registry. */
export const inject = ['slots', 'remote', 'remote.commands', 'locale']

/** The part of the client context this entry touches (typed locally, see `slot-props.ts`). */
export interface LoopClientContext {
  /** Run a setup for the plugin's lifetime; its disposer runs when the plugin unloads. */
  effect(setup: () => () => void, label?: string): unknown
  readonly locale: {
    register(ns: typeof LOCALE_NS, dictionaries: { readonly zh: LoopDictionary; readonly en: LoopDictionary }): () => void
    bind(ns: string): AnyTranslate
  }
  readonly slots: {
    inject(key: 'conversation.input.dock' | 'conversation.chat.node', callback: () => () => void): unknown
    entries(key: 'conversation.chat.node'): readonly ChatNodeEntry[]
    register(
      options: {
        readonly name: 'conversation.input.dock'
        readonly id: string
        readonly order: number
        readonly locale: typeof LOCALE_NS
        readonly inject: (sessionId: string) => LoopDockInjected
      },
      component: typeof LoopDock,
    ): () => void
    register(
      options: {
        readonly name: 'conversation.chat.node'
        readonly key: 'context'
        readonly priority: number
        readonly locale: typeof LOCALE_NS
        readonly inject: () => HeartbeatRowInjected
      },
      component: typeof ContextNode,
    ): () => void
  }
  readonly remote: {
    readonly commands: {
      execute(sessionId: string, line: string, images: readonly never[]): Promise<unknown>
    }
  }
}

/**
 * Register the dictionaries, the dock whenever the conversation declares its
 * input dock slot, and the heartbeat row whenever the chat view declares its node slot.
 * @param ctx - the client plugin context.
 */
export function apply(ctx: LoopClientContext): void {
  ctx.effect(() => ctx.locale.register(LOCALE_NS, LOOP_DICTIONARIES), 'dsh-plugin-loop: dictionaries')
  ctx.slots.inject('conversation.input.dock', () =>
    ctx.slots.register(
      {
        name: 'conversation.input.dock',
        id: 'loop',
        order: LOOP_DOCK_ORDER,
        locale: LOCALE_NS,
        // The dock's only way out: run a slash-command line in its own session.
        inject: (sessionId) => ({ executeCommand: (line) => ctx.remote.commands.execute(sessionId, line, []) }),
      },
      LoopDock,
    ),
  )
  ctx.slots.inject('conversation.chat.node', () =>
    ctx.slots.register(
      {
        name: 'conversation.chat.node',
        key: 'context',
        priority: HEARTBEAT_ROW_PRIORITY,
        locale: LOCALE_NS,
        inject: () => ({
          shadowedRenderer: () => shadowedContextRenderer(ctx.slots.entries('conversation.chat.node'), ContextNode),
          bindNamespace: (ns) => ctx.locale.bind(ns),
        }),
      },
      ContextNode,
    ),
  )
}

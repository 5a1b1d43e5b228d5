/**
 * Browser half of dsh-plugin-loop: the `loop` locale namespace, one entry in
 * the selected session's `conversation.input.dock` (between DSH's goal bar,
 * order 10, and queue strip, order 20), the heartbeat row in the
 * conversation (`conversation.chat.node`, key `context`, one priority below
 * DSH's own renderer), a row per model tool call (`tool.call.toolview`, keyed
 * by tool name), and, where DSH's settings surface provides the
 * `settingsScope` service, the plugin's card in Settings → Plugins → Plugin
 * configuration (`settings.plugin.item`, keyed by the `loop` namespace). Built into `lib/client.js` in DSH's module-loader
 * format; the factory returns these named exports (no default export: the
 * host's loader would take a default for the plugin).
 * @module dsh-plugin-loop/ui
 */
import type { ComponentType } from 'react'
import { shadowedContextRenderer, type ChatNodeEntry } from './context-renderer.ts'
import { renderWhenPropsPresent } from './guard.tsx'
import { ContextNode, type AnyTranslate, type HeartbeatRowInjected, type HeartbeatRowProps } from './HeartbeatRow.tsx'
import { LoopsView } from './LoopsView.tsx'
import { LoopSettingsCard, type LoopSettingsCardProps } from './LoopSettingsCard.tsx'
import { ToolCallRow, type ToolCallRowInjected, type ToolCallRowProps } from './ToolCallRow.tsx'
import { LOOP_TOOL_TITLES, type LoopToolName } from './tool-call.ts'
import { LOCALE_NS, LOOP_DICTIONARIES, type LoopDictionary } from './locales.ts'
import { LOOP_SETTINGS_NAMESPACE } from '../shared/limits.ts'
import { LoopSettingsForm, type LoopSettingsActions, type SettingsScopeLike } from './settings-form.ts'
import type { LoopsViewInjected, LoopsViewProps } from './slot-props.ts'

/** Dock order: todo 0, goal 10, loop 15, queue 20. */
const LOOP_DOCK_ORDER = 15

/**
 * Shadowing rank of the heartbeat renderer: DSH's slot registry renders the
 * lowest priority of a keyed cell, and DSH's own `context` renderer has the
 * default 0, so -1 puts this entry in front of it and no further.
 */
const HEARTBEAT_ROW_PRIORITY = -1

/*
 * Each entry renders only with every prop it reads (./guard.tsx): on a DSH this build was not
 * made for, an entry whose props changed shows nothing instead of throwing in DSH's slot.
 */
const GuardedDock = renderWhenPropsPresent(LoopsView, ['useProjection', 't', 'executeCommand'])
const GuardedContextNode = renderWhenPropsPresent(ContextNode, [
  'node',
  't',
  'useProjection',
  'shadowedRenderer',
  'bindNamespace',
])
const GuardedToolCallRow = renderWhenPropsPresent(ToolCallRow, ['block', 't'])
const GuardedSettingsCard = renderWhenPropsPresent(LoopSettingsCard, [
  't',
  'useLoopSettings',
  'edit',
  'resetField',
  'save',
  'discard',
])

/** Client services the entry uses: slots, the `commands` remote namespace, and the locale registry. */
export const inject = ['slots', 'remote', 'remote.commands', 'locale']

/** What the settings card's entry injects: the form as a store (DSH makes it `useLoopSettings`) and its actions. */
export interface LoopSettingsInjected extends LoopSettingsActions {
  readonly hooks: { readonly loopSettings: LoopSettingsForm }
}

/** The part of the client context this entry touches (typed locally, see `slot-props.ts`). */
export interface LoopClientContext {
  /** Run a setup for the plugin's lifetime; its disposer runs when the plugin unloads. */
  effect(setup: () => () => void, label?: string): unknown
  /**
   * Run `callback` with a context holding `deps` while they are provided (Cordis):
   * the settings card needs `settingsScope`, the rest of the plugin does not.
   */
  inject(deps: readonly ['settingsScope'], callback: (ctx: LoopSettingsClientContext) => void): unknown
  readonly locale: {
    register(
      ns: typeof LOCALE_NS,
      dictionaries: { readonly zh: LoopDictionary; readonly en: LoopDictionary },
    ): () => void
    bind(ns: string): AnyTranslate
  }
  readonly slots: {
    inject(
      key: 'conversation.input.dock' | 'conversation.chat.node' | 'tool.call.toolview',
      callback: () => () => void,
    ): unknown
    entries(key: 'conversation.chat.node'): readonly ChatNodeEntry[]
    register(
      options: {
        readonly name: 'conversation.input.dock'
        readonly id: string
        readonly order: number
        readonly locale: typeof LOCALE_NS
        readonly inject: (sessionId: string) => LoopsViewInjected
      },
      component: ComponentType<LoopsViewProps>,
    ): () => void
    register(
      options: {
        readonly name: 'conversation.chat.node'
        readonly key: 'context'
        readonly priority: number
        readonly locale: typeof LOCALE_NS
        readonly inject: () => HeartbeatRowInjected
      },
      component: ComponentType<HeartbeatRowProps>,
    ): () => void
    register(
      options: {
        readonly name: 'tool.call.toolview'
        readonly key: LoopToolName
        readonly locale: typeof LOCALE_NS
        readonly inject: () => ToolCallRowInjected
      },
      component: ComponentType<ToolCallRowProps>,
    ): () => void
    register(
      options: {
        readonly name: 'settings.plugin.item'
        readonly key: typeof LOOP_SETTINGS_NAMESPACE
        readonly locale: typeof LOCALE_NS
        readonly inject: () => LoopSettingsInjected
      },
      component: ComponentType<LoopSettingsCardProps>,
    ): () => void
  }
  readonly remote: {
    readonly commands: {
      execute(sessionId: string, line: string, images: readonly never[]): Promise<unknown>
    }
  }
}

/** The context inside `ctx.inject(['settingsScope'], …)`: DSH's settings surface's scope binder (`dsh-client-ui-settings`). */
export interface LoopSettingsClientContext {
  effect(setup: () => () => void, label?: string): unknown
  readonly slots: {
    inject(key: 'settings.plugin.item', callback: () => () => void): unknown
    register: LoopClientContext['slots']['register']
  }
  readonly settingsScope: {
    /** Bind one namespace's scope on the caller's lifetime; reads follow the host's `settings.describe` mirror. */
    bind(spec: { readonly namespace: typeof LOOP_SETTINGS_NAMESPACE }): SettingsScopeLike
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
      GuardedDock,
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
          shadowedRenderer: () =>
            shadowedContextRenderer(ctx.slots.entries('conversation.chat.node'), GuardedContextNode),
          bindNamespace: (ns) => ctx.locale.bind(ns),
        }),
      },
      GuardedContextNode,
    ),
  )
  // One row per tool, keyed by its name: DSH's tool view renders a keyed entry instead of its generic row.
  ctx.slots.inject('tool.call.toolview', () => {
    const disposers = (Object.keys(LOOP_TOOL_TITLES) as LoopToolName[]).map((tool) =>
      ctx.slots.register(
        { name: 'tool.call.toolview', key: tool, locale: LOCALE_NS, inject: () => ({ loopTool: tool }) },
        GuardedToolCallRow,
      ),
    )
    return () => {
      for (const dispose of disposers) dispose()
    }
  })
  // The settings card lives while DSH's settings surface does; the Plugin configuration tab shows it
  // because the host half registers the `loop` namespace (src/config.ts) and this entry's key names it.
  ctx.inject(['settingsScope'], (scope) => {
    const form = new LoopSettingsForm(scope.settingsScope.bind({ namespace: LOOP_SETTINGS_NAMESPACE }))
    scope.effect(() => form.follow(), 'dsh-plugin-loop: settings card')
    scope.slots.inject('settings.plugin.item', () =>
      scope.slots.register(
        {
          name: 'settings.plugin.item',
          key: LOOP_SETTINGS_NAMESPACE,
          locale: LOCALE_NS,
          inject: () => ({
            hooks: { loopSettings: form },
            edit: form.edit,
            resetField: form.resetField,
            save: form.save,
            discard: form.discard,
          }),
        },
        GuardedSettingsCard,
      ),
    )
  })
}

/**
 * Browser half of dsh-plugin-loop: one entry in the selected session's
 * `conversation.input.dock`, between DSH's goal bar (order 10) and queue
 * strip (order 20). Built into `lib/client.js` in DSH's module-loader format;
 * the factory returns these named exports (no default export: the host's
 * loader would take a default for the plugin).
 * @module dsh-plugin-loop/ui
 */
import { LoopDock } from './LoopDock.tsx'
import type { LoopDockInjected } from './slot-props.ts'

/** Dock order: todo 0, goal 10, loop 15, queue 20. */
const LOOP_DOCK_ORDER = 15

/** Client services the entry uses: the slot registry and the `commands` remote namespace. */
export const inject = ['slots', 'remote', 'remote.commands']

/** The part of the client context this entry touches (typed locally, see `slot-props.ts`). */
export interface LoopClientContext {
  readonly slots: {
    inject(key: 'conversation.input.dock', callback: () => () => void): unknown
    register(
      options: {
        readonly name: 'conversation.input.dock'
        readonly id: string
        readonly order: number
        readonly inject: (sessionId: string) => LoopDockInjected
      },
      component: typeof LoopDock,
    ): () => void
  }
  readonly remote: {
    readonly commands: {
      execute(sessionId: string, line: string, images: readonly never[]): Promise<unknown>
    }
  }
}

/**
 * Register the dock whenever the conversation declares its input dock slot.
 * @param ctx - the client plugin context.
 */
export function apply(ctx: LoopClientContext): void {
  ctx.slots.inject('conversation.input.dock', () =>
    ctx.slots.register(
      {
        name: 'conversation.input.dock',
        id: 'loop',
        order: LOOP_DOCK_ORDER,
        // The dock's only way out: run a slash-command line in its own session.
        inject: (sessionId) => ({ executeCommand: (line) => ctx.remote.commands.execute(sessionId, line, []) }),
      },
      LoopDock,
    ),
  )
}

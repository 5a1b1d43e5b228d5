/**
 * The conversation's `context` rows, with loop heartbeats shown as a compact
 * loop row: `↻ Loop heartbeat · every 5m · <prompt>`, in the user's language,
 * expanding to the exact text the model received. Registered one priority
 * below DSH's own `context` renderer (the host's keyed-slot shadowing), so
 * every context row reaches it; any row that is not a loop heartbeat is handed
 * back to DSH's renderer with the props and `t` seat DSH would have given it.
 * The contract is the project's `ui.md`.
 * @module dsh-plugin-loop/ui/HeartbeatRow
 */
import { useMemo, type ComponentType } from 'react'
import { readHeartbeat, type Heartbeat } from '../shared/heartbeat.ts'
import { LOOP_PROJECTION_KEY } from '../shared/projection-key.ts'
import type { ShadowedRenderer } from './context-renderer.ts'
import { DisclosurePart, DisclosureRow } from './DisclosureRow.tsx'
import styles from './HeartbeatRow.module.css'
import { localInterval, type LoopTranslate } from './locales.ts'
import type { UseLoopProjection } from './slot-props.ts'

/** A translate seat of another namespace (DSH's `conversation` one, for the rows handed back). */
export type AnyTranslate = (key: string, params?: Readonly<Record<string, string | number>>) => string

/** What this plugin's `inject(sessionId)` adds to a `conversation.chat.node` entry's props. */
export interface HeartbeatRowInjected {
  /** The host renderer this entry shadows, read from the slot registry at render time. */
  readonly shadowedRenderer: () => ShadowedRenderer | undefined
  /** `ctx.locale.bind(ns)`: a translate function of another namespace. */
  readonly bindNamespace: (ns: string) => AnyTranslate
}

/** The props the renderer reads; everything else DSH passes is handed on untouched. */
export interface HeartbeatRowProps extends HeartbeatRowInjected {
  /** The chat node; a `context` node's `data` carries the message `content` and `source`. */
  readonly node: { readonly data: unknown }
  readonly t: LoopTranslate
  readonly useProjection: UseLoopProjection
  // The slot renderer passes more props (owner props, standard kit); they go to the host row as they are.
  readonly [prop: string]: unknown
}

/**
 * One `context` chat node: a loop heartbeat as its own row, anything else as DSH renders it.
 * @param props - the node, the `loop` seat, the projection reader, the fall-through face, and DSH's other props.
 * @returns the heartbeat row or DSH's context row.
 */
export function ContextNode(props: HeartbeatRowProps) {
  // Everything but this plugin's own face goes on to DSH's row, as DSH would have passed it.
  const { shadowedRenderer, bindNamespace, ...hostProps } = props
  const { node, t, useProjection } = props
  const heartbeat = readHeartbeat(node.data)
  const loopId = heartbeat?.loopId
  // The interval is known while the loop is active; a deleted loop's heartbeats show without it.
  const interval = useProjection(LOOP_PROJECTION_KEY, (projection) =>
    loopId === undefined || !Array.isArray(projection?.loops)
      ? undefined
      : projection.loops.find((loop) => loop.id === loopId)?.time_in_seconds,
  )
  const host = heartbeat === undefined ? shadowedRenderer() : undefined
  const hostLocale = host?.locale
  // `t` changes identity on every language switch; a fresh host seat with it re-renders DSH's memoized row.
  const hostT = useMemo<AnyTranslate | undefined>(() => {
    if (hostLocale === undefined) return undefined
    const bound = bindNamespace(hostLocale)
    return (key, params) => bound(key, params)
  }, [bindNamespace, hostLocale, t])
  if (heartbeat !== undefined) return <HeartbeatLine heartbeat={heartbeat} interval={interval} t={t} />
  // Thrown in render on purpose: DSH's slot boundary then retires this entry and its own renderer takes every row back.
  if (host === undefined) throw new Error('dsh-plugin-loop: no DSH context renderer to hand non-heartbeat rows to')
  const HostRow = host.component as ComponentType<Record<string, unknown>>
  return <HostRow {...hostProps} t={hostT} />
}

interface HeartbeatLineProps {
  readonly heartbeat: Heartbeat
  readonly interval: number | undefined
  readonly t: LoopTranslate
}

/** The compact loop row and its disclosure of the exact heartbeat text. */
function HeartbeatLine({ heartbeat, interval, t }: HeartbeatLineProps) {
  return (
    <DisclosureRow
      attributes={{ 'data-loop-heartbeat': '' }}
      title={t('heartbeat.title')}
      text={heartbeat.text}
      textLabel={t('heartbeat.body')}
      textAttributes={{ 'data-loop-heartbeat-text': '' }}
      classes={{ toggle: styles.toggle, title: styles.title, text: styles.body }}
    >
      {interval !== undefined && <DisclosurePart>{localInterval(t, interval)}</DisclosurePart>}
      <DisclosurePart cut className={styles.prompt} title={heartbeat.prompt}>
        {heartbeat.prompt}
      </DisclosurePart>
    </DisclosureRow>
  )
}

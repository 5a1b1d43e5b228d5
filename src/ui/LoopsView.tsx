/**
 * The inline loop dock in `conversation.input.dock`: the session's active
 * loops from the `loop` projection, a once-per-second countdown repaint, and
 * Delete with an in-row confirmation sent as `/loop delete <id>`. Layout and
 * reply rules live in `./dock.ts`, words in `./locales.ts` (through the `t`
 * seat DSH injects, so a language switch repaints it); the contract is the
 * project's `ui.md`.
 * @module dsh-plugin-loop/ui/LoopsView
 */
import {
  createContext,
  memo,
  useCallback,
  useContext,
  useEffect,
  useId,
  useLayoutEffect,
  useRef,
  useState,
  type KeyboardEvent,
} from 'react'
import { LOOP_PROJECTION_KEY } from '../shared/projection-key.ts'
import type { LoopRecord } from '../types.ts'
import {
  REPAINT_MS,
  deleteCommand,
  deleteFailureText,
  dockLayout,
  loopsOf,
  readDeleteReply,
  summaryText,
  thrownDeleteFailure,
  type DeleteFailure,
} from './dock.ts'
import { localDue, localInterval, type LoopTranslate } from './locales.ts'
import styles from './LoopsView.module.css'
import type { LoopsViewProps } from './slot-props.ts'

/** Where one row's Delete stands; a row without an entry shows its plain `Delete` button. */
type DeleteState =
  | { readonly phase: 'confirm' }
  | { readonly phase: 'pending' }
  | { readonly phase: 'deleted' }
  | { readonly phase: 'error'; readonly failure: DeleteFailure }

type Phase = DeleteState['phase'] | 'idle'

const classes = (...names: (string | false | undefined)[]): string => names.filter(Boolean).join(' ')

/** Buttons a keyboard user can still act on (pending ones stay focusable but are `aria-disabled`). */
const ENABLED_BUTTON = 'button:not([aria-disabled="true"])'

/**
 * The repaint instant. Only the countdowns read it, so a once-a-second repaint
 * re-renders a text span per row, not whole rows with their buttons and effects.
 */
const NowContext = createContext(0)

/**
 * The dock entry component. Renders nothing for no loops, a row per loop for
 * one or two, and a collapsed summary that expands in place for three or more.
 * @param props - the projection reader, the `loop` translate seat and this session's command executor.
 * @returns the dock, or `null` when the session has no active loops.
 */
export function LoopsView({ useProjection, executeCommand, t }: LoopsViewProps) {
  const loops = loopsOf(useProjection(LOOP_PROJECTION_KEY))
  const layout = dockLayout(loops.length)
  const [expanded, setExpanded] = useState(false)
  const [deletes, setDeletes] = useState<ReadonlyMap<string, DeleteState>>(() => new Map())
  const [, repaint] = useState(0)
  const rootRef = useRef<HTMLDivElement>(null)
  const toggleRef = useRef<HTMLButtonElement>(null)
  const refocus = useRef(false)
  const present = useRef<ReadonlySet<string>>(new Set())
  // Ids whose delete is in flight. A ref, not state: two clicks in one frame
  // both run before React re-renders the disabled Confirm (GoalBar's fence).
  const sending = useRef(new Set<string>())
  const listId = useId()
  const summaryId = useId()
  const visible = layout !== 'hidden'
  const collapsible = layout === 'summary' && expanded
  const open = layout === 'rows' || collapsible

  // The ids on screen, for pruning delete states of loops the projection dropped.
  useLayoutEffect(() => {
    present.current = new Set(loops.map((loop) => loop.id))
  })

  // Falling below the threshold forgets the expansion: reaching three again starts collapsed.
  if (layout !== 'summary' && expanded) setExpanded(false)

  // The only timer: repaint countdowns once a second, and only while loops are shown.
  useEffect(() => {
    if (!visible) return
    const timer = setInterval(() => repaint((count) => count + 1), REPAINT_MS)
    return () => clearInterval(timer)
  }, [visible])

  const collapse = useCallback((returnFocus: boolean) => {
    setExpanded(false)
    if (returnFocus) toggleRef.current?.focus()
  }, [])

  // A click outside the expanded dock collapses it; focus returns to the toggle
  // unless the click put it somewhere else (the composer, say).
  useEffect(() => {
    if (!collapsible) return
    const onClick = (event: MouseEvent) => {
      const root = rootRef.current!
      if (root.contains(event.target as Node | null)) return
      // Focus in a row that closes is moved by the row itself (onFocusedLeave).
      const active = document.activeElement
      collapse(active === null || active === document.body)
    }
    document.addEventListener('click', onClick, true)
    return () => document.removeEventListener('click', onClick, true)
  }, [collapsible, collapse])

  // When a row that held focus leaves (its loop was deleted), focus the dock's first usable button.
  useEffect(() => {
    if (!refocus.current) return
    refocus.current = false
    rootRef.current?.querySelector<HTMLButtonElement>(ENABLED_BUTTON)?.focus()
  })
  const onFocusedRowLeave = useCallback(() => {
    refocus.current = true
  }, [])

  const setDelete = useCallback((id: string, state: DeleteState | undefined) => {
    setDeletes((current) => {
      const next = new Map([...current].filter(([key]) => key !== id && present.current.has(key)))
      if (state !== undefined) next.set(id, state)
      return next
    })
  }, [])

  const confirmDelete = useCallback(
    async (id: string) => {
      if (sending.current.has(id)) return
      sending.current.add(id)
      setDelete(id, { phase: 'pending' })
      let state: DeleteState
      try {
        const outcome = readDeleteReply(await executeCommand(deleteCommand(id)))
        state = outcome.ok ? { phase: 'deleted' } : { phase: 'error', failure: outcome.failure }
      } catch (error) {
        state = { phase: 'error', failure: thrownDeleteFailure(error) }
      }
      sending.current.delete(id)
      setDelete(id, state)
    },
    [executeCommand, setDelete],
  )

  const onRowDelete = useCallback((id: string) => setDelete(id, { phase: 'confirm' }), [setDelete])
  const onRowConfirm = useCallback((id: string) => void confirmDelete(id), [confirmDelete])
  const onRowCancel = useCallback((id: string) => setDelete(id, undefined), [setDelete])

  if (!visible) return null

  const now = Date.now()
  const onKeyDown = (event: KeyboardEvent<HTMLDivElement>) => {
    if (event.key !== 'Escape' || !collapsible) return
    event.preventDefault()
    event.stopPropagation()
    collapse(true)
  }
  const summary = layout === 'summary' ? summaryText(t, loops, now) : undefined

  return (
    <NowContext.Provider value={now}>
      <div ref={rootRef} className={styles.dock} data-loop-dock="" data-layout={layout} onKeyDown={onKeyDown}>
        <div className={styles.panel}>
          {summary !== undefined && (
            <div className={styles.summary} data-loop-summary="">
              <span
                id={summaryId}
                className={classes(styles.summaryText, summary.overdue && styles.overdue)}
                data-overdue={summary.overdue || undefined}
              >
                <span aria-hidden="true">↻ </span>
                {summary.text}
              </span>
              <button
                ref={toggleRef}
                type="button"
                className={styles.button}
                aria-expanded={expanded}
                aria-controls={listId}
                aria-describedby={summaryId}
                onClick={() => setExpanded((value) => !value)}
              >
                {t(expanded ? 'action.collapse' : 'action.expand')}{' '}
                <span aria-hidden="true">{expanded ? '▴' : '▾'}</span>
              </button>
            </div>
          )}
          <ul id={listId} className={styles.list} hidden={!open} aria-label={t('list.label')}>
            {open &&
              loops.map((loop) => (
                <LoopRow
                  key={loop.id}
                  loop={loop}
                  t={t}
                  state={deletes.get(loop.id)}
                  onDelete={onRowDelete}
                  onConfirm={onRowConfirm}
                  onCancel={onRowCancel}
                  onFocusedLeave={onFocusedRowLeave}
                />
              ))}
          </ul>
        </div>
      </div>
    </NowContext.Provider>
  )
}

interface LoopRowProps {
  readonly loop: LoopRecord
  readonly t: LoopTranslate
  readonly state: DeleteState | undefined
  readonly onDelete: (id: string) => void
  readonly onConfirm: (id: string) => void
  readonly onCancel: (id: string) => void
  readonly onFocusedLeave: () => void
}

/** A countdown (`next in 8s`) or overdue notice, in words and colour, at the repaint instant. */
function Countdown({ nextAt, t }: { readonly nextAt: number; readonly t: LoopTranslate }) {
  const due = localDue(t, nextAt, useContext(NowContext))
  return (
    <span className={classes(styles.due, due.overdue && styles.overdue)} data-overdue={due.overdue || undefined}>
      {due.text}
    </span>
  )
}

/** One loop: interval, countdown or overdue, the prompt on one line, and Delete with its confirmation. Re-rendered only when its own props change. */
const LoopRow = memo(function LoopRow({ loop, t, state, onDelete, onConfirm, onCancel, onFocusedLeave }: LoopRowProps) {
  const interval = localInterval(t, loop.time_in_seconds)
  const phase: Phase = state?.phase ?? 'idle'
  const working = phase === 'pending' || phase === 'deleted'
  const promptId = useId()
  const rowRef = useRef<HTMLLIElement>(null)
  const deleteRef = useRef<HTMLButtonElement>(null)
  const confirmRef = useRef<HTMLButtonElement>(null)
  const previous = useRef<Phase>(phase)

  // Keep focus on the control that replaced the one just used.
  useEffect(() => {
    const before = previous.current
    previous.current = phase
    if (before === 'idle' && phase === 'confirm') confirmRef.current?.focus()
    else if (before !== 'idle' && phase === 'idle') deleteRef.current?.focus()
  }, [phase])

  // Runs before React detaches the row, while a focused control is still inside it.
  useLayoutEffect(
    () => () => {
      if (rowRef.current?.contains(document.activeElement)) onFocusedLeave()
    },
    [onFocusedLeave],
  )

  return (
    <li ref={rowRef} className={styles.row} data-loop-row="" aria-busy={working || undefined}>
      <span className={styles.interval}>
        <span aria-hidden="true">↻ </span>
        {interval}
      </span>
      <Countdown nextAt={loop.next_at} t={t} />
      <span id={promptId} className={styles.prompt} title={loop.prompt}>
        {loop.prompt}
      </span>
      <span className={styles.actions}>
        {phase === 'idle' ? (
          <button
            ref={deleteRef}
            type="button"
            className={styles.button}
            aria-describedby={promptId}
            onClick={() => onDelete(loop.id)}
          >
            {t('action.delete')}
          </button>
        ) : (
          <>
            <span role="status" className={styles.question}>
              {t(working ? 'delete.pending' : 'delete.question')}
            </span>
            <button
              ref={confirmRef}
              type="button"
              className={classes(styles.button, styles.danger)}
              aria-describedby={promptId}
              aria-disabled={working || undefined}
              onClick={working ? undefined : () => onConfirm(loop.id)}
            >
              {t('action.confirm')}
            </button>
            <button
              type="button"
              className={styles.button}
              aria-disabled={working || undefined}
              onClick={working ? undefined : () => onCancel(loop.id)}
            >
              {t('action.cancel')}
            </button>
          </>
        )}
      </span>
      {state?.phase === 'error' && (
        <p role="alert" className={styles.error}>
          {deleteFailureText(t, state.failure)}
        </p>
      )}
    </li>
  )
})

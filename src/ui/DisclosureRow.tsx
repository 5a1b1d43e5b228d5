/**
 * The one disclosure line the conversation rows share (a loop heartbeat, a
 * loop tool call): `↻ <title> · <part> · <part> ▾`, one button that expands
 * to a text in a `<pre>` and collapses it again. DSH's own `DisclosureRow` is
 * not exported (rc.8), so this repeats its look with theme tokens; each row
 * brings its title, its parts and what differs in its own stylesheet. The
 * contract is ui.md §4 "Heartbeat rows" and ui.md §5 "Tool-call rows".
 * @module dsh-plugin-loop/ui/DisclosureRow
 */
import { useId, useState, type ReactNode } from 'react'
import styles from './DisclosureRow.module.css'

/** `data-*` attributes: how tests, the browser test and DSH's own selectors find a row and its text. */
export type DataAttributes = Readonly<Record<`data-${string}`, string>>

/** What a row puts on the shared line. */
export interface DisclosureRowProps {
  /** The row element's data attributes. */
  readonly attributes: DataAttributes
  /** The localized title after the glyph. */
  readonly title: string
  /** What follows the title on the line: `DisclosurePart`s, and anything said only to assistive technology. */
  readonly children: ReactNode
  /** The disclosed text; `null` when there is none yet: the button is then disabled, with no chevron and no `<pre>`. */
  readonly text: string | null
  /** The `<pre>`'s accessible name. */
  readonly textLabel: string
  /** The `<pre>`'s data attributes. */
  readonly textAttributes?: DataAttributes
  /** The row's own classes, added to the shared ones: the button's, the title's and the text's. */
  readonly classes: {
    readonly toggle?: string | undefined
    readonly title?: string | undefined
    readonly text: string | undefined
  }
}

/** The shared class, then the row's own when it has one. */
const both = (shared: string | undefined, own: string | undefined) => (own === undefined ? shared : `${shared} ${own}`)

/**
 * Render one disclosure row, collapsed until its button is activated.
 * @param props - the row's attributes, title, parts, text and own classes.
 * @returns the row.
 */
export function DisclosureRow({
  attributes,
  title,
  children,
  text,
  textLabel,
  textAttributes,
  classes,
}: DisclosureRowProps) {
  const [open, setOpen] = useState(false)
  const textId = useId()
  const empty = text === null
  return (
    <div className={styles.row} {...attributes}>
      <button
        type="button"
        className={both(styles.toggle, classes.toggle)}
        aria-expanded={empty ? undefined : open}
        aria-controls={empty ? undefined : textId}
        disabled={empty}
        onClick={() => setOpen((value) => !value)}
      >
        <span className={styles.glyph} aria-hidden="true">
          ↻
        </span>
        <span className={both(styles.title, classes.title)}>{title}</span>
        {children}
        {empty ? null : (
          <span className={styles.chevron} aria-hidden="true">
            {open ? '▴' : '▾'}
          </span>
        )}
      </button>
      {empty ? null : (
        <pre
          id={textId}
          className={both(styles.body, classes.text)}
          hidden={!open}
          aria-label={textLabel}
          {...textAttributes}
        >
          {text}
        </pre>
      )}
    </div>
  )
}

/** One `· <part>` of the line. */
export interface DisclosurePartProps {
  /** Cut with an ellipsis when the line is too narrow (a prompt, a summary); otherwise kept whole (an interval). */
  readonly cut?: boolean
  /** The row's own class for the part (how it grows, its colour). */
  readonly className?: string | undefined
  /** The full text, shown on hover where the part is cut. */
  readonly title?: string
  readonly children: ReactNode
}

/**
 * Render one part of the line after its separator.
 * @param props - whether it is cut, the row's class, its full text and the part.
 * @returns the separator and the part.
 */
export function DisclosurePart({ cut = false, className, title, children }: DisclosurePartProps) {
  return (
    <>
      <span className={styles.separator} aria-hidden="true">
        ·
      </span>
      <span className={both(cut ? styles.cut : styles.fixed, className)} title={title}>
        {children}
      </span>
    </>
  )
}

/**
 * The browser half's guard against a DSH it was not built for: an entry renders
 * only when DSH passed every prop it reads, and nothing otherwise. A later DSH may
 * drop or rename a prop (SPEC.md §12 "The road to a later DSH"), and one throwing dock entry takes the
 * whole dock down there.
 * @module dsh-plugin-loop/ui/guard
 */
import type { ComponentType } from 'react'

/**
 * Whether each named prop is there: a function (a hook, a seat, an action) or an object (a node, a block).
 * @param props - what DSH passed.
 * @param needed - the props the component reads.
 * @returns true when none is missing.
 */
export function hasProps(props: object, needed: readonly string[]): boolean {
  return needed.every((key) => {
    const value: unknown = (props as Record<string, unknown>)[key]
    return typeof value === 'function' || (typeof value === 'object' && value !== null)
  })
}

/**
 * Wrap a slot component so it renders nothing, without an error, while a prop it reads is missing.
 * @param Component - the entry's component.
 * @param needed - the props it reads.
 * @returns the guarded component.
 */
export function renderWhenPropsPresent<P extends object>(
  Component: ComponentType<P>,
  needed: readonly (keyof P & string)[],
): ComponentType<P> {
  const Guarded = (props: P) => (hasProps(props, needed) ? <Component {...props} /> : null)
  Guarded.displayName = `Guarded(${Component.displayName ?? Component.name})`
  return Guarded
}

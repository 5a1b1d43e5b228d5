/** The browser half's prop guard (src/ui/guard.tsx), with plain values. */
import { describe, expect, it } from 'vitest'
import { hasProps } from '../../src/ui/guard.tsx'

describe('hasProps', () => {
  it('holds when every named prop is a function or an object', () => {
    expect(hasProps({ t: () => '', node: { data: 1 }, extra: 1 }, ['t', 'node'])).toBe(true)
    expect(hasProps({}, [])).toBe(true)
  })

  it('fails on a prop that is missing, null, or a plain value', () => {
    expect(hasProps({ t: () => '' }, ['t', 'useProjection'])).toBe(false)
    expect(hasProps({ node: null }, ['node'])).toBe(false)
    expect(hasProps({ t: 'loop' }, ['t'])).toBe(false)
  })
})

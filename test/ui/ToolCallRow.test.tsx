// @vitest-environment jsdom
/**
 * The tool call rows (src/ui/ToolCallRow.tsx, on the shared DisclosureRow,
 * and the block readers in src/ui/tool-call.ts) in jsdom: each tool's row
 * running, done, failed and interrupted, odd blocks read defensively, in both
 * languages and across a live switch.
 */
import { act, cleanup, fireEvent, render } from '@testing-library/react'
import { createElement } from 'react'
import { afterEach, describe, expect, it } from 'vitest'
import { languageSource, translator, type Language } from '../support/ui-locale.ts'
import { ToolCallRow } from '../../src/ui/ToolCallRow.tsx'
import {
  toolCallArgs,
  toolCallOutput,
  toolCallState,
  toolCallSummary,
  type LoopToolName,
  type ToolCallBlockLike,
} from '../../src/ui/tool-call.ts'

afterEach(() => cleanup())

/** A call block as DSH's tool view passes it: running (no `kind`) or settled. */
const running = (argsRaw: string): ToolCallBlockLike => ({ callId: 'call-1', argsRaw })
const settled = (
  argsRaw: string | null,
  content: NonNullable<ToolCallBlockLike['content']>,
  extra: Partial<ToolCallBlockLike> = {},
): ToolCallBlockLike => ({
  callId: 'call-1',
  kind: 'tool-result',
  call: argsRaw === null ? null : { argsRaw },
  content,
  isError: false,
  ...extra,
})
const CREATE_ARGS = JSON.stringify({ time_in_seconds: 300, prompt: 'Check whether CI is green' })
const CREATED = '{"id":"loop_1a2b3c4d","prompt":"Check whether CI is green","time_in_seconds":300}'

function renderRow(tool: LoopToolName, block: ToolCallBlockLike, language: Language = 'en') {
  const languages = languageSource(language)
  function Outlet() {
    return createElement(ToolCallRow, { loopTool: tool, block, t: languages.useSeat() })
  }
  return { ...render(createElement(Outlet)), languages }
}
const rowButton = () => document.querySelector<HTMLButtonElement>('[data-loop-tool] button')!

describe('tool call rows', () => {
  it('reads a created loop as "Create loop · every 5m · <prompt>", expanding to what the tool returned', () => {
    const { languages } = renderRow('loop_create', settled(CREATE_ARGS, [{ type: 'text', text: CREATED }]))
    const row = document.querySelector('[data-loop-tool="loop_create"]')!
    expect(row.getAttribute('data-state')).toBe('ok')
    expect(rowButton().textContent).toBe('↻Create loop·every 5m·Check whether CI is green▾')
    expect(rowButton().getAttribute('aria-expanded')).toBe('false')
    const result = document.getElementById(rowButton().getAttribute('aria-controls')!)!
    expect(result.hidden).toBe(true)
    expect(result.getAttribute('aria-label')).toBe('What the tool returned to the model')
    expect(result.textContent).toBe(CREATED)
    fireEvent.click(rowButton())
    expect(result.hidden).toBe(false)
    expect(rowButton().textContent).toBe('↻Create loop·every 5m·Check whether CI is green▴')
    act(() => languages.set('zh'))
    expect(rowButton().textContent).toBe('↻创建循环·每5分钟·Check whether CI is green▴')
    expect(result.getAttribute('aria-label')).toBe('工具返回给模型的结果')
    fireEvent.click(rowButton())
    expect(result.hidden).toBe(true)
  })

  it('shows a running call from its arguments so far, not expandable, and says it runs', () => {
    renderRow('loop_create', running('{"time_in_seconds": 90, "prompt": "Tidy\\nthe changelog"}'), 'zh')
    expect(document.querySelector('[data-loop-tool]')!.getAttribute('data-state')).toBe('running')
    expect(rowButton().textContent).toBe('↻创建循环·每1分钟30秒·Tidy运行中')
    expect(rowButton().disabled).toBe(true)
    expect(rowButton().hasAttribute('aria-expanded')).toBe(false)
    expect(document.querySelector('pre')).toBeNull()
    cleanup()
    // Arguments still streaming do not parse yet: the title alone.
    renderRow('loop_create', running('{"time_in_seco'))
    expect(rowButton().textContent).toBe('↻Create loopRunning')
  })

  it('shows a failure by its first line in place of the summary, and an interrupted call as such', () => {
    // The content DSH's tool runtime gives the model for this call (the LoopError's message).
    const error = 'Error: time_in_seconds must be a positive whole number of seconds, for example 30.'
    renderRow(
      'loop_create',
      settled('{"time_in_seconds":0,"prompt":"x"}', [{ type: 'text', text: error }], { isError: true }),
    )
    expect(document.querySelector('[data-loop-tool]')!.getAttribute('data-state')).toBe('error')
    expect(rowButton().textContent).toBe(
      '↻Create loop·Error: time_in_seconds must be a positive whole number of seconds, for example 30.Failed▾',
    )
    expect(document.querySelector('pre')!.textContent).toBe(error)
    cleanup()
    renderRow(
      'loop_delete',
      settled('{"id":"loop_1a2b3c4d"}', [], { isError: true, error: { name: 'ToolError', code: 'interrupted' } }),
      'zh',
    )
    expect(document.querySelector('[data-loop-tool]')!.getAttribute('data-state')).toBe('stopped')
    expect(rowButton().textContent).toBe('↻删除循环·loop_1a2b3c4d已中断▾')
    expect(document.querySelector('pre')!.textContent).toBe('ToolError: interrupted')
  })

  it('titles a list call alone and a delete call with its loop id', () => {
    renderRow('loop_list', settled('{}', [{ type: 'text', text: '[]' }]))
    expect(rowButton().textContent).toBe('↻List loops▾')
    cleanup()
    renderRow('loop_list', settled('{}', [{ type: 'text', text: '[]' }]), 'zh')
    expect(rowButton().textContent).toBe('↻列出循环▾')
    cleanup()
    renderRow('loop_delete', settled('{"id":"loop_1a2b3c4d"}', [{ type: 'text', text: '{"deleted":true}' }]))
    expect(rowButton().textContent).toBe('↻Delete loop·loop_1a2b3c4d▾')
  })

  it('reads odd blocks defensively', () => {
    const t = translator('en')
    // Arguments: a dropped call head, JSON that is not an object, and values of the wrong type.
    expect(toolCallArgs(settled(null, []))).toEqual({})
    expect(toolCallArgs(running('[1,2]'))).toEqual({})
    expect(toolCallArgs(running('null'))).toEqual({})
    expect(toolCallArgs(running(''))).toEqual({})
    expect(toolCallArgs({ callId: 'c' })).toEqual({})
    expect(toolCallSummary(t, 'loop_create', { time_in_seconds: 1.5, prompt: '  ' })).toEqual([])
    expect(toolCallSummary(t, 'loop_create', { time_in_seconds: 0, prompt: 7 })).toEqual([])
    expect(toolCallSummary(t, 'loop_create', { time_in_seconds: '60', prompt: 'a' })).toEqual(['a'])
    expect(toolCallSummary(t, 'loop_create', { time_in_seconds: 3_661 })).toEqual(['every 1h 1m 1s'])
    expect(toolCallSummary(t, 'loop_delete', { id: '' })).toEqual([])
    expect(toolCallSummary(t, 'loop_delete', { id: 7 })).toEqual([])
    expect(toolCallSummary(t, 'loop_list', { id: 'loop_x' })).toEqual([])
    // Output: text verbatim, other blocks as JSON, nothing at all as no output.
    expect(toolCallOutput(running('{}'))).toBeNull()
    expect(toolCallOutput(settled('{}', [{ type: 'text', text: 'a' }, { type: 'image' }, { type: 'text' }]))).toBe(
      'a\n{\n  "type": "image"\n}\n',
    )
    expect(toolCallOutput(settled('{}', []))).toBeNull()
    expect(toolCallOutput({ callId: 'c', kind: 'tool-result' })).toBeNull()
    // State: settled without isError is ok.
    expect(toolCallState({ callId: 'c', kind: 'tool-result' })).toBe('ok')
    // A settled call with nothing to show cannot be expanded.
    renderRow('loop_list', settled('{}', []))
    expect(rowButton().disabled).toBe(true)
    expect(rowButton().textContent).toBe('↻List loops')
  })
})

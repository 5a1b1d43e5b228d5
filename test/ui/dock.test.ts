/** The dock's pure rules (src/ui/dock.ts): layout by count, reading the projection and a delete's reply, and their words. */
import { describe, expect, it } from 'vitest'
import { translator } from '../support/ui-locale.ts'
import { NOW } from '../support/epoch.ts'
import { A, B, C, D } from '../support/ui-loops.ts'
import type { LoopProjection } from '../../src/types.ts'
import {
  deleteCommand,
  deleteFailureText,
  dockLayout,
  loopsOf,
  readDeleteReply,
  summaryText,
  thrownDeleteFailure,
} from '../../src/ui/dock.ts'
import { localDue, localInterval } from '../../src/ui/locales.ts'

/** What the command executor resolves to after `/loop delete` succeeded. */
const SUCCESS = { ok: true, value: { commandId: 'cmd-1', result: { kind: 'success', text: 'Deleted loop_aaaa1111.' } } }

describe('dock rules (src/ui/dock.ts)', () => {
  it('lays out 0 as nothing, 1 and 2 as rows, 3 and more as a summary', () => {
    expect([0, 1, 2, 3, 4, 25].map(dockLayout)).toEqual(['hidden', 'rows', 'rows', 'summary', 'summary', 'summary'])
  })

  it('reads loops only from a well-formed projection', () => {
    expect(loopsOf(undefined)).toEqual([])
    expect(loopsOf({ loops: 'nope' } as unknown as LoopProjection)).toEqual([])
    expect(loopsOf({ loops: [A] })).toEqual([A])
  })

  it('words intervals, countdowns and the summary in both languages', () => {
    const en = translator('en')
    const zh = translator('zh')
    expect(localInterval(en, A.time_in_seconds)).toBe('every 30s')
    expect(localInterval(zh, 5_400)).toBe('每1小时30分钟')
    expect(localDue(en, A.next_at, NOW)).toEqual({ overdue: false, text: 'next in 8s' })
    expect(localDue(en, A.next_at, NOW + 11_000)).toEqual({ overdue: true, text: 'overdue by 3s' })
    expect(localDue(zh, A.next_at, NOW)).toEqual({ overdue: false, text: '8秒后触发' })
    expect(localDue(zh, A.next_at, NOW + 71_000)).toEqual({ overdue: true, text: '已逾期1分钟3秒' })
    expect(summaryText(en, [A, B, C], NOW)).toEqual({ text: '3 active loops · next in 5s', overdue: false })
    expect(summaryText(en, [A, B, C, D], NOW + 7_000)).toEqual({
      text: '4 active loops · overdue by 2s',
      overdue: true,
    })
    expect(summaryText(zh, [A, B, C], NOW)).toEqual({ text: '3 个活动循环 · 5秒后触发', overdue: false })
  })

  it('sends exactly /loop delete <id>', () => {
    expect(deleteCommand('loop_aaaa1111')).toBe('/loop delete loop_aaaa1111')
  })

  it('reads only a success command result as success', () => {
    const relayed = (text: string) => ({ ok: false, failure: { reason: 'relayed', text } })
    expect(readDeleteReply(SUCCESS)).toEqual({ ok: true })
    expect(readDeleteReply({ ok: true, value: { commandId: 'c', result: { kind: 'success' } } })).toEqual({ ok: true })
    expect(
      readDeleteReply({ ok: false, error: { code: 'agent-busy', message: 'agent is busy', details: {} } }),
    ).toEqual(relayed('agent is busy'))
    expect(readDeleteReply({ ok: false })).toEqual({ ok: false, failure: { reason: 'rejected' } })
    expect(readDeleteReply({ ok: false, error: { message: ' ' } })).toEqual({
      ok: false,
      failure: { reason: 'rejected' },
    })
    expect(readDeleteReply({ ok: true, value: undefined })).toEqual({ ok: false, failure: { reason: 'unavailable' } })
    expect(readDeleteReply({ ok: true })).toEqual({ ok: false, failure: { reason: 'unavailable' } })
    expect(
      readDeleteReply({
        ok: true,
        value: { commandId: 'c', result: { kind: 'error', text: 'Session persistence failed: disk full' } },
      }),
    ).toEqual(relayed('Session persistence failed: disk full'))
    expect(readDeleteReply({ ok: true, value: { commandId: 'c', result: { kind: 'error' } } })).toEqual({
      ok: false,
      failure: { reason: 'commandError' },
    })
    for (const malformed of [
      null,
      undefined,
      'Deleted',
      42,
      {},
      { ok: 'yes' },
      { ok: true, value: null },
      { ok: true, value: 'x' },
      { ok: true, value: {} },
      { ok: true, value: { result: { kind: 'maybe' } } },
    ]) {
      expect(readDeleteReply(malformed)).toEqual({ ok: false, failure: { reason: 'malformed' } })
    }
  })

  it('reads a thrown executor', () => {
    expect(thrownDeleteFailure(new Error('socket closed'))).toEqual({ reason: 'relayed', text: 'socket closed' })
    expect(thrownDeleteFailure('boom')).toEqual({ reason: 'relayed', text: 'boom' })
    expect(thrownDeleteFailure(new Error(''))).toEqual({ reason: 'unsent' })
  })

  it.each([
    [{ reason: 'relayed', text: 'agent is busy' }, 'Delete failed: agent is busy', '删除失败：agent is busy'],
    [{ reason: 'rejected' }, 'Delete failed: the command was rejected.', '删除失败：命令被拒绝。'],
    [
      { reason: 'unavailable' },
      'Delete failed: the /loop command is not available in this session.',
      '删除失败：此会话没有 /loop 命令。',
    ],
    [{ reason: 'commandError' }, 'Delete failed: the command reported an error.', '删除失败：命令报告了错误。'],
    [{ reason: 'malformed' }, 'Delete failed: DSH sent an unexpected reply.', '删除失败：DSH 返回了无法识别的回复。'],
    [{ reason: 'unsent' }, 'Delete failed: the command could not be sent.', '删除失败：命令未能发送。'],
  ] as const)('words the failure %o in both languages', (failure, english, chinese) => {
    expect(deleteFailureText(translator('en'), failure)).toBe(english)
    expect(deleteFailureText(translator('zh'), failure)).toBe(chinese)
  })
})

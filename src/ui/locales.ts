/**
 * The `loop` locale namespace: every word the dock and the heartbeat row show,
 * in Simplified Chinese (the key-set source of truth, as DSH's own client
 * packages keep it) and English (checked complete against it by the compiler
 * and by `test/ui.test.tsx`). Placeholders use the host's `{name}` syntax.
 * How a duration splits into units and how a countdown rounds stay in
 * `../format.ts`; only the words are here. Text the model reads (heartbeats,
 * tool and command text) is not translated.
 * @module dsh-plugin-loop/ui/locales
 */
import { durationParts, dueIn, type DurationPart } from '../format.ts'

/** Dictionary namespace owned by this plugin (`ctx.locale.register(LOCALE_NS, …)`, `locale: LOCALE_NS` on its slot entries). */
export const LOCALE_NS = 'loop'

/** Simplified Chinese dictionary (the key-set source of truth). */
const zh = {
  'duration.d': '{count}天',
  'duration.h': '{count}小时',
  'duration.m': '{count}分钟',
  'duration.s': '{count}秒',
  // Chinese writes the units of one duration without spaces: 1分钟30秒.
  'duration.separator': '',
  interval: '每{duration}',
  'due.next': '{duration}后触发',
  'due.overdue': '已逾期{duration}',
  summary: '{count} 个活动循环 · {due}',
  'list.label': '活动循环',
  'action.expand': '展开',
  'action.collapse': '收起',
  'action.delete': '删除',
  'action.confirm': '确认',
  'action.cancel': '取消',
  'delete.question': '删除此循环？',
  'delete.pending': '正在删除…',
  'delete.failed': '删除失败：{reason}',
  'delete.rejected': '命令被拒绝。',
  'delete.unavailable': '此会话没有 /loop 命令。',
  'delete.commandError': '命令报告了错误。',
  'delete.malformed': 'DSH 返回了无法识别的回复。',
  'delete.unsent': '命令未能发送。',
  'heartbeat.title': '循环触发',
  'heartbeat.body': '模型收到的文本',
} as const

/** One key of the `loop` namespace. */
export type LoopLocaleKey = keyof typeof zh

/** A complete dictionary of the `loop` namespace. */
export type LoopDictionary = { readonly [Key in LoopLocaleKey]: string }

/** English dictionary, complete against the zh key set. */
const en: LoopDictionary = {
  'duration.d': '{count}d',
  'duration.h': '{count}h',
  'duration.m': '{count}m',
  'duration.s': '{count}s',
  'duration.separator': ' ',
  interval: 'every {duration}',
  'due.next': 'next in {duration}',
  'due.overdue': 'overdue by {duration}',
  summary: '{count} active loops · {due}',
  'list.label': 'Active loops',
  'action.expand': 'Expand',
  'action.collapse': 'Collapse',
  'action.delete': 'Delete',
  'action.confirm': 'Confirm',
  'action.cancel': 'Cancel',
  'delete.question': 'Delete this loop?',
  'delete.pending': 'Deleting…',
  'delete.failed': 'Delete failed: {reason}',
  'delete.rejected': 'the command was rejected.',
  'delete.unavailable': 'the /loop command is not available in this session.',
  'delete.commandError': 'the command reported an error.',
  'delete.malformed': 'DSH sent an unexpected reply.',
  'delete.unsent': 'the command could not be sent.',
  'heartbeat.title': 'Loop heartbeat',
  'heartbeat.body': 'Text the model received',
}

/** Both dictionaries, in the shape `ctx.locale.register(ns, { zh, en })` takes. */
export const LOOP_DICTIONARIES: { readonly zh: LoopDictionary; readonly en: LoopDictionary } = { zh, en }

/**
 * The `t` seat DSH's slot framework injects for an entry that declares
 * `locale: 'loop'`: the active language's template with `{name}` filled in.
 */
export type LoopTranslate = (key: LoopLocaleKey, params?: Readonly<Record<string, string | number>>) => string

const UNIT_KEYS: { readonly [Unit in DurationPart['unit']]: LoopLocaleKey } = {
  d: 'duration.d',
  h: 'duration.h',
  m: 'duration.m',
  s: 'duration.s',
}

/**
 * A duration in the active language: `1m 30s`, `1分钟30秒`.
 * @param t - the `loop` translate seat.
 * @param seconds - non-negative seconds.
 * @returns the localized duration.
 */
export function localDuration(t: LoopTranslate, seconds: number): string {
  return durationParts(seconds)
    .map((part) => t(UNIT_KEYS[part.unit], { count: part.count }))
    .join(t('duration.separator'))
}

/**
 * An interval label: `every 1m 30s`, `每1分钟30秒`.
 * @param t - the `loop` translate seat.
 * @param seconds - the loop's `time_in_seconds`.
 * @returns the localized label.
 */
export function localInterval(t: LoopTranslate, seconds: number): string {
  return t('interval', { duration: localDuration(t, seconds) })
}

/** A localized due time: `next in 8s` / `overdue by 3s`, with the state as a flag for styling. */
export interface LocalDue {
  /** True once `next_at <= now`. */
  readonly overdue: boolean
  /** The words. */
  readonly text: string
}

/**
 * The countdown or overdue text of a due time at `now`, rounded as `../format.ts` rounds.
 * @param t - the `loop` translate seat.
 * @param nextAt - epoch milliseconds of the next occurrence.
 * @param now - epoch milliseconds.
 * @returns the overdue flag and localized text.
 */
export function localDue(t: LoopTranslate, nextAt: number, now: number): LocalDue {
  const due = dueIn(nextAt, now)
  return { overdue: due.overdue, text: t(due.overdue ? 'due.overdue' : 'due.next', { duration: localDuration(t, due.seconds) }) }
}

/**
 * The `loop` locale namespace: every word the dock, the heartbeat row and the
 * settings card show, in Simplified Chinese (the key-set source of truth, as
 * DSH's own client packages keep it) and English (checked complete against it by the compiler
 * and by `test/ui/locales.test.ts`). Placeholders use the host's `{name}` syntax.
 * How a duration splits into units and how a countdown rounds stay in
 * `../shared/format.ts`; only the words are here. Text the model reads (heartbeats,
 * tool and command text) is not translated.
 * @module dsh-plugin-loop/ui/locales
 */
import { durationParts, dueIn, type DurationPart } from '../shared/format.ts'
import { LOOP_SETTING_TEXTS } from '../shared/settings-text.ts'

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
  // The card in Settings → Plugins → Plugin configuration; the shared words repeat DSH's own cards'.
  'settings.title': '定时循环',
  'settings.description': '通过 /loop 或由模型创建的定时重复提示。',
  'settings.maxLoopsPerSession': '每个会话的循环上限',
  // What a setting does: the text `Config` describes it with (src/shared/settings-text.ts), after its range.
  'settings.maxLoopsPerSessionHint': LOOP_SETTING_TEXTS.zh.maxLoopsPerSession,
  'settings.maxPromptLength': '提示词长度上限（字符）',
  'settings.maxPromptLengthHint': LOOP_SETTING_TEXTS.zh.maxPromptLength,
  'settings.hint': '{min} 到 {max}。{text}',
  'settings.invalid': '请填写 {min} 到 {max} 之间的整数；留空表示使用默认值。',
  'settings.invalidStored':
    '设置文件中的这个值无效，正在沿用上一个有效值。请填写 {min} 到 {max} 之间的整数；留空表示使用默认值。',
  'settings.overridden': '已覆盖',
  'settings.reset': '恢复默认',
  'settings.readOnly': '本部署的设置为只读。',
  'settings.expand': '展开设置',
  'settings.collapse': '收起设置',
  'settings.save': '保存',
  'settings.saving': '保存中…',
  'settings.discard': '放弃修改',
  'settings.unsaved': '未保存',
  'settings.saveFailed': '本部署没有接受这些值，已保留供你修改。',
  // Tool calls the model made, as rows in the conversation.
  'tool.create': '创建循环',
  'tool.list': '列出循环',
  'tool.delete': '删除循环',
  'tool.running': '运行中',
  'tool.failed': '失败',
  'tool.stopped': '已中断',
  'tool.result': '工具返回给模型的结果',
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
  'settings.title': 'Loops',
  'settings.description': 'Recurring prompts created with /loop or by the model.',
  'settings.maxLoopsPerSession': 'Active loops per session',
  'settings.maxLoopsPerSessionHint': LOOP_SETTING_TEXTS.en.maxLoopsPerSession,
  'settings.maxPromptLength': 'Prompt length (characters)',
  'settings.maxPromptLengthHint': LOOP_SETTING_TEXTS.en.maxPromptLength,
  'settings.hint': 'From {min} to {max}. {text}',
  'settings.invalid': 'Enter a whole number from {min} to {max}, or leave blank to use the default.',
  'settings.invalidStored':
    'The settings file holds an invalid value here; the last valid one applies until you fix it. Enter a whole number from {min} to {max}, or leave blank to use the default.',
  'settings.overridden': 'Overridden',
  'settings.reset': 'Reset to default',
  'settings.readOnly': 'This deployment stores settings read-only.',
  'settings.expand': 'Show settings',
  'settings.collapse': 'Hide settings',
  'settings.save': 'Save',
  'settings.saving': 'Saving…',
  'settings.discard': 'Discard',
  'settings.unsaved': 'Unsaved',
  'settings.saveFailed': 'The deployment did not accept these values; they were left for you to correct.',
  'tool.create': 'Create loop',
  'tool.list': 'List loops',
  'tool.delete': 'Delete loop',
  'tool.running': 'Running',
  'tool.failed': 'Failed',
  'tool.stopped': 'Interrupted',
  'tool.result': 'What the tool returned to the model',
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
 * The countdown or overdue text of a due time at `now`, rounded as `../shared/format.ts` rounds.
 * @param t - the `loop` translate seat.
 * @param nextAt - epoch milliseconds of the next occurrence.
 * @param now - epoch milliseconds.
 * @returns the overdue flag and localized text.
 */
export function localDue(t: LoopTranslate, nextAt: number, now: number): LocalDue {
  const due = dueIn(nextAt, now)
  return {
    overdue: due.overdue,
    text: t(due.overdue ? 'due.overdue' : 'due.next', { duration: localDuration(t, due.seconds) }),
  }
}

/**
 * The plugin's configuration: the bounds that keep a runaway model or a pasted
 * document from turning a loop into unbounded spend. Read from the plugin's row
 * in the DSH patch (`config:`) and, where DSH mounts its settings service, from
 * the user's `loop` settings section, edited live.
 * @module dsh-plugin-loop/config
 */
import type { Context } from '@deepseek-ai/cordis'
import z from '@deepseek-ai/schemastery'
import { installSettingsSection, settingsNamespace } from '@deepseek-ai/dsh-settings'

/** The resolved configuration. */
export interface LoopConfig {
  /** Most active loops one session may hold; a create beyond it is refused. */
  readonly maxLoopsPerSession: number
  /** Longest prompt, in characters; a longer one is refused, never cut. */
  readonly maxPromptLength: number
  /** Whether a long-lived host brings back, at start, every session holding an active loop. */
  readonly resumeOnStart: boolean
}

/** Defaults: room for a real workflow, far from a runaway. */
export const DEFAULT_LOOP_CONFIG: LoopConfig = Object.freeze({ maxLoopsPerSession: 20, maxPromptLength: 4000, resumeOnStart: true })

/** Schemastery schema DSH validates the row's `config:` with, and the settings section resolves through. */
export const Config: z<LoopConfig> = z
  .object({
    maxLoopsPerSession: z.natural().min(1).max(1000).default(DEFAULT_LOOP_CONFIG.maxLoopsPerSession),
    maxPromptLength: z.natural().min(1).max(100_000).default(DEFAULT_LOOP_CONFIG.maxPromptLength),
    resumeOnStart: z.boolean().default(DEFAULT_LOOP_CONFIG.resumeOnStart),
  })
  .i18n({
    en: {
      maxLoopsPerSession: 'Maximum active loops per session. Creating one more is refused until one is deleted.',
      maxPromptLength: 'Maximum prompt length in characters. A longer prompt is refused; every heartbeat repeats the prompt.',
      resumeOnStart: 'When DSH web starts, bring back every session holding an active loop, so loops keep running across a restart. Each such session is read in full and stays live; every overdue loop fires once.',
    },
    zh: {
      maxLoopsPerSession: '每个会话最多可同时存在的循环数。达到上限后，需先删除一个才能再创建。',
      maxPromptLength: '提示词的最大长度（字符）。超出的提示词会被拒绝；每次心跳都会重复发送提示词。',
      resumeOnStart: 'DSH web 启动时，恢复所有包含活动循环的会话，使循环在重启后继续运行。每个这样的会话都会被完整读取并保持活动；每个已逾期的循环会触发一次。',
    },
  }) as z<LoopConfig>

/** The settings namespace the loop section is stored under (`settings.yaml`, key `loop`). */
export const LOOP_SETTINGS_NAMESPACE = 'loop'

/**
 * Follow the configuration source: the user's settings section while DSH's
 * settings service is mounted, the patch row otherwise.
 * @param ctx - plugin context.
 * @param entry - the row's validated config.
 * @returns a getter for the current configuration, read at every decision.
 */
export function watchLoopConfig(ctx: Context, entry: LoopConfig): () => LoopConfig {
  let source = (): LoopConfig => entry
  installSettingsSection(ctx, settingsNamespace(LOOP_SETTINGS_NAMESPACE), Config, entry, {
    setSource: (current) => {
      source = current
    },
    onChange: () => {},
  })
  return () => source()
}

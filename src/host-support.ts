/**
 * Which DSH `loop` runs on, decided from plain facts about the host (SPEC.md §1
 * "Boundary", supported host). The release it is tested against is the only one it
 * runs on: a later DSH changes what a heartbeat may carry and how the session
 * is read (SPEC.md §12 "The road to a later DSH"), and a heartbeat that host refuses breaks the session.
 * @module dsh-plugin-loop/host-support
 */

/** The one DSH release the test suite runs against; `package.json`'s peer ranges admit exactly it. */
export const SUPPORTED_DSH_VERSION = '0.1.0-rc.8'

/** The session format that release writes (`SESSION_FORMAT_VERSION` of `@deepseek-ai/dsh-session`). */
const SUPPORTED_SESSION_FORMAT = 0

/** The DSH packages `loop` is built against: its `@deepseek-ai/dsh*` peers. */
export const DSH_PACKAGES = [
  '@deepseek-ai/dsh-agent',
  '@deepseek-ai/dsh-commands',
  '@deepseek-ai/dsh-llm',
  '@deepseek-ai/dsh-session',
  '@deepseek-ai/dsh-session-projection',
  '@deepseek-ai/dsh-settings',
  '@deepseek-ai/dsh-tools',
] as const

/** What the host is, as its package metadata and session module say. */
export interface HostFacts {
  /** Each of {@link DSH_PACKAGES} with the version its `package.json` gives, or `undefined` where none was found. */
  readonly packages: readonly { readonly name: string; readonly version: string | undefined }[]
  /** `SESSION_FORMAT_VERSION` as the host's `@deepseek-ai/dsh-session` exports it (`undefined` if it does not). */
  readonly sessionFormat: unknown
}

/** Whether `loop` runs on this host, and if not, the one line that says why. */
export type HostSupport = { readonly supported: true } | { readonly supported: false; readonly message: string }

/**
 * Judge the host: supported only when every DSH package is {@link SUPPORTED_DSH_VERSION}
 * and the session format is {@link SUPPORTED_SESSION_FORMAT}.
 * @param facts - what the host's packages say.
 * @returns supported, or the message naming what `loop` supports and what it found.
 */
export function judgeHost(facts: HostFacts): HostSupport {
  const found = facts.packages
    .filter((dsh) => dsh.version !== SUPPORTED_DSH_VERSION)
    .map((dsh) => `${dsh.name} ${dsh.version ?? '(not found)'}`)
  if (facts.sessionFormat !== SUPPORTED_SESSION_FORMAT)
    found.push(`session format ${facts.sessionFormat === undefined ? '(not exported)' : String(facts.sessionFormat)}`)
  if (found.length === 0) return { supported: true }
  return {
    supported: false,
    message:
      `loop is inactive: it is built and tested for DSH ${SUPPORTED_DSH_VERSION} (session format ${SUPPORTED_SESSION_FORMAT}), ` +
      `and this DSH has ${found.join(', ')}. It adds no tools and sends no heartbeats here, and leaves every saved loop ` +
      `in its session untouched; run DSH ${SUPPORTED_DSH_VERSION}, or a loop release built for this DSH.`,
  }
}

/**
 * The line `loop` reports when another plugin already holds `/loop`: the one known is the
 * package `dsh-loop`, another implementation of the same specification (same command, tools,
 * projection and `loop/change` records), so the sessions it wrote keep their loops under `loop`.
 */
export const OTHER_LOOP_PLUGIN_MESSAGE =
  'loop is inactive: another plugin already registered the /loop command (most likely dsh-loop, another ' +
  'implementation of the same specification). Remove it with `dsh plugin remove dsh-loop` and restart DSH: ' +
  'the sessions it wrote keep their loops under loop.'

/**
 * Whether registering `/loop` failed because another plugin holds it (the command runtime's refusal).
 * @param error - what the registration threw.
 * @returns true for that refusal only.
 */
export function isLoopCommandTaken(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('command "loop" is already registered')
}

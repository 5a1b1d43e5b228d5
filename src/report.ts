/**
 * The one way a line reaches the user. rc.8's `dsh web` registers no exporter
 * for `ctx.logger`, so a plugin log line alone reaches no one; DSH's own web app
 * reports to the terminal with `console.error` (`web-app: could not open …`).
 * Every line here goes to the plugin's logger once (a host that does export
 * logs sees it at its level) and, unless it is detail, to stderr once as
 * `loop: <line>`.
 * @module dsh-plugin-loop/report
 */

/** What a report needs from the plugin's logger (`ctx.logger('loop')`). */
export interface ReportLogger {
  info(line: string): void
  warn(line: string): void
  error(line: string): void
}

/** Where the plugin's lines go. */
export interface LoopReport {
  /** Why the plugin will not run in this host: the log at error, and the terminal. */
  error(line: string): void
  /** A problem (a bad setting, a failed drive, a corrupt log): the log at warn, and the terminal. */
  warn(line: string): void
  /** Detail for the host log only (a corrected schedule, a replaced heartbeat). */
  info(line: string): void
}

/**
 * Report through one logger.
 * @param logger - the plugin's logger.
 * @returns the report.
 */
export function createReport(logger: ReportLogger): LoopReport {
  const print = (line: string): void => console.error(`loop: ${line}`)
  return {
    error(line) {
      logger.error(line)
      print(line)
    },
    warn(line) {
      logger.warn(line)
      print(line)
    },
    info(line) {
      logger.info(line)
    },
  }
}

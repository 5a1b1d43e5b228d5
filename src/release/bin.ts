#!/usr/bin/env node
/**
 * The `dsh-plugin-loop` executable: `runCli` with this process's arguments, streams,
 * environment and clock, once the Node it runs on can run it.
 * @module dsh-plugin-loop/release/bin
 */
import { nodeRefusal } from './node-version.ts'
import { errorCode } from './release-fs.ts'

const refusal = nodeRefusal(process.versions.node)
if (refusal !== undefined) {
  process.stderr.write(`${refusal}\n`)
  process.exitCode = 2
} else {
  // Loaded only now: on an older Node its imports would fail before the line above could say why.
  const { runCli } = await import('./cli.ts')
  const { createDshLookout } = await import('./process-table.ts')
  process.exitCode = await runCli(process.argv.slice(2), {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    stderrIsTerminal: process.stderr.isTTY,
    env: process.env,
    cwd: process.cwd(),
    now: () => new Date(),
    pid: process.pid,
    isAlive,
    lookForDsh: createDshLookout(),
  })
}

/** Whether a pid of this machine runs: signal 0 checks without sending; EPERM is another user's live process. */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return errorCode(error) === 'EPERM'
  }
}

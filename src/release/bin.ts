#!/usr/bin/env node
/**
 * The `dsh-plugin-loop` executable: `runCli` with this process's arguments, streams,
 * environment and clock.
 * @module dsh-plugin-loop/release/bin
 */
import { runCli } from './cli.ts'

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  now: () => new Date(),
})

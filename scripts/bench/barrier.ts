/**
 * The start barrier of a pair of bench processes that must run at the same
 * moment (row 4's cold opens): each child prints {@link READY_LINE} when it is
 * prepared, and main.ts answers each with one line on its stdin once both are.
 * @module scripts/bench/barrier
 */
import { once } from 'node:events'

/** The line a paired child prints when it is ready. */
export const READY_LINE = 'bench-ready'

/** In the child: say it is ready, and wait for the go. */
export async function signalReady(): Promise<void> {
  process.stdout.write(`${READY_LINE}\n`)
  await once(process.stdin, 'data')
  process.stdin.pause()
}

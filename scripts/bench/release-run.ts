/**
 * One measured side of row 7 in a process of its own: `node release-run.ts floor <log>`,
 * `node release-run.ts <removal|upgrade> <home>`, or `node release-run.ts <removal|upgrade> <home> <src/release folder>`
 * for a home of many sessions released by the release in that folder. Prints
 * `{ ms, maxRssBytes, rows }`: the rewrite's wall time, the process's peak RSS, and the `loop/change` rows it marked or removed.
 * @module scripts/bench/release-run
 */
import * as fsPromises from 'node:fs/promises'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { createDshLookout } from '../../src/release/dsh-processes.ts'
import { releaseHome } from '../../src/release/home.ts'
import { RELEASE_MODES, type ReleaseMode, type ReleaseModeName } from '../../src/release/modes.ts'
import { decodeFrame, encodeFrame, readFrames } from '../../src/release/zstd-frames.ts'

/** Frames between the floor's minor collections. */
const FRAMES_PER_COLLECTION = 20

/**
 * The floor of any tool that rewrites a Zstandard log: read it a chunk at a time, decompress each frame and compress it
 * again as one checksummed frame into a file beside it, fsync and rename; no row is parsed. It makes so little garbage on
 * the JS heap that V8 seldom collects, and the frames' buffers, outside the heap, pile up to half a gigabyte at 1M
 * events: then the process spends as long again faulting in fresh pages, in some runs and not others. A minor collection
 * every {@link FRAMES_PER_COLLECTION} frames (the process runs with `--expose-gc`) frees them as a careful tool would,
 * and keeps it steady.
 */
async function recompress(path: string): Promise<void> {
  const input = await fsPromises.open(path, 'r')
  const output = await fsPromises.open(`${path}.floor.tmp`, 'w')
  let frames = 0
  for await (const { frame } of readFrames(input)) {
    await output.write(encodeFrame(decodeFrame(frame)))
    if ((frames += 1) % FRAMES_PER_COLLECTION === 0) globalThis.gc!({ type: 'minor' })
  }
  await output.sync()
  await Promise.all([input.close(), output.close()])
  await fsPromises.rename(`${path}.floor.tmp`, path)
}

const [side, path, releaseFolder] = process.argv.slice(2) as [string, string, string | undefined]
const started = performance.now()
let rows = 0
if (side === 'floor') await recompress(path)
else if (releaseFolder !== undefined) {
  // A whole home, with the release of the folder named (this checkout's or an earlier commit's).
  const { releaseHome: release } = (await import(
    join(releaseFolder, 'home.ts')
  )) as typeof import('../../src/release/home.ts')
  const { createDshLookout: lookout } = (await import(
    join(releaseFolder, 'dsh-processes.ts')
  )) as typeof import('../../src/release/dsh-processes.ts')
  const { RELEASE_MODES: modes } = (await import(
    join(releaseFolder, 'modes.ts')
  )) as typeof import('../../src/release/modes.ts')
  const mode = modes[modeName(side)]
  // An earlier release (before its modes created stages) took the mode by its name.
  const done = await release({
    ...options(path),
    mode: 'createStage' in mode ? mode : (modeName(side) as unknown as ReleaseMode),
    lookForDsh: lookout(),
  })
  if (done.kind !== 'done' || done.files.some((file) => file.status !== 'released'))
    throw new Error(`the ${side} release of the home did not release every log: ${JSON.stringify(done).slice(0, 2000)}`)
} else {
  // The whole command on a home of one log, as a user runs it: lock, process check, release, backup.
  const release = await releaseHome({
    ...options(path),
    mode: RELEASE_MODES[modeName(side)],
    lookForDsh: createDshLookout(),
  })
  const outcome = release.kind === 'done' ? release.files[0] : undefined
  if (outcome?.status !== 'released')
    throw new Error(`the ${side} release did not release the log: ${JSON.stringify(release)}`)
  rows = outcome.tally.written
}
const ms = performance.now() - started
process.stdout.write(JSON.stringify({ ms, maxRssBytes: process.resourceUsage().maxRSS * 1024, rows }))

/** The release a side runs. */
function modeName(side: string): ReleaseModeName {
  return side === 'upgrade' ? 'upgrade' : 'removal'
}

/** A release's options for a home, but its mode and how it looks for DSH. */
function options(home: string) {
  return {
    home,
    dryRun: false,
    fs: fsPromises,
    startedAt: new Date(),
    pid: process.pid,
    host: hostname(),
    isAlive: () => true,
    dshStopped: false,
  }
}

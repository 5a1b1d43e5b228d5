/**
 * One measured side of rows 7 and 8 in a process of its own: row 7's `node release-run.ts floor <log>` and
 * `node release-run.ts <removal|upgrade> <home of that log>`; row 8's `node release-run.ts home-<side> <home>` for a
 * home of many sessions (`home-floor`, `home-removal`, `home-upgrade`, `home-dry-run`). Prints
 * `{ ms, maxRssBytes, rows }`: the run's wall time, the process's peak RSS, and the `loop/change` rows it marked or
 * removed (row 7's release).
 * @module scripts/bench/release-run
 */
import { closeSync, fsyncSync, openSync, readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs'
import * as fsPromises from 'node:fs/promises'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { createDshLookout } from '../../src/release/process-table.ts'
import { releaseHome } from '../../src/release/home.ts'
import { RELEASE_MODES, type ReleaseModeName } from '../../src/release/modes.ts'
import { decodeFrame, encodeFrame, readFrames, zstdFrameEnd } from '../../src/release/zstd-frames.ts'

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

/**
 * The floor of any tool that rewrites every log of a home crash-safely, as plain as it gets: each log read whole,
 * each frame decompressed and compressed again, written to a temp file beside it, fsynced, renamed over it, and its
 * folder fsynced; synchronous calls, one log after another, no row parsed, nothing kept.
 */
function rewriteHome(home: string): void {
  const sessions = join(home, 'sessions')
  for (const project of readdirSync(sessions))
    for (const session of readdirSync(join(sessions, project))) {
      const folder = join(sessions, project, session)
      const path = join(folder, 'session.jsonl.zstd')
      const bytes = readFileSync(path)
      const frames: Buffer[] = []
      for (let start = 0; start < bytes.length;) {
        const end = zstdFrameEnd(bytes, start)!
        frames.push(encodeFrame(decodeFrame(bytes.subarray(start, end))))
        start = end
      }
      const temp = `${path}.floor.tmp`
      const file = openSync(temp, 'w')
      writeFileSync(file, Buffer.concat(frames))
      fsyncSync(file)
      closeSync(file)
      renameSync(temp, path)
      const directory = openSync(folder, 'r')
      fsyncSync(directory)
      closeSync(directory)
    }
}

const [side, path] = process.argv.slice(2) as [string, string]
const started = performance.now()
let rows = 0
if (side === 'floor') await recompress(path)
else if (side === 'home-floor') rewriteHome(path)
else if (side.startsWith('home-')) {
  // A whole home, as a user runs the release: every look, kept original and the final check included.
  const name = side.slice('home-'.length)
  const done = await releaseHome({
    ...options(path),
    mode: RELEASE_MODES[modeName(name)],
    dryRun: name === 'dry-run',
    lookForDsh: createDshLookout(),
  })
  // A dry run reports each log it would release as released.
  if (done.kind !== 'done' || done.files.some((file) => file.status !== 'released'))
    throw new Error(`the ${side} release of the home did not release every log: ${JSON.stringify(done).slice(0, 2000)}`)
} else {
  // The whole command on a home of one log, as a user runs it: lock, process check, release, backup, read-back.
  const release = await releaseHome({
    ...options(path),
    mode: RELEASE_MODES[modeName(side)],
    lookForDsh: createDshLookout(),
  })
  const outcome = release.kind === 'done' ? release.files[0] : undefined
  if (outcome?.status !== 'released')
    throw new Error(`the ${side} release did not release the log: ${JSON.stringify(release)}`)
  rows = outcome.tally.loopRows
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

/**
 * The release's promise under an adversary (SPEC.md §13 "Leaving loop"), over any sequence of
 * runs in either mode: an unseen DSH appending to a log by path before any file-system call,
 * the folder of originals on another device from any call (no hard link into it), a file system
 * with no hard links at all, a kill at any call, the home moved between runs, and a user copying
 * a kept original back over its log (the log keeps its inode). At every run's
 * exit each log it calls released or already released opens as DSH reads it (the read-back
 * checker, and DSH's own format-0 migration after an upgrade); after a last run with DSH
 * stopped, every event the adversary appended is in its log or in a folder of originals the
 * report names.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs'
import type * as fsPromises from 'node:fs/promises'
import { dirname, join, relative } from 'node:path'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { whyUnopenable } from '../../src/release/check-log.ts'
import { releaseHome, type HomeRelease } from '../../src/release/home.ts'
import { RELEASE_MODES, type ReleaseModeName } from '../../src/release/modes.ts'
import { migrateFormat0 } from '../support/format-migration.ts'
import { gatedFs, releaseDone, releaseOptions } from '../support/release-home.ts'
import { tempDir } from '../../harness/temp-dir.ts'

/** The sessions of the home, each a plain log of 10 events, every fourth a loop record. */
/** More than the release takes at once, so that logs wait for a worker and a removal lets originals go mid-run. */
const SESSIONS = ['a', 'b', 'c', 'd', 'e', 'f'] as const

/** A pid no process has: a killed run's, whose lock the next run takes over. */
const KILLED_PID = 2 ** 22 + 23

const commandRow = (seq: number, name: string) =>
  `{"type":"command/run","seq":${seq},"time":${seq},"data":{"commandId":"${name}","name":"loop","args":" list","source":{"kind":"user"}}}`

function logText(id: string): string {
  const rows = [`{"type":"session","version":0,"id":"${id}","createdAt":1,"delegationDepth":0}`]
  for (let seq = 0; seq < 10; seq += 1)
    rows.push(
      seq % 4 === 3
        ? `{"type":"loop/change","seq":${seq},"time":${seq},"data":{"version":1,"operation":"create","loop":{"id":"loop_${seq}","prompt":"p","time_in_seconds":60,"next_at":60000}}}`
        : commandRow(seq, `${id}-${seq}`),
    )
  return `${rows.join('\n')}\n`
}

/** What the adversary does in one run, by the index of the file-system call it acts before. */
interface RunPlan {
  readonly mode: ReleaseModeName
  /** Before these calls, a DSH appends a row to the log of `SESSIONS[index % SESSIONS.length]`. */
  readonly appendAt: readonly number[]
  /** From this call on, the folder of originals is on another device: a hard link into it fails. */
  readonly linksFailFrom: number
  /** The run dies before this call (none: it finishes). */
  readonly killAt: number | undefined
  /** The home is moved after the run. */
  readonly moveAfter: boolean
  /** The file system makes no hard link at all (a link beside the log fails too). */
  readonly noLinks: boolean
  /** After the run, the user copies the newest kept original of this session back over its log. */
  readonly rollBack: number | undefined
}

const plan = fc.record({
  mode: fc.constantFrom<ReleaseModeName>('removal', 'upgrade'),
  appendAt: fc.uniqueArray(fc.integer({ min: 0, max: 420 }), { maxLength: 6 }),
  linksFailFrom: fc.integer({ min: 0, max: 900 }),
  killAt: fc.option(fc.integer({ min: 0, max: 420 }), { nil: undefined }),
  moveAfter: fc.boolean(),
  noLinks: fc.boolean(),
  rollBack: fc.option(fc.integer({ min: 0, max: SESSIONS.length - 1 }), { nil: undefined }),
})

/** The unseen DSH of one run: it opens a log at its first append and numbers on from what it read. */
function unseenDsh(pathOf: (id: string) => string) {
  const next = new Map<string, number>()
  const wrote: string[] = []
  return {
    wrote,
    append(id: string) {
      const path = pathOf(id)
      if (!next.has(id)) {
        const rows = readFileSync(path, 'utf8').trimEnd().split('\n')
        next.set(id, rows.length === 1 ? 0 : (JSON.parse(rows.at(-1)!) as { seq: number }).seq + 1)
      }
      const name = `dsh-${id}-${wrote.length}-${next.get(id)}`
      appendFileSync(path, `${commandRow(next.get(id)!, name)}\n`)
      next.set(id, next.get(id)! + 1)
      wrote.push(name)
    },
  }
}

/** Why a log the report calls released would not open, by the checker and, after an upgrade, DSH's migration. */
function refusal(path: string, mode: ReleaseModeName): string | undefined {
  const checked = whyUnopenable(path, RELEASE_MODES[mode].loopRows, false)
  if (checked !== undefined || mode === 'removal') return checked
  try {
    migrateFormat0(readFileSync(path, 'utf8'))
    return undefined
  } catch (error) {
    return (error as Error).message
  }
}

/** The newest original an earlier run kept of a session's log, if any folder of originals holds one. */
function newestOriginal(home: string, id: string): string | undefined {
  const folder = join(home, 'loop-release-backup')
  if (!existsSync(folder)) return undefined
  const runs = readdirSync(folder, { withFileTypes: true }).filter((entry) => entry.isDirectory())
  for (const run of runs
    .map((entry) => entry.name)
    .sort()
    .reverse()) {
    const original = join(folder, run, 'sessions', '--p--', id, 'session.jsonl')
    if (existsSync(original)) return original
  }
  return undefined
}

/** Every file's text under a folder. */
function textsUnder(folder: string): string {
  return readdirSync(folder, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => readFileSync(join(entry.parentPath, entry.name), 'utf8'))
    .join('\n')
}

/** One run under its plan; the release, or `undefined` when it was killed. */
async function runUnder(home: string, step: RunPlan, started: number, append: (id: string) => void) {
  let calls = 0
  let killed: () => void = () => {}
  const reached = new Promise<undefined>((resolve) => {
    killed = () => resolve(undefined)
  })
  const opened: fsPromises.FileHandle[] = []
  const running = new Set<Promise<unknown>>()
  const fs = gatedFs(
    (name, args) => {
      const call = calls++
      // From the kill on, no call of the run's (of any log it releases at once) is made.
      if (step.killAt !== undefined && call >= step.killAt) {
        killed()
        return new Promise<void>(() => {})
      }
      for (const [index, at] of step.appendAt.entries()) if (at === call) append(SESSIONS[index % SESSIONS.length]!)
      if (name === 'fs.link' && call >= step.linksFailFrom && String(args[1]).includes('loop-release-backup'))
        throw Object.assign(new Error('EXDEV: simulated'), { code: 'EXDEV' })
      if (name === 'fs.link' && step.noLinks) throw Object.assign(new Error('EPERM: simulated'), { code: 'EPERM' })
    },
    opened,
    running,
  )
  const run = releaseHome(
    releaseOptions(home, {
      mode: step.mode,
      fs,
      startedAt: new Date(started),
      ...(step.killAt === undefined ? {} : { pid: KILLED_PID }),
    }),
  )
  const release = await Promise.race([reached, run])
  await Promise.allSettled(running)
  await Promise.all(opened.map((handle) => handle.close().catch(() => {})))
  return release as HomeRelease | undefined
}

describe('the release under an adversary', () => {
  it('says released only for logs DSH opens, and loses no event DSH appended, over any runs in either mode', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(plan, { minLength: 1, maxLength: 3 }),
        fc.constantFrom<ReleaseModeName>('removal', 'upgrade'),
        async (plans, last) => {
          let home = tempDir('loop-adversary-')
          for (const id of SESSIONS) {
            mkdirSync(join(home, 'sessions', '--p--', id), { recursive: true })
            writeFileSync(join(home, 'sessions', '--p--', id, 'session.jsonl'), logText(id))
          }
          const logOf = (id: string) => join(home, 'sessions', '--p--', id, 'session.jsonl')
          const appended: string[] = []
          for (const [index, step] of plans.entries()) {
            const dsh = unseenDsh(logOf)
            const release = await runUnder(home, step, index, (id) => dsh.append(id))
            // SPEC.md §13 "Leaving loop": with no hard link at all, a kill between a rename and its copy's
            // completion loses what a DSH appended meanwhile; every other run loses nothing.
            if (!(step.noLinks && step.killAt !== undefined)) appended.push(...dsh.wrote)
            for (const file of release?.files ?? [])
              if (file.status === 'released' || file.status === 'already-released')
                expect(refusal(file.path, step.mode), `${file.path} after run ${index}`).toBeUndefined()
            if (step.rollBack !== undefined) {
              // The user's own act: what DSH wrote to the log and not to the original is theirs to lose.
              const id = SESSIONS[step.rollBack]!
              const original = newestOriginal(home, id)
              if (original !== undefined) {
                const kept = readFileSync(original, 'utf8')
                const lost = appended.filter(
                  (name) => name.startsWith(`dsh-${id}-`) && !kept.includes(`"commandId":"${name}"`),
                )
                appended.splice(0, appended.length, ...appended.filter((name) => !lost.includes(name)))
                writeFileSync(logOf(id), kept)
              }
            }
            if (step.moveAfter) {
              const moved = `${home}-m${index}`
              renameSync(home, moved)
              home = moved
            }
          }
          // DSH stopped: a last run.
          const final = await releaseDone(home, { mode: last, startedAt: new Date(plans.length) })
          for (const file of final.files) {
            if (file.status === 'released' || file.status === 'already-released')
              expect(refusal(file.path, last), file.path).toBeUndefined()
          }
          // Every event DSH appended is in its log, or in a folder of originals the report names.
          const named = [
            ...final.earlierFolders,
            ...(final.backupFolder === undefined ? [] : [final.backupFolder]),
          ].map((folder) => textsUnder(folder))
          const logs = SESSIONS.map((id) => readFileSync(logOf(id), 'utf8'))
          for (const name of appended)
            expect(
              [...logs, ...named].some((text) => text.includes(`"commandId":"${name}"`)),
              `${name} is nowhere the report names (${relative(home, dirname(logOf('a')))})`,
            ).toBe(true)
        },
      ),
      { numRuns: Number(process.env['ADVERSARY_RUNS'] ?? 60) },
    )
  })
})

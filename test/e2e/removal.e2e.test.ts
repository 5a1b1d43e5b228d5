/**
 * Leaving loop in real `dsh web` processes on one home (SPEC.md §13 "Leaving loop"): sessions
 * holding active, deleted and inherited (fork) loops, heartbeat turns among ordinary ones, and a
 * session that never held a loop; DSH stopped; `dsh-plugin-loop release` run from the packed
 * tarball; the plugin removed as a user removes it; DSH started again. Without the release DSH
 * refuses those sessions; after it each opens with its history and answers a new prompt.
 */
import { spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { pathToFileURL } from 'node:url'
import { describe, expect } from 'vitest'
import {
  NODE22,
  call,
  createSession,
  dshPluginExec,
  lastUserText,
  prompt,
  reopenSession,
  runCommand,
  waitFor,
  withStoredSessions,
  type HistoryEvent,
} from '../../harness/dsh-stack.ts'
import { SEQ_REFERENCES } from '../../src/release/log-format.ts'
import { migrateFormat0 } from '../support/format-migration.ts'
import { tempDir } from '../../harness/temp-dir.ts'
import { routeOf, startRoutedModel } from './model-router.ts'
import { createLoop, events, heartbeatsOf, settle, test, waitForHeartbeats, type Rig, type RigOptions } from './rig.ts'

/** sha256 of every file under the home's sessions folder, by path relative to the home. */
function sessionDigests(home: string): Record<string, string> {
  const root = join(home, 'sessions')
  return Object.fromEntries(
    readdirSync(root, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => join(entry.parentPath, entry.name))
      .map((path) => [relative(home, path), createHash('sha256').update(readFileSync(path)).digest('hex')]),
  )
}

/** A session's log as stored, its bytes as text. */
async function rawLog(home: string, session: string): Promise<string | undefined> {
  return (await withStoredSessions(home, async (backend, { SessionId }) => backend.readRaw(SessionId(session))))
    ?.content
}

/** `dsh-plugin-loop <args>` run from the packed tarball, as the README shows: unpacked, on Node alone. */
function releaseFromTarball(
  tarball: string,
  args: readonly string[],
): { code: number | null; stdout: string; stderr: string } {
  const unpacked = tempDir('loop-tarball-')
  const untar = spawnSync('tar', ['-xzf', tarball, '-C', unpacked], { encoding: 'utf8' })
  expect(untar.status, untar.stderr).toBe(0)
  const run = spawnSync(NODE22, [join(unpacked, 'package', 'lib', 'cli.js'), ...args], { encoding: 'utf8', env: {} })
  return { code: run.status, stdout: run.stdout, stderr: run.stderr }
}

/**
 * A preload that holds the release's first replacement of a session log right before its rename,
 * for as long as the file `$HOLD` exists, and says so by creating `$HOLD.reached`: a test seam
 * that patches `fs/promises.rename` in the release's own process, nothing of the release's code.
 */
const HOLD_BEFORE_RENAME = `import fsPromises from 'node:fs/promises'
import { existsSync, writeFileSync } from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'
const rename = fsPromises.rename
let held = false
fsPromises.rename = async (from, to) => {
  if (!held && /session\\.jsonl(\\.zstd)?$/.test(String(to))) {
    held = true
    writeFileSync(process.env.HOLD + '.reached', '')
    while (existsSync(process.env.HOLD)) await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return rename(from, to)
}
syncBuiltinESMExports()
`

/** The release from the tarball, held before its first rename while `hold` exists; ends by itself within two minutes. */
function heldRelease(
  tarball: string,
  args: readonly string[],
  hold: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const unpacked = tempDir('loop-tarball-')
  const untar = spawnSync('tar', ['-xzf', tarball, '-C', unpacked], { encoding: 'utf8' })
  expect(untar.status, untar.stderr).toBe(0)
  const preload = join(unpacked, 'hold.mjs')
  writeFileSync(preload, HOLD_BEFORE_RENAME)
  writeFileSync(hold, '')
  const child = spawn(
    NODE22,
    ['--import', pathToFileURL(preload).href, join(unpacked, 'package', 'lib', 'cli.js'), ...args],
    { env: { HOLD: hold }, stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 },
  )
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })))
}

/** A session's log through the history API, each event without the marker a removal release adds. */
async function historyOf(url: string, sessionId: string): Promise<HistoryEvent[]> {
  return (await events(url, sessionId)).map(({ type, seq, time, data }) => ({ type, seq, time, data }))
}

/** Fork a session as DSH web's "Fork" does; returns the fork's id. */
async function fork(url: string, sessionId: string): Promise<string> {
  return (await call<{ sessionId: string }>(url, 'session.fork', { sessionId })).sessionId
}

/** Send a prompt and wait for its answer. */
async function answered(url: string, sessionId: string, text: string): Promise<void> {
  const before = (await events(url, sessionId)).length
  await prompt(url, sessionId, text)
  await waitFor(`an answer to ${JSON.stringify(text)} in ${sessionId}`, async () => {
    const log = await events(url, sessionId)
    return log.slice(before).some((event) => event.type === 'turn/end') ? true : undefined
  })
}

interface LoopHome {
  readonly r: Rig
  /** Active loop A and deleted loop B, heartbeat turns and an ordinary turn. */
  readonly looped: string
  readonly loopA: string
  /** A fork of it, which inherited both loops' records. */
  readonly forked: string
  /** A session that never held a loop, whose model delegated to a sub-agent. */
  readonly plain: string
  /** That sub-agent's session. */
  readonly delegated: string
  readonly ids: readonly string[]
  /** Each session's history as saved, DSH stopped. */
  readonly before: Readonly<Record<string, HistoryEvent[]>>
}

/** What the plain session asks, and what its model hands a sub-agent. */
const DELEGATE = 'delegate a build check'
const CHILD_PROMPT = 'CHILD TASK: check the build once'

/** The model's routes: the sub-agent's requests, the delegating prompt's, a heartbeat's, and every other. */
type LeavingRoute = 'task' | 'delegate' | 'child' | 'heartbeat'
const leavingRoute = (body: unknown): LeavingRoute => {
  const text = lastUserText(body)
  return text === CHILD_PROMPT ? 'child' : text === DELEGATE ? 'delegate' : routeOf(body)
}

/** DSH's title generator, which the rc.8 boot patch turns off, on again: titles name message seqs. */
function titlesOn(): string {
  const patch = join(tempDir('loop-titles-'), 'titles.yml')
  writeFileSync(patch, '- id: session-title-llm\n  disabled: false\n')
  return patch
}

/**
 * A home as a user leaves it, written by a real `dsh web`: a heartbeat's first turn calls a tool,
 * every answer streams, titles are on, and one session is compacted while its loop fires. Stopped,
 * then read back (a history read resumes nothing).
 */
async function writeLoopHome(rig: (script?: object, options?: RigOptions) => Promise<Rig>): Promise<LoopHome> {
  const model = await startRoutedModel<LeavingRoute>(
    {
      task: { sequence: ['success'], repeatLast: true, successText: 'An answer, streamed in a few chunks.' },
      delegate: {
        sequence: ['tool_call_success', 'success'],
        repeatLast: true,
        toolName: 'subagent',
        toolArguments: JSON.stringify({ description: 'build check', prompt: CHILD_PROMPT, run_in_background: false }),
        successText: 'The sub-agent checked it.',
      },
      child: { sequence: ['success'], repeatLast: true, successText: 'Checked: the build is fine.' },
      heartbeat: {
        sequence: ['tool_call_success', 'success'],
        repeatLast: true,
        toolName: 'loop_list',
        toolArguments: '{}',
        successText: 'Heartbeat answered: nothing new.',
      },
    },
    leavingRoute,
  )
  const r = await rig({}, { model, start: false })
  r.plugin('add')
  await r.start([titlesOn()])
  const looped = await createSession(r.url)
  await answered(r.url, looped, 'an ordinary prompt before the loops')
  const loopA = await createLoop(r.url, looped, 1, 'LEAVING_A')
  const loopB = await createLoop(r.url, looped, 2, 'LEAVING_B')
  await waitForHeartbeats(r.url, looped, { [loopA]: 2, [loopB]: 1 })
  await answered(r.url, looped, 'an ordinary prompt among heartbeats')
  const compacted = await waitFor(
    '/compact to find the agent idle',
    async () => {
      const reply = await runCommand(r.url, looped, '/compact')
      return reply.kind === 'success' ? reply : undefined
    },
    20_000,
  )
  expect(compacted.text).toMatch(/^Compacted \d+ history items/)
  expect((await runCommand(r.url, looped, `/loop delete ${loopB}`)).text).toBe(`Deleted ${loopB}.`)
  await settle(r.url, looped)
  const forked = await fork(r.url, looped)
  await reopenSession(r.url, forked)
  await answered(r.url, forked, 'a prompt in the fork')
  const plain = await createSession(r.url)
  await answered(r.url, plain, DELEGATE)
  const { items } = await call<{ items: { sessionId: string; parentSessionId?: string; origin?: string }[] }>(
    r.url,
    'session.list',
    {},
  )
  const delegated = items.find((item) => item.parentSessionId === plain && item.origin === 'subagent')?.sessionId
  expect(delegated, 'the sub-agent session').toBeDefined()
  const ids = [looped, forked, plain, delegated!]
  for (const id of ids) await settle(r.url, id)
  const types = new Set((await events(r.url, looped)).map((event) => event.type))
  for (const type of ['tool/call', 'compaction/summary', 'session/title', 'command/done', 'loop/change'])
    expect([...types]).toContain(type)
  expect((await r.stop('SIGTERM')).code).toBe(0)
  await r.start()
  const before = Object.fromEntries(await Promise.all(ids.map(async (id) => [id, await historyOf(r.url, id)] as const)))
  await r.stop('SIGTERM')
  return { r, looped, loopA, forked, plain, delegated: delegated!, ids, before }
}

describe('leaving loop', () => {
  test('beside a running dsh web both modes refuse, naming it, and write nothing; the session stays whole and its loop fires on', async ({
    rig,
  }) => {
    const r = await rig()
    const session = await createSession(r.url)
    const loop = await createLoop(r.url, session, 1, 'BESIDE_A_RUNNING_DSH')
    await waitForHeartbeats(r.url, session, { [loop]: 2 })
    const homeBefore = readdirSync(r.home).sort()
    const runs = [
      // The conventional form, whose `dsh plugin` process is the release's ancestor, not a DSH on the home…
      ...[[], ['--for-upgrade']].map((mode) => dshPluginExec(r.home, 'web', ['dsh-plugin-loop', 'release', ...mode])),
      // …and the tarball's, run with no environment of DSH's.
      releaseFromTarball(r.tarball, ['release', '--for-upgrade', '--home', r.home]),
    ]
    for (const run of runs) {
      expect(run.code, `${run.stdout}${run.stderr}`).toBe(4)
      expect(run.stderr).toMatch(
        new RegExp(
          `^dsh-plugin-loop: DSH is running on this home: stop it, then run the release again\\. Nothing was written\\.\\n` +
            `  pid ${r.web.child.pid}: \\S+ \\S+@deepseek-ai/dsh/lib/bin\\.js .*web`,
        ),
      )
    }
    // Nothing written: no lock, no backup, no temp file, no marker; DSH's own files are DSH's.
    expect(readdirSync(r.home).sort()).toEqual(homeBefore)
    const files = readdirSync(join(r.home, 'sessions'), { recursive: true }).map(String)
    expect(files.filter((name) => name.includes('loop-release'))).toEqual([])
    const raw = await rawLog(r.home, session)
    expect(raw).toContain('"type":"loop/change"')
    expect(raw).not.toContain('"ignorable":true')
    // The session reads whole, and its loop goes on firing.
    const after = Date.now()
    await waitFor('the loop to fire after the refused releases', async () => {
      const log = await events(r.url, session)
      return heartbeatsOf(log, loop).some((beat) => beat.time >= after) ? true : undefined
    })
    expect((await runCommand(r.url, session, '/loop list')).text?.split('\n')[0]).toBe('1 active loop:')
  })

  test('release, then remove the plugin: every session opens with its history and answers; added back, the loops fire', async ({
    rig,
  }) => {
    const home = await writeLoopHome(rig)
    const { r, ids, before } = home
    const digestsBefore = sessionDigests(r.home)

    // The README's first form, through DSH's `plugin exec`, here as a dry run, which writes nothing.
    const dry = dshPluginExec(r.home, 'web', ['dsh-plugin-loop', 'release', '--dry-run'])
    expect(dry.code, dry.stderr).toBe(0)
    expect(dry.stdout).toMatch(/^Dry run, nothing written: 4 session logs: 2 released/m)
    expect(sessionDigests(r.home)).toEqual(digestsBefore)

    const released = releaseFromTarball(r.tarball, ['release', '--home', r.home])
    console.log(`dsh-plugin-loop release (exit ${released.code}):\n${released.stdout}${released.stderr}`)
    expect(released.code).toBe(0)
    const lines = released.stdout.trim().split('\n')
    for (const id of [home.looped, home.forked])
      expect(lines).toContainEqual(
        expect.stringMatching(new RegExp(`^released  ${id}  .*: \\d+ loop/change rows marked ignorable$`)),
      )
    for (const id of [home.plain, home.delegated])
      expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^no loops  ${id}  `)))
    expect(lines.at(-1)).toMatch(
      /^\d+ session logs: 2 released \(\d+ loop\/change rows\), 0 already released, \d+ without loops, 0 already migrated, 0 left unreleased\.$/,
    )
    // Only the two logs that held loop rows changed.
    const digestsAfter = sessionDigests(r.home)
    const changed = Object.keys(digestsBefore).filter((path) => digestsAfter[path] !== digestsBefore[path])
    expect(changed.map((path) => path.split('/').at(-2)).sort()).toEqual([home.looped, home.forked].sort())
    expect(Object.keys(digestsAfter).sort()).toEqual(Object.keys(digestsBefore).sort())

    r.plugin('remove')
    await r.start()
    for (const id of ids) expect(await historyOf(r.url, id)).toEqual(before[id])
    for (const id of [home.looped, home.forked, home.plain]) await answered(r.url, id, 'still there without loop?')
    const replies = r.model.requests.length
    expect(replies).toBeGreaterThan(0)
    await r.stop('SIGTERM')

    r.plugin('add')
    await r.start()
    await reopenSession(r.url, home.looped)
    const listed = await runCommand(r.url, home.looped, '/loop list')
    expect(listed.text?.split('\n')[0]).toBe('1 active loop:')
    expect(listed.text).toContain(`${home.loopA}  `)
    const reopenedAt = Date.now()
    await waitFor('loop A to fire again', async () => {
      const log = await events(r.url, home.looped)
      return heartbeatsOf(log, home.loopA).some((beat) => beat.time >= reopenedAt) ? true : undefined
    })
  })

  test('release for upgrade, then remove the plugin: every session opens with its history, and DSH format-0 migration accepts every log it accepts without loop', async ({
    rig,
  }) => {
    const home = await writeLoopHome(rig)
    const { r, ids, before } = home

    const checkpoints = join(r.home, 'storages', 'session_projcache.json')
    const hadCheckpoints = existsSync(checkpoints)
    const released = releaseFromTarball(r.tarball, ['release', '--for-upgrade', '--home', r.home])
    console.log(`dsh-plugin-loop release --for-upgrade (exit ${released.code}):\n${released.stdout}${released.stderr}`)
    expect(released.code).toBe(0)
    // DSH's projection checkpoints count events the old way: they go with the originals.
    expect(existsSync(checkpoints)).toBe(false)
    if (hadCheckpoints)
      expect(released.stdout).toContain(
        "DSH's projection checkpoints (storages/session_projcache.json) went with the originals: they count events the old way, and DSH rebuilds them.",
      )
    expect(released.stdout).toMatch(
      /\nThe originals are in .*loop-release-backup\/[0-9T-]+Z; delete it once the upgraded DSH has opened these sessions\.\n$/,
    )

    r.plugin('remove')
    await r.start()
    for (const id of ids) {
      // The session's own non-loop events, one for one: same types and times, renumbered, the
      // same data where it names no event (where it does, DSH's migration below checks it).
      const reopened = await historyOf(r.url, id)
      const kept = before[id]!.filter((event) => event.type !== 'loop/change')
      expect(reopened.map((event) => [event.type, event.seq, event.time])).toEqual(
        kept.map((event, seq) => [event.type, seq, event.time]),
      )
      expect(reopened.filter(namesNoEvent).map((event) => event.data)).toEqual(
        kept.filter(namesNoEvent).map((event) => event.data),
      )
    }
    for (const id of [home.looped, home.forked, home.plain])
      await answered(r.url, id, 'still there after the upgrade release?')
    await r.stop('SIGTERM')

    // DSH's own format-0 migration accepts every log in the home but the sub-agent's: it refuses
    // every rc.8 sub-agent session (descriptor version 2), one that never met loop as this one.
    const migrated = await withStoredSessions(r.home, async (backend, { SessionId }) => {
      const headers = await backend.list()
      return Promise.all(
        headers.map(async (header) => {
          const raw = await backend.readRaw(SessionId(header.id))
          try {
            return [header.id, `${migrateFormat0(raw!.content).events.length} events`] as const
          } catch (error) {
            return [header.id, (error as Error).message] as const
          }
        }),
      )
    })
    console.log(`DSH's format-0 migration of every log in the home:\n${JSON.stringify(migrated, null, 2)}`)
    expect(migrated.map(([id]) => id).sort()).toEqual([...ids].sort())
    for (const [id, outcome] of migrated)
      expect(outcome).toMatch(
        id === home.delegated ? /^subagent\/descriptor \d+ uses unsupported descriptor version 2$/ : /^\d+ events$/,
      )
  })
})

describe('leaving loop beside a DSH the release did not expect', () => {
  test.for([[['--max-old-space-size=512']], [['--unhandled-rejections', 'strict']]] as const)(
    'a dsh web launched with %j before its entry is seen: both modes refuse, writing nothing',
    async ([nodeOptions], { rig }) => {
      const r = await rig({}, { start: false })
      r.plugin('add')
      await r.start([], undefined, [...nodeOptions])
      const session = await createSession(r.url)
      const loop = await createLoop(r.url, session, 1, 'LAUNCHED_WITH_A_NODE_OPTION')
      await waitForHeartbeats(r.url, session, { [loop]: 1 })
      const homeBefore = readdirSync(r.home).sort()
      for (const mode of [[], ['--for-upgrade']]) {
        const run = releaseFromTarball(r.tarball, ['release', ...mode, '--home', r.home])
        expect(run.code, `${run.stdout}${run.stderr}`).toBe(4)
        expect(run.stderr).toMatch(
          new RegExp(
            `\\n  pid ${r.web.child.pid}: \\S+ ${nodeOptions.join(' ')} \\S+@deepseek-ai/dsh/lib/bin\\.js web`,
          ),
        )
      }
      expect(readdirSync(r.home).sort()).toEqual(homeBefore)
      expect(await rawLog(r.home, session)).not.toContain('"ignorable":true')
    },
  )

  test.for([
    ['removal', []],
    ['upgrade', ['--for-upgrade']],
  ] as const)(
    "%s: run by dsh web's own bash tool, the release refuses, naming that DSH, and writes nothing",
    async ([, flags], { rig }) => {
      // The agent runs the release as a user would ask it to; the command reads the home from a file the test writes.
      const scratch = tempDir('loop-agent-release-')
      const unpacked = join(scratch, 'unpacked')
      const output = join(scratch, 'output')
      const command =
        `${NODE22} ${join(unpacked, 'package', 'lib', 'cli.js')} release ${flags.join(' ')} ` +
        `--home "$(cat ${join(scratch, 'home')})" > ${output} 2>&1; echo "exit $?" >> ${output}`
      const r = await rig({
        sequence: ['tool_call_success', 'success'],
        toolName: 'bash',
        toolArguments: JSON.stringify({ command, description: 'Release the loop plugin' }),
      })
      expect(spawnSync('mkdir', [unpacked]).status).toBe(0)
      expect(spawnSync('tar', ['-xzf', r.tarball, '-C', unpacked]).status).toBe(0)
      writeFileSync(join(scratch, 'home'), r.home)
      const session = await createSession(r.url)
      expect((await runCommand(r.url, session, '/loop 3600 never due here')).text).toMatch(/^Created loop_/)
      const before = sessionDigests(r.home)
      await prompt(r.url, session, 'Remove the loop plugin')
      await waitFor('the bash tool to finish', async () =>
        existsSync(output) && readFileSync(output, 'utf8').includes('exit ') ? true : undefined,
      )
      const said = readFileSync(output, 'utf8')
      expect(said).toContain(
        `dsh-plugin-loop: The release was started by DSH (pid ${r.web.child.pid}), which writes this session's log after the release ends: run it from a terminal, with DSH stopped.\n`,
      )
      expect(said.trimEnd().split('\n').at(-1)).toBe('exit 4')
      expect(readdirSync(r.home)).not.toContain('loop-release-backup')
      // The tool's result, logged after the release ended, lands in a log nothing rewrote.
      await settle(r.url, session)
      const after = sessionDigests(r.home)
      expect(Object.keys(after).sort()).toEqual(Object.keys(before).sort())
      expect(await rawLog(r.home, session)).not.toContain('"ignorable":true')
    },
  )

  test.for([
    ['removal', []],
    ['upgrade', ['--for-upgrade']],
  ] as const)(
    '%s: a dsh web started while the release is held before its rename, its loop firing, loses no event; stopped, a rerun rebuilds the log and the session opens without the plugin',
    async ([mode, flags], { rig }) => {
      const r = await rig()
      const session = await createSession(r.url)
      const loop = await createLoop(r.url, session, 1, 'STARTED_DURING_THE_RELEASE')
      await waitForHeartbeats(r.url, session, { [loop]: 2 })
      await r.stop('SIGTERM')

      const hold = join(tempDir('loop-hold-'), 'hold')
      const running = heldRelease(r.tarball, ['release', ...flags, '--home', r.home], hold)
      await waitFor('the release to reach its rename', async () => (existsSync(`${hold}.reached`) ? true : undefined))
      // DSH starts while the release holds the original it read; the session opens and its loop fires into that file…
      await r.start()
      await reopenSession(r.url, session)
      const beforeRename = (await events(r.url, session)).length
      await waitForHeartbeats(r.url, session, { [loop]: heartbeatsOf(await events(r.url, session), loop).length + 1 })
      expect((await events(r.url, session)).length).toBeGreaterThan(beforeRename)
      // …then into the new file, counting on from what it read.
      rmSync(hold)
      const released = await running
      console.log(
        `dsh-plugin-loop release ${flags.join(' ')} beside a DSH it did not see start (exit ${released.code}):\n${released.stdout}${released.stderr}`,
      )
      expect(released.code).toBe(4)
      expect(released.stdout).toMatch(
        new RegExp(
          `^WRITTEN   ${session}  .*: a DSH wrote to it while the release ran, so it is not released; its original, with every event DSH wrote to it, is loop-release-backup/`,
          'm',
        ),
      )
      await waitForHeartbeats(r.url, session, { [loop]: heartbeatsOf(await events(r.url, session), loop).length + 1 })
      expect((await runCommand(r.url, session, `/loop delete ${loop}`)).text).toBe(`Deleted ${loop}.`)
      const shown = (await settle(r.url, session)).map(({ type, seq, time, data }) => ({ type, seq, time, data }))
      await r.stop('SIGTERM')

      const rerun = releaseFromTarball(r.tarball, ['release', ...flags, '--home', r.home])
      console.log(`the rerun (exit ${rerun.code}):\n${rerun.stdout}${rerun.stderr}`)
      expect(rerun.code).toBe(0)
      expect(rerun.stdout).toMatch(
        new RegExp(
          `^released  ${session}  .*\\(rebuilt from loop-release-backup/.* and the rows a DSH wrote after an earlier release\\)`,
          'm',
        ),
      )

      r.plugin('remove')
      await r.start()
      const reopened = await historyOf(r.url, session)
      if (mode === 'removal') expect(reopened).toEqual(shown)
      else {
        const kept = shown.filter((event) => event.type !== 'loop/change')
        expect(reopened.map((event) => [event.type, event.seq, event.time])).toEqual(
          kept.map((event, seq) => [event.type, seq, event.time]),
        )
      }
      await answered(r.url, session, 'still there after a release beside a DSH?')
      await r.stop('SIGTERM')
      if (mode === 'upgrade') {
        expect(migrateFormat0((await rawLog(r.home, session))!).events.length).toBeGreaterThan(0)
      }
    },
  )
})

/** An event whose data names no other event by its seq (SPEC.md §13 "Leaving loop" lists them). */
function namesNoEvent(event: HistoryEvent): boolean {
  return SEQ_REFERENCES.events[event.type]?.data === undefined
}

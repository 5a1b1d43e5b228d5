/**
 * A DSH the release did not see (SPEC.md §13 "Leaving loop"): a real rc.8 host that starts while
 * a release runs, opens a session whose loop then fires, and writes into the log before and after
 * its replacement. The log is named and not counted, its original kept, and a rerun with DSH
 * stopped rebuilds it with every event DSH wrote: rc.8 opens it without `loop` after a removal,
 * DSH's migration accepts it after an upgrade. A DSH the release does see stops it at once.
 */
import {
  appendFileSync,
  copyFileSync,
  existsSync,
  linkSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs'
import type { FileHandle } from 'node:fs/promises'
import { dirname, join, relative } from 'node:path'
import { zstdDecompressSync } from 'node:zlib'
import { SessionId } from '@deepseek-ai/dsh-session'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { DshProcess } from '../../src/release/dsh-processes.ts'
import { exitCodeOf, runCli } from '../../src/release/cli.ts'
import { releaseHome, type HomeRelease } from '../../src/release/home.ts'
import type { ReleaseModeName } from '../../src/release/modes.ts'
import { migrateFormat0 } from '../support/format-migration.ts'
import { advance, resumeFakeAgent, runCommand, useHosts, type FakeAgent, type Host } from '../support/host.ts'
import {
  framesOf,
  gatedFs,
  logOf,
  releaseDone,
  releaseOptions,
  reportOf,
  tallyOf,
  writeHome,
  useLoopTypeForgettable,
} from '../support/release-home.ts'
import { tempDir } from '../../harness/temp-dir.ts'

const loopType = useLoopTypeForgettable()

const hosts = useHosts()

/** The DSH that starts during the release, as `ps` would show it. */
const STARTED: DshProcess = { pid: 4242, command: 'node /x/@deepseek-ai/dsh/lib/bin.js web' }

/**
 * A Zstandard log's rows, header first (or without it).
 * @param log - the log.
 * @param withHeader - keep the header row.
 */
async function rowsOf(log: string, withHeader = false): Promise<string[]> {
  const text = (await framesOf(log)).map(({ frame }) => zstdDecompressSync(frame).toString()).join('')
  const rows = text.split('\n').filter((row) => row !== '')
  return withHeader ? rows : rows.slice(1)
}

/** Each event's type and time: what DSH wrote, whatever its seq became. */
const typeAndTime = (events: readonly { type: string; time: number }[]) =>
  events.map((event) => `${event.type}@${event.time}`)

describe('a DSH that starts while the release runs', () => {
  it.each([
    ['removal', false],
    ['removal', true],
    ['upgrade', false],
    ['upgrade', true],
  ] as const)('%s (seen by the last look: %s): loses no event, and a rerun rebuilds the log', async (mode, seen) => {
    const { home } = await writeHome(hosts)
    const log = logOf(home, 'session-looped')
    const rowsBefore = await rowsOf(log)
    let dsh: Host | undefined
    let looped: FakeAgent | undefined
    let renamed = false
    const wrote: number[] = []
    const fs = gatedFs(async (step, args) => {
      if (step === 'fs.rename' && args[1] === log && dsh === undefined) {
        // Right before the looped session's log is replaced: a DSH starts, opens it, and its 2 s loop fires.
        dsh = await hosts.bootKeepingTimers({ root: join(home, 'sessions') })
        looped = await resumeFakeAgent(dsh, 'session-looped')
        await runCommand(dsh, looped.agent, '/loop list')
        await advance(2_000)
        wrote.push((await rowsOf(log)).length - rowsBefore.length)
        renamed = true
      } else if (renamed) {
        // Right after: it fires again, into the new file, counting on from what it read.
        renamed = false
        const rows = (await rowsOf(log)).length
        await runCommand(dsh!, looped!.agent, '/loop list')
        await advance(2_000)
        wrote.push((await rowsOf(log)).length - rows)
      }
    })
    const first = await releaseDone(home, {
      mode,
      fs,
      lookForDsh: async () => ({ kind: 'looked', running: seen && dsh !== undefined ? [STARTED] : [] }),
    })
    // Logs go several at once: the fork may be replaced after the looped log, and a look that sees the DSH stops it.
    const forkReleased = first.files.some((file) => file.sessionId === 'session-fork')
    expect(first.files.map((file) => [file.sessionId, file.status])).toEqual([
      ...(forkReleased ? [['session-fork', 'released']] : []),
      ['session-looped', 'written-meanwhile'],
      ['session-plain', 'no-loops'],
    ])
    expect(first.untouched).toEqual(forkReleased ? [] : [logOf(home, 'session-fork')])
    if (!forkReleased) expect(seen).toBe(true)
    const written = first.files.find((file) => file.sessionId === 'session-looped')!
    const original = written.status === 'written-meanwhile' ? written.original : undefined
    expect(original).toBe(join(first.backupFolder!, relative(home, log)))
    expect(first.stoppedBy).toEqual(seen ? { kind: 'dsh-running', running: [STARTED] } : undefined)
    expect(reportOf(first)).toContain(
      `WRITTEN   session-looped  ${relative(home, log)}: a DSH wrote to it while the release ran, so it is not released; ` +
        `its original, with every event DSH wrote to it, is ${relative(home, original!)}`,
    )

    expect(reportOf(first)).toContain(
      `The originals are in ${relative(home, first.backupFolder!)}; keep it: the next run rebuilds from it what DSH wrote meanwhile.`,
    )
    // DSH stops: what it wrote and showed is every event of the session.
    const shown = looped!.agent.session.events.map(({ type, time }) => ({ type, time }))
    // It wrote on both sides of the replacement, events that are not loop records among them.
    expect(shown.filter((event) => event.type === 'command/run')).toHaveLength(2)
    expect(wrote.every((rows) => rows > 0)).toBe(true)
    expect(wrote).toHaveLength(2)
    await hosts.dispose(dsh!)

    const rerun = await releaseDone(home, { mode, startedAt: new Date(1) })
    expect(rerun.files.map((file) => [file.sessionId, file.status])).toEqual([
      ['session-fork', !forkReleased ? 'released' : mode === 'removal' ? 'already-released' : 'no-loops'],
      ['session-looped', 'released'],
      ['session-plain', 'no-loops'],
    ])
    expect(rerun.files[1]).toMatchObject({ rebuiltFrom: original })
    expect(rerun.earlierFolders).toEqual([first.backupFolder])
    expect(tallyOf(rerun.files[1]!).loopRows).toBe(shown.filter((event) => event.type === 'loop/change').length)

    if (mode === 'upgrade') {
      // DSH's own migration accepts it, and it holds every event DSH wrote but the loop records.
      const migrated = migrateFormat0((await rowsOf(log, true)).join('\n'))
      const events = migrated.events as readonly { type: string; time: number }[]
      expect(typeAndTime(events)).toEqual(typeAndTime(shown.filter((event) => event.type !== 'loop/change')))
      return
    }
    // rc.8 without loop opens it, every event DSH wrote in it, the loop records marked.
    loopType.forget()
    const bare = await hosts.bootKeepingTimers({ root: join(home, 'sessions'), loop: false })
    const events = (await bare.ctx.sessionPersistence.readFrom(SessionId('session-looped'), 0)).events
    expect(typeAndTime(events)).toEqual(typeAndTime(shown))
    expect(events.filter((event) => event.type === 'loop/change').every((event) => event.ignorable === true)).toBe(true)
    await resumeFakeAgent(bare, 'session-looped')
    await hosts.dispose(bare)
  })
})

/** A plain-text log's rows: a header, then `command/run` events with a loop record after every `loopEvery`-th. */
function plainLog(id: string, events: number, loopEvery: number): string {
  const rows = [`{"type":"session","version":0,"id":"${id}","createdAt":1,"delegationDepth":0}`]
  for (let seq = 0; seq < events; seq += 1)
    rows.push(
      (seq + 1) % loopEvery === 0
        ? `{"type":"loop/change","seq":${seq},"time":${seq},"data":{"version":1,"operation":"create","loop":{"id":"loop_${seq}","prompt":"p${seq}","time_in_seconds":60,"next_at":60000}}}`
        : commandRow(seq, `${id}-${seq}`),
    )
  return `${rows.join('\n')}\n`
}

/** A `command/run` row DSH writes, named so that a test can find it again. */
function commandRow(seq: number, name: string): string {
  return `{"type":"command/run","seq":${seq},"time":${seq},"data":{"commandId":"${name}","name":"loop","args":" list","source":{"kind":"user"}}}`
}

/** A home of plain-text logs, one per session. */
function plainHome(logs: Readonly<Record<string, string>>): { home: string; paths: string[] } {
  const home = tempDir('loop-meanwhile-')
  const paths = Object.entries(logs).map(([id, text]) => {
    const path = join(home, 'sessions', '--p--', id, 'session.jsonl')
    mkdirSync(dirname(path), { recursive: true })
    writeFileSync(path, text)
    return path
  })
  return { home, paths }
}

describe('a DSH the release sees once it has started', () => {
  it.each([2, 3, 5])(
    'at look %i (before each replacement, then at the end) stops the run, leaves the rest untouched and exits 4',
    async (appearsAt) => {
      const logs = { a: plainLog('a', 6, 3), b: plainLog('b', 6, 3), c: plainLog('c', 6, 3) }
      const { home, paths } = plainHome(logs)
      let looks = 0
      const io = {
        out: '',
        stdout: (text: string) => void (io.out += text),
        stderr: () => {},
        env: {},
        cwd: home,
        now: () => new Date(0),
        pid: process.pid,
        isAlive: (pid: number) => pid === process.pid,
        lookForDsh: async () => ({
          kind: 'looked' as const,
          running: (looks += 1) >= appearsAt ? [STARTED] : [],
        }),
      }
      expect(await runCli(['release', '--home', home, '--json'], io)).toBe(4)
      const release = JSON.parse(io.out) as HomeRelease
      const replaced = appearsAt - 2
      expect(release.files.map((file) => file.status)).toEqual(Array(replaced).fill('released'))
      // Logs are released several at once: the first looks let through whichever reached them.
      const done = new Set(release.files.map((file) => file.path))
      expect(release.untouched).toEqual(paths.filter((path) => !done.has(path)))
      expect(release.stoppedBy).toEqual({ kind: 'dsh-running', running: [STARTED] })
      // What it replaced it keeps, with the originals, until a run ends clean.
      const folder = join(home, 'loop-release-backup', '1970-01-01T00-00-00-000Z')
      expect(release.backupFolder).toBe(replaced === 0 ? undefined : folder)
      paths.forEach((path, index) => {
        const text = readFileSync(path, 'utf8')
        expect(text === Object.values(logs)[index]).toBe(!done.has(path))
        if (done.has(path))
          expect(readFileSync(join(folder, relative(home, path)), 'utf8')).toBe(Object.values(logs)[index])
      })
      expect(reportOf(release)).toContain(
        'A DSH started on this home while the release ran: stop it, then run the release again, which checks and mends what it wrote.\n' +
          `  pid ${STARTED.pid}: ${STARTED.command}`,
      )
      // With DSH stopped, the next run finishes, ends clean, and keeps nothing of its own.
      const rerun = await releaseDone(home, { startedAt: new Date(1) })
      expect(rerun.files.map((file) => file.status)).toEqual(
        paths.map((path) => (done.has(path) ? 'already-released' : 'released')),
      )
      expect(rerun.backupFolder).toBeUndefined()
      expect(rerun.earlierFolders).toEqual(replaced === 0 ? [] : [folder])
    },
  )
})

describe('logs released at once', () => {
  it('lets every log in flight finish before a failure ends the run and the lock goes', async () => {
    const logs = { a: plainLog('a', 6, 3), b: plainLog('b', 6, 3) }
    const { home, paths } = plainHome(logs)
    const failure = new Error('the terminal went away')
    // The second log's start fails while the first is being released beside it.
    const progress = (_done: number, _total: number, current: string | undefined) => {
      if (current === paths[1]) throw failure
    }
    await expect(releaseHome(releaseOptions(home, { progress }))).rejects.toBe(failure)
    // At once: the first log is released whole, nothing of the run is left beside it, and the home is free.
    expect(readFileSync(paths[0]!, 'utf8')).not.toBe(logs.a)
    expect(readFileSync(paths[1]!, 'utf8')).toBe(logs.b)
    expect(readdirSync(dirname(paths[0]!))).toEqual(['session.jsonl'])
    expect(existsSync(join(home, 'loop-release.lock'))).toBe(false)
  })

  it('lets a removal original go once a later look finds no DSH: a removal never holds the whole home twice', async () => {
    const ids = Array.from({ length: 12 }, (_, index) => `s${index}`)
    const { home, paths } = plainHome(Object.fromEntries(ids.map((id) => [id, plainLog(id, 6, 3)])))
    const folder = join(home, 'loop-release-backup', '1970-01-01T00-00-00-000Z')
    const originals = () => paths.filter((path) => existsSync(join(folder, relative(home, path))))
    const held: number[] = []
    let looks = 0
    let grown: string | undefined
    const lookForDsh = async () => {
      held.push(originals().length)
      // An unseen DSH appends to the first original held at a look whose log is replaced already
      // (so a later look, not the end, finds it grew): that one stays.
      const replacedAlready = originals().filter((path) => readFileSync(path, 'utf8').includes('"ignorable":true'))
      if (grown === undefined && replacedAlready.length > 0 && looks < ids.length) {
        grown = replacedAlready[0]!
        appendFileSync(join(folder, relative(home, grown)), `${commandRow(6, 'dsh-early')}\n`)
      }
      // At the last look, a DSH appends to a log whose original has gone.
      if ((looks += 1) === 1 + ids.length + 1) {
        const [gone] = paths.filter((path) => !originals().includes(path))
        appendFileSync(gone!, `${commandRow(6, 'dsh-late')}\n`)
      }
      return { kind: 'looked', running: [] } as const
    }
    const release = await releaseDone(home, { lookForDsh })
    // Each of the four logs at once is replaced between two of its looks: a look finds at most two
    // looks' worth of originals held (one due, one since), and the one that grew.
    expect(Math.max(...held)).toBeLessThanOrEqual(2 * 4 + 1)
    expect(held.at(-1)).toBeLessThan(ids.length)
    const written = release.files.filter((file) => file.status === 'written-meanwhile' && file.path !== grown)
    expect(written).toEqual([{ path: written[0]!.path, sessionId: written[0]!.sessionId, status: 'written-meanwhile' }])
    expect(release.files.find((file) => file.path === grown)).toMatchObject({
      status: 'written-meanwhile',
      original: join(folder, relative(home, grown!)),
    })
    expect(reportOf(release)).toContain(
      `WRITTEN   ${written[0]!.sessionId}  ${relative(home, written[0]!.path)}: a DSH wrote to it while the release ran, so it is not released; every event DSH wrote is in it`,
    )
    // The rerun finds it released as it is (DSH wrote no loop row): nothing DSH wrote is lost.
    const rerun = await releaseDone(home, { startedAt: new Date(1) })
    expect(rerun.files.find((file) => file.path === written[0]!.path)?.status).toBe('already-released')
    expect(readFileSync(written[0]!.path, 'utf8')).toContain('dsh-late')
  })

  it('leaves a log whose journal line fails, and writes the lines of the logs beside it', async () => {
    const { home, paths } = plainHome({ a: plainLog('a', 6, 3), b: plainLog('b', 6, 3) })
    let failed: string | undefined
    // The first journal line (it opens with the run's) fails, as on a full disk.
    const fs = gatedFs((step, args) => {
      if (step !== 'handle.writeFile' || failed !== undefined || !String(args[0]).startsWith('{"kind":"run"')) return
      failed = String(args[0])
      throw Object.assign(new Error('ENOSPC: simulated'), { code: 'ENOSPC' })
    })
    const release = await releaseDone(home, { mode: 'upgrade', fs })
    const [leftLog] = paths.filter((path) => failed!.includes(JSON.stringify(relative(home, path))))
    expect(release.files.map((file) => [file.path, file.status])).toEqual(
      paths.map((path) => [path, path === leftLog ? 'left' : 'released']),
    )
    expect(release.files.find((file) => file.path === leftLog)).toMatchObject({
      reason: 'the disk is full: ENOSPC: simulated',
    })
    const journal = readFileSync(join(release.backupFolder!, 'release.jsonl'), 'utf8').trimEnd().split('\n')
    expect(journal.map((line) => (JSON.parse(line) as { kind: string }).kind)).toEqual(['run', 'replaced'])
    expect(journal[1]).not.toContain(JSON.stringify(relative(home, leftLog!)))
  })
})

describe('a process list that cannot be read once the release has started', () => {
  it('stops the run there, says why, and exits 4', async () => {
    const { home, paths } = plainHome({ a: plainLog('a', 6, 3), b: plainLog('b', 6, 3) })
    let looks = 0
    const lookForDsh = async () =>
      (looks += 1) === 3
        ? ({ kind: 'cannot-look', why: 'the process list could not be read (EMFILE)' } as const)
        : ({ kind: 'looked', running: [] } as const)
    const release = await releaseDone(home, { lookForDsh })
    // Logs are released several at once: either may be the one the third look stopped.
    expect(release.files.map((file) => file.status)).toEqual(['released'])
    const [released] = release.files.map((file) => file.path)
    expect(release.untouched).toEqual(paths.filter((path) => path !== released))
    expect(reportOf(release)).toContain(
      'The release stopped: the process list could not be read (EMFILE), so it could not tell whether a DSH had started on this home. Stop DSH, then run the release again.',
    )
    // The user's word that DSH is stopped goes where the system gives no way to look.
    looks = 0
    const confirmed = await releaseDone(home, { lookForDsh, dshStopped: true, startedAt: new Date(1) })
    expect(confirmed.files.map((file) => [file.path, file.status])).toEqual(
      paths.map((path) => [path, path === released ? 'already-released' : 'released']),
    )
    expect(confirmed.stoppedBy).toBeUndefined()
  })
})

/**
 * A DSH with the session open: each append opens the log by path and writes one row, as rc.8
 * does, counting on from the seq after the last event of the file it read when it opened it.
 */
function fakeDsh(path: string): { open: () => void; append: () => void; wrote: string[] } {
  let next: number | undefined
  const wrote: string[] = []
  const open = () => {
    const rows = readFileSync(path, 'utf8').trimEnd().split('\n')
    next = rows.length === 1 ? 0 : (JSON.parse(rows.at(-1)!) as { seq: number }).seq + 1
  }
  return {
    wrote,
    open,
    append: () => {
      if (next === undefined) open()
      const name = `dsh-${wrote.length}`
      appendFileSync(path, `${commandRow(next!, name)}\n`)
      wrote.push(name)
      next! += 1
    },
  }
}

describe('DSH appends at any step of a release', () => {
  it('right after the rename, into the new file only, are seen at the end: WRITTEN, not released, exit 1', async () => {
    const { home, paths } = plainHome({ s: plainLog('s', 12, 4) })
    const [log] = paths as [string]
    const dsh = fakeDsh(log)
    let renamed = false
    const fs = gatedFs((step, args) => {
      if (renamed) {
        // Once the new file is in place it writes on, in the numbering it read.
        renamed = false
        dsh.append()
      } else if (step === 'fs.rename' && args[1] === log) {
        // It opens the session while the release holds the original.
        dsh.open()
        renamed = true
      }
    })
    const release = await releaseDone(home, { mode: 'upgrade', fs })
    expect(release.files).toMatchObject([{ status: 'written-meanwhile' }])
    expect(exitCodeOf(release)).toBe(1)
    expect(reportOf(release)).toMatch(/^WRITTEN   s  /m)
    expect(readFileSync(log, 'utf8').trimEnd().split('\n').at(-1)).toBe(commandRow(12, 'dsh-0'))
    // The rerun rebuilds it: the row follows the original's numbering, renumbered with it.
    const rerun = await releaseDone(home, { mode: 'upgrade', startedAt: new Date(1) })
    expect(rerun.files).toMatchObject([{ status: 'released', rebuiltFrom: expect.any(String) }])
    expect(readFileSync(log, 'utf8').trimEnd().split('\n').at(-1)).toBe(
      commandRow(12, 'dsh-0').replace('"seq":12', '"seq":9'),
    )
  })

  it.each(['removal', 'upgrade'] as const)(
    '%s: after a rerun with DSH stopped, every event DSH appended is in the log, numbered without a gap',
    async (mode) => {
      const text = plainLog('s', 12, 4)
      const steps: string[] = []
      await releaseDone(plainHome({ s: text }).home, { mode, fs: gatedFs((step) => void steps.push(step)) })
      await fc.assert(
        fc.asyncProperty(
          // The steps before which the DSH appends; `steps.length` is after the run returned.
          fc.uniqueArray(fc.integer({ min: 0, max: steps.length }), { minLength: 1, maxLength: 4 }),
          async (appendAt) => {
            const { home, paths } = plainHome({ s: text })
            const [log] = paths as [string]
            const dsh = fakeDsh(log)
            let step = 0
            await releaseDone(home, {
              mode,
              fs: gatedFs(() => {
                if (appendAt.includes(step++)) dsh.append()
              }),
            })
            if (appendAt.includes(steps.length)) dsh.append()
            const rerun = await releaseDone(home, { mode, startedAt: new Date(1) })
            expect(['released', 'already-released', 'no-loops']).toContain(rerun.files[0]!.status)
            const rows = readFileSync(log, 'utf8').trimEnd().split('\n').slice(1)
            const events = rows.map(
              (row) => JSON.parse(row) as { type: string; seq: number; data: { commandId?: string } },
            )
            expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index))
            const named = events.map((event) => event.data.commandId).filter((name) => name !== undefined)
            expect(named).toEqual(
              [...plainLog('s', 12, 4).matchAll(/"commandId":"([^"]+)"/g)].map(([, name]) => name).concat(dsh.wrote),
            )
            const loopRows = rows.filter((row) => row.startsWith('{"type":"loop/change"'))
            if (mode === 'upgrade') expect(loopRows).toEqual([])
            else expect(loopRows.every((row) => row.endsWith(',"ignorable":true}'))).toBe(true)
          },
        ),
        { numRuns: 60 },
      )
    },
  )
})

describe('a log an earlier release replaced', () => {
  /** A home of one plain log with loops, upgraded once, and where that run kept its original. */
  async function releasedOnce(mode: 'upgrade') {
    const { home, paths } = plainHome({ s: plainLog('s', 12, 4) })
    const [log] = paths as [string]
    const first = await releaseDone(home, { mode })
    return {
      home,
      log,
      first,
      kept: join(home, 'loop-release-backup', '1970-01-01T00-00-00-000Z', relative(home, log)),
    }
  }

  it.each(['fs.link', 'fs.rename'])(
    'with no hard links, keeps a copy made whole of what DSH wrote to the original (at %s), each row once, and the rerun rebuilds from it',
    async (appendAt) => {
      const { home, paths } = plainHome({ s: plainLog('s', 12, 4) })
      const [log] = paths as [string]
      const dsh = fakeDsh(log)
      let appended = false
      const noLinks = gatedFs((step, args) => {
        if (step === appendAt && args.includes(log) && !appended) {
          appended = true
          dsh.append()
        }
        if (step === 'fs.link') throw Object.assign(new Error('EPERM: simulated'), { code: 'EPERM' })
      })
      const first = await releaseDone(home, { mode: 'upgrade', fs: noLinks })
      const kept = join(first.backupFolder!, relative(home, log))
      expect(first.files).toEqual([{ path: log, sessionId: 's', status: 'written-meanwhile', original: kept }])
      expect(readFileSync(kept, 'utf8')).toBe(plainLog('s', 12, 4) + `${commandRow(12, 'dsh-0')}\n`)
      const rerun = await releaseDone(home, { mode: 'upgrade', startedAt: new Date(1) })
      expect(rerun.files).toMatchObject([{ status: 'released', rebuiltFrom: kept }])
      expect(readFileSync(log, 'utf8')).toContain('"commandId":"dsh-0"')
      expect(reportOf(rerun)).toContain(
        `released  s  ${relative(home, log)}: 3 loop/change rows removed, 10 rows kept (rebuilt from ${relative(home, kept)} and the rows a DSH wrote after an earlier release)`,
      )
    },
  )

  it('is left, both files kept, when DSH wrote two numberings or its new rows cannot be read; a cut one is read as it is', async () => {
    // Cut short (no DSH does so): no longer the replacement its journal names, it is read as it is.
    const cut = await releasedOnce('upgrade')
    truncateSync(cut.log, 100)
    expect((await releaseDone(cut.home, { mode: 'upgrade', startedAt: new Date(1) })).files).toEqual([
      { path: cut.log, sessionId: 's', status: 'left', reason: expect.stringMatching(/^its last write was cut short/) },
    ])
    // One DSH read the original and wrote on in its numbering, another read the new file: the two do not join.
    const twice = await releasedOnce('upgrade')
    appendFileSync(twice.kept, `${commandRow(12, 'old')}\n`)
    appendFileSync(twice.log, `${commandRow(9, 'new')}\n`)
    expect((await releaseDone(twice.home, { mode: 'upgrade', startedAt: new Date(1) })).files).toMatchObject([
      {
        status: 'left',
        reason: `a DSH wrote both to it and to its original after ${twice.first.backupFolder} released it, and their events do not join; its original is ${twice.kept}`,
      },
    ])
    const unreadable = await releasedOnce('upgrade')
    appendFileSync(unreadable.log, 'not a row\n')
    expect((await releaseDone(unreadable.home, { mode: 'upgrade', startedAt: new Date(1) })).files).toMatchObject([
      {
        status: 'left',
        reason: `a DSH wrote to it after ${unreadable.first.backupFolder} released it, and it cannot be rebuilt: row 0 does not begin with its type and seq as DSH writes a row; its original is ${unreadable.kept}`,
      },
    ])
    for (const { log, kept } of [cut, twice, unreadable]) expect(existsSync(kept) && existsSync(log)).toBe(true)
    // Its original deleted since: nothing to rebuild from.
    const gone = await releasedOnce('upgrade')
    rmSync(gone.kept)
    appendFileSync(gone.log, `${commandRow(9, 'new')}\n`)
    expect((await releaseDone(gone.home, { mode: 'upgrade', startedAt: new Date(1) })).files).toMatchObject([
      {
        status: 'left',
        reason: expect.stringMatching(
          new RegExp(
            `^a DSH wrote to it after .* released it, and it cannot be rebuilt: ENOENT: .*; its original is ${gone.kept}$`,
          ),
        ),
      },
    ])
  })

  it('is left, every handle closed, when it cannot be opened to read its joins', async () => {
    const { home, log, kept } = await releasedOnce('upgrade')
    appendFileSync(log, `${commandRow(9, 'new')}\n`)
    const opened: FileHandle[] = []
    let keptOpen = false
    // The log's open right after its kept original's (reading the joins) fails, as with no descriptors left.
    const fs = gatedFs((step, args) => {
      if (step !== 'fs.open') return
      if (keptOpen && args[0] === log) throw Object.assign(new Error('EMFILE: simulated'), { code: 'EMFILE' })
      keptOpen = args[0] === kept
    }, opened)
    const release = await releaseDone(home, { mode: 'upgrade', fs, startedAt: new Date(1) })
    expect(release.files).toMatchObject([{ status: 'left', reason: expect.stringContaining('EMFILE: simulated') }])
    expect(opened.map((handle) => handle.fd)).toEqual(opened.map(() => -1))
  })

  it('with CRLF rows is rebuilt across its joins', async () => {
    const { home, paths } = plainHome({ s: plainLog('s', 8, 4).replaceAll('\n', '\r\n') })
    const [log] = paths as [string]
    await releaseDone(home, { mode: 'upgrade' })
    // A DSH that read the original writes on in its numbering.
    appendFileSync(log, `${commandRow(8, 'dsh')}\n`)
    const rerun = await releaseDone(home, { mode: 'upgrade', startedAt: new Date(1) })
    expect(rerun.files).toMatchObject([{ status: 'released', rebuiltFrom: expect.any(String) }])
    expect(readFileSync(log, 'utf8').split('\n').at(-2)).toBe(commandRow(8, 'dsh').replace('"seq":8', '"seq":6'))
  })

  it('names the loops an earlier upgrade removed while its original is kept and readable', async () => {
    const lost = await releasedOnce('upgrade')
    expect((await releaseDone(lost.home, { mode: 'upgrade', startedAt: new Date(1) })).earlierRemoved).toEqual([
      {
        path: lost.log,
        folder: lost.first.backupFolder,
        loops: [3, 7, 11].map((seq) => ({ id: `loop_${seq}`, time_in_seconds: 60, prompt: `p${seq}` })),
      },
    ])
    rmSync(lost.kept)
    expect((await releaseDone(lost.home, { mode: 'upgrade', startedAt: new Date(2) })).earlierRemoved).toEqual([])
    const { home } = plainHome({ s: plainLog('s', 4, 4).replace('"operation":"create"', '"operation":"bogus"') })
    await releaseDone(home, { mode: 'upgrade' })
    expect((await releaseDone(home, { mode: 'upgrade', startedAt: new Date(1) })).earlierRemoved).toEqual([])
  })

  it('that is removed during the run is named, its original kept', async () => {
    const { home, paths } = plainHome({ s: plainLog('s', 12, 4) })
    const [log] = paths as [string]
    let removed = false
    const release = await releaseDone(home, {
      fs: gatedFs((step) => {
        if (step === 'handle.stat' && !removed && existsSync(join(home, 'loop-release-backup'))) {
          removed = true
          rmSync(log)
        }
      }),
    })
    expect(release.files).toMatchObject([{ status: 'written-meanwhile' }])
    expect(readFileSync(join(release.backupFolder!, relative(home, log)), 'utf8')).toBe(plainLog('s', 12, 4))
  })
})

describe('a journal line, matched by what it replaced', () => {
  /** A removal during which a DSH wrote into the original right before the rename: `WRITTEN`. */
  async function writtenDuring() {
    const { home, paths } = plainHome({ s: plainLog('s', 12, 4) })
    const [log] = paths as [string]
    const dsh = fakeDsh(log)
    const first = await releaseDone(home, {
      fs: gatedFs((step, args) => {
        if (step === 'fs.rename' && args[1] === log) dsh.append()
      }),
    })
    return { home, log, dsh, first }
  }

  it('mends a log whose home was moved after a run a DSH wrote during', async () => {
    const { home, log, dsh, first } = await writtenDuring()
    expect(first.files).toMatchObject([{ status: 'written-meanwhile' }])
    const moved = `${home}-moved`
    renameSync(home, moved)
    const movedLog = join(moved, relative(home, log))
    const rerun = await releaseDone(moved, { startedAt: new Date(1) })
    expect(rerun.files).toMatchObject([
      {
        path: movedLog,
        status: 'released',
        rebuiltFrom: join(moved, relative(home, first.backupFolder!), relative(home, log)),
      },
    ])
    expect(readFileSync(movedLog, 'utf8')).toContain(`"commandId":"${dsh.wrote[0]}"`)
  })

  it('reads a line an earlier build wrote (absolute paths, no hash) by its inode', async () => {
    const { home, log, dsh, first } = await writtenDuring()
    const journal = join(first.backupFolder!, 'release.jsonl')
    const kept = join(first.backupFolder!, relative(home, log))
    const lines = readFileSync(journal, 'utf8')
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
    const old = lines.map(({ hash: _hash, ...line }) => (line['kind'] === 'replaced' ? { ...line, log, kept } : line))
    writeFileSync(journal, old.map((line) => `${JSON.stringify(line)}\n`).join(''))
    const rerun = await releaseDone(home, { startedAt: new Date(1) })
    expect(rerun.files).toMatchObject([{ path: log, status: 'released', rebuiltFrom: kept }])
    expect(readFileSync(log, 'utf8')).toContain(`"commandId":"${dsh.wrote[0]}"`)
  })

  it('names, once, a folder no log fits any more: it may be removed; a run over one session cannot tell', async () => {
    const { home, paths } = plainHome({ s: plainLog('s', 12, 4), t: plainLog('t', 12, 4) })
    const first = await releaseDone(home, { mode: 'upgrade' })
    const folder = first.backupFolder!
    // Both logs copied back from their originals: neither is what that run wrote.
    for (const log of paths) copyFileSync(join(folder, relative(home, log)), log)
    const one = await releaseDone(home, { mode: 'upgrade', startedAt: new Date(1), session: 's' })
    expect(one.unfitting).toEqual([])
    const rerun = await releaseDone(home, { mode: 'upgrade', startedAt: new Date(2) })
    expect(rerun.unfitting).toEqual([folder])
    expect(reportOf(rerun)).toContain(
      `No log of this home is still what the release of ${relative(home, folder)} wrote (each changed or was released again since): nothing is mended from it, so it may be removed.`,
    )
    // The later runs' lines fit: only the first folder is named.
    expect((await releaseDone(home, { mode: 'upgrade', startedAt: new Date(3) })).unfitting).toEqual([folder])
  })

  it('passes over a line whose log was copied back from its original (same inode), and releases it', async () => {
    const { home, paths } = plainHome({ s: plainLog('s', 12, 4) })
    const [log] = paths as [string]
    const first = await releaseDone(home, { mode: 'upgrade' })
    const kept = join(first.backupFolder!, relative(home, log))
    const inode = statSync(log).ino
    copyFileSync(kept, log)
    expect(statSync(log).ino).toBe(inode)
    const rerun = await releaseDone(home, { mode: 'upgrade', startedAt: new Date(1) })
    expect(rerun.files).toMatchObject([{ path: log, status: 'released', tally: { rows: 12, loopRows: 3 } }])
    expect(() => migrateFormat0(readFileSync(log, 'utf8'))).not.toThrow()
  })
})

describe('the read-back check at the end of a run', () => {
  it('calls no log released that DSH would refuse: FAILED, its original kept and named, exit 1', async () => {
    // A log a DSH unseen by an earlier run left with a gap (rows only its original held), then a turn's end.
    const gapped = (id: string) =>
      `${plainLog(id, 8, 4)
        .replace(/"seq":5,/, '"seq":9,')
        .replace(/"seq":6,/, '"seq":10,')}` +
      '{"type":"turn/end","seq":11,"time":11,"data":{"turn":1,"reason":"completed"}}\n'
    const withEnd = gapped('gap')
    const marked = gapped('old').replaceAll('}}}\n', '}},"ignorable":true}\n')
    const { home, paths } = plainHome({ gap: withEnd, old: marked, whole: plainLog('whole', 8, 4) })
    const release = await releaseDone(home)
    const kept = join(release.backupFolder!, relative(home, paths[0]!))
    expect(release.files).toEqual([
      {
        path: paths[0],
        sessionId: 'gap',
        status: 'unopenable',
        reason: 'seq gap at line 7 (expected 5, got 9)',
        original: kept,
      },
      { path: paths[1], sessionId: 'old', status: 'unopenable', reason: 'seq gap at line 7 (expected 5, got 9)' },
      expect.objectContaining({ sessionId: 'whole', status: 'released' }),
    ])
    expect(readFileSync(kept, 'utf8')).toBe(withEnd)
    expect(exitCodeOf(release)).toBe(1)
    const report = reportOf(release)
    expect(report).toContain(
      `FAILED    gap  ${relative(home, paths[0]!)}: read back after the release, DSH would not open it: seq gap at line 7 (expected 5, got 9); its original is ${relative(home, kept)}`,
    )
    expect(report).toContain(
      `FAILED    old  ${relative(home, paths[1]!)}: read back after the release, DSH would not open it: seq gap at line 7 (expected 5, got 9); no original of it is kept`,
    )
    expect(report).toContain(
      "3 session logs: 1 released (2 loop/change rows), 0 already released, 0 without loops, 0 already migrated, 0 left unreleased, 2 failed the check DSH's reader would make.",
    )
    expect(report).toContain(`The originals are in ${relative(home, release.backupFolder!)}; keep it`)
  })

  it('reads a log back again as its last act when a DSH wrote to it after the check', async () => {
    const after = (mode: ReleaseModeName, write: (log: string) => void) => {
      const { home, paths } = plainHome({ s: plainLog('s', 12, 4) })
      const [log] = paths as [string]
      // Giving the lock back is the run's last file-system call: the write lands after the read-back.
      const fs = gatedFs((step, args) => {
        if (step === 'fs.readFile' && String(args[0]).endsWith('loop-release.lock')) write(log)
      })
      return releaseDone(home, { mode, fs }).then((release) => ({ home, log, release }))
    }
    // A row DSH numbers on from the released log: it still opens.
    const valid = await after('removal', (log) => appendFileSync(log, `${commandRow(12, 'dsh')}\n`))
    expect(valid.release.files).toMatchObject([{ status: 'released' }])
    // Rows of another numbering: not released; a clean removal kept no original by then.
    const gap = await after('removal', (log) => appendFileSync(log, `${commandRow(20, 'dsh')}\n`))
    expect(gap.release.files).toEqual([
      {
        path: gap.log,
        sessionId: 's',
        status: 'unopenable',
        reason:
          'it changed after the release read it back (a DSH the looks did not see): seq gap at line 14 (expected 12, got 20)',
      },
    ])
    expect(exitCodeOf(gap.release)).toBe(1)
    const upgraded = await after('upgrade', (log) => appendFileSync(log, `${commandRow(12, 'dsh')}\n`))
    expect(upgraded.release.files).toMatchObject([
      { status: 'unopenable', original: join(upgraded.release.backupFolder!, relative(upgraded.home, upgraded.log)) },
    ])
    const gone = await after('removal', (log) => rmSync(log))
    expect(gone.release.files).toMatchObject([
      {
        status: 'unopenable',
        reason: expect.stringMatching(
          /^it changed after the release read it back \(a DSH the looks did not see\): it could not be read back \(ENOENT/,
        ),
      },
    ])
  })

  it('installs a rebuild only when DSH would open it', async () => {
    const { home, paths } = plainHome({ s: plainLog('s', 12, 4) })
    const [log] = paths as [string]
    await releaseDone(home, { mode: 'upgrade' })
    const kept = join(home, 'loop-release-backup', '1970-01-01T00-00-00-000Z', relative(home, log))
    // The kept original lost a row (a backup restored from elsewhere); a DSH wrote on in its numbering.
    writeFileSync(kept, readFileSync(kept, 'utf8').replace(`${commandRow(5, 's-5')}\n`, ''))
    appendFileSync(log, `${commandRow(12, 'dsh')}\n`)
    const before = readFileSync(log, 'utf8')
    const rerun = await releaseDone(home, { mode: 'upgrade', startedAt: new Date(1) })
    expect(rerun.files).toEqual([
      {
        path: log,
        sessionId: 's',
        status: 'left',
        reason: `rebuilt from ${kept} and the rows a DSH wrote after an earlier release, it would not open in DSH (seq gap at line 6 (expected 4, got 5)); both are kept as they are`,
      },
    ])
    expect(readFileSync(log, 'utf8')).toBe(before)
  })
})

describe('an original held beside its log while it is copied to another device', () => {
  /** A gate for a folder of originals on another device: no hard link into it. */
  const crossDevice = (args: readonly unknown[]) => {
    if (String(args[1]).includes('loop-release-backup'))
      throw Object.assign(new Error('EXDEV: simulated'), { code: 'EXDEV' })
  }

  it('is finished by the next run after a kill: the copy gets what DSH appended, the hold goes', async () => {
    const { home, paths } = plainHome({ s: plainLog('s', 12, 4) })
    const [log] = paths as [string]
    const dsh = fakeDsh(log)
    const opened: FileHandle[] = []
    let dead = false
    let died: () => void = () => {}
    const death = new Promise<void>((resolve) => {
      died = resolve
    })
    // DSH appends to the original right before the rename; the run dies right after it.
    const killed = releaseHome(
      releaseOptions(home, {
        mode: 'upgrade',
        pid: 2 ** 22 + 29,
        fs: gatedFs((step, args) => {
          if (dead) return new Promise<void>(() => {})
          if (step === 'fs.link') crossDevice(args)
          if (step === 'fs.rename' && args[1] === log) dsh.append()
          if (step === 'fs.open' && String(args[0]) === dirname(log)) {
            dead = true
            died()
          }
        }, opened),
      }),
    )
    await Promise.race([death, killed])
    await Promise.all(opened.map((handle) => handle.close().catch(() => {})))
    const holds = readdirSync(dirname(log)).filter((name) => name.endsWith('.hold'))
    expect(holds).toHaveLength(1)
    const rerun = await releaseDone(home, { mode: 'upgrade', startedAt: new Date(1) })
    expect(readdirSync(dirname(log)).filter((name) => name.endsWith('.hold'))).toEqual([])
    const kept = join(home, 'loop-release-backup', '1970-01-01T00-00-00-000Z', relative(home, log))
    expect(readFileSync(kept, 'utf8')).toBe(plainLog('s', 12, 4) + `${commandRow(12, dsh.wrote[0]!)}\n`)
    expect(rerun.files).toMatchObject([{ status: 'released', rebuiltFrom: kept }])
    expect(readFileSync(log, 'utf8')).toContain(`"commandId":"${dsh.wrote[0]}"`)
  })

  it('goes when no journal names it (its run never replaced the log), and a hold that cannot be made leaves the log', async () => {
    const { home, paths } = plainHome({ s: plainLog('s', 12, 4) })
    const [log] = paths as [string]
    linkSync(log, `${log}.loop-release-9-00000000.hold`)
    const release = await releaseDone(home)
    expect(release.files).toMatchObject([{ status: 'released' }])
    expect(readdirSync(dirname(log))).toEqual(['session.jsonl'])
    const denied = plainHome({ s: plainLog('s', 12, 4) })
    const left = await releaseDone(denied.home, {
      fs: gatedFs((step, args) => {
        if (step !== 'fs.link') return
        crossDevice(args)
        if (String(args[1]).endsWith('.hold')) throw Object.assign(new Error('EACCES: simulated'), { code: 'EACCES' })
      }),
    })
    expect(left.files).toMatchObject([{ status: 'left', reason: 'no permission: EACCES: simulated' }])
    expect(readFileSync(denied.paths[0]!, 'utf8')).toBe(plainLog('s', 12, 4))
  })
})

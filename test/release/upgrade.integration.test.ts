/**
 * The upgrade release against DSH's own format-0 migration and the real host: logs a real rc.8
 * host with `loop` wrote are refused by the migration as written, and after the release it
 * accepts them with the same events as the sessions' own non-loop events (SPEC.md §13
 * "Leaving loop").
 */
import { existsSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { SessionId } from '@deepseek-ai/dsh-session'
import { describe, expect, it } from 'vitest'
import type { HomeRelease } from '../../src/release/home.ts'
import { PROJECTION_CACHE } from '../../src/release/run-writes.ts'
import { BACKUP_FOLDER } from '../../src/release/journal.ts'
import { migrateFormat0 } from '../support/format-migration.ts'
import { useHosts, type Host } from '../support/host.ts'
import {
  HOME_SESSIONS,
  digests,
  logOf,
  releaseDone,
  tallyOf,
  writeHome,
  useLoopTypeForgettable,
} from '../support/release-home.ts'
import { mkdirSync, writeFileSync } from 'node:fs'

const loopType = useLoopTypeForgettable()

const hosts = useHosts()

const upgrade = (home: string, dryRun = false): Promise<HomeRelease> =>
  releaseDone(home, { mode: 'upgrade', dryRun, startedAt: new Date(Date.UTC(2026, 11, 4, 12)) })

/** A log's text as DSH's own raw reader returns it (every frame, in order). */
async function rawLog(host: Host, id: string): Promise<string> {
  const raw = await host.ctx.sessionPersistence.readRaw(SessionId(id))
  if (raw === undefined) throw new Error(`no log for ${id}`)
  return raw.content
}

interface StoredEvent {
  readonly type: string
  readonly seq: number
  readonly time: number
  readonly data: unknown
}

describe('release for upgrade', () => {
  it('turns each log DSH migration refuses into the log of a host that never had loop, keeping the original', async () => {
    const { home, loopId } = await writeHome(hosts)
    const reader = await hosts.bootKeepingTimers({ root: join(home, 'sessions') })
    const written = Object.fromEntries(
      await Promise.all(HOME_SESSIONS.map(async (id) => [id, await rawLog(reader, id)] as const)),
    )
    const before = Object.fromEntries(
      await Promise.all(
        HOME_SESSIONS.map(
          async (id) => [id, (await reader.ctx.sessionPersistence.readFrom(SessionId(id), 0)).events] as const,
        ),
      ),
    )
    await hosts.dispose(reader)
    // A later DSH refuses every session that ever held a loop, as written.
    for (const id of ['session-looped', 'session-fork'])
      expect(() => migrateFormat0(written[id]!)).toThrow(
        /format v0 contains unknown historical event type "loop\/change" at seq 0; migration refuses unknown historical events even when ignorable/,
      )
    // DSH's projection checkpoints, which count events the old way.
    mkdirSync(join(home, 'storages'), { recursive: true })
    writeFileSync(join(home, PROJECTION_CACHE), '{"checkpoints":"of the old numbering"}')
    const digestsBefore = digests(home)

    expect((await upgrade(home, true)).files.map((file) => file.status)).toEqual(['released', 'released', 'no-loops'])
    expect(digests(home)).toEqual(digestsBefore)

    const release = await upgrade(home)
    const backupFolder = join(home, BACKUP_FOLDER, '2026-12-04T12-00-00-000Z')
    expect(release.backupFolder).toBe(backupFolder)
    expect(release.projectionCache).toBe(join(backupFolder, PROJECTION_CACHE))
    expect(existsSync(join(home, PROJECTION_CACHE))).toBe(false)
    expect(release.files.map((file) => [file.sessionId, file.status, tallyOf(file).loopRows])).toEqual([
      ['session-fork', 'released', 8],
      ['session-looped', 'released', 8],
      ['session-plain', 'no-loops', 0],
    ])
    // What each session loses is named as /loop recreates it: the active loop, not the deleted one, nor
    // in the fork the loops it inherited and never ran.
    expect(
      release.files.map((file) => (tallyOf(file) && file.status === 'released' ? file.removedLoops : undefined)),
    ).toEqual([[], [{ id: loopId, time_in_seconds: 2, prompt: 'check the build' }], undefined])
    // The originals are kept, byte for byte, where the report says.
    for (const file of release.files) {
      if (file.status !== 'released') continue
      // A hard link: nothing says it was copied.
      expect([file.original, file.copied]).toEqual([join(backupFolder, relative(home, file.path)), undefined])
      expect(digests(home)[relative(home, file.original!)]).toBe(digestsBefore[relative(home, file.path)])
    }
    expect(
      readFileSync(logOf(home, 'session-plain')).equals(
        readFileSync(join(home, relative(home, logOf(home, 'session-plain')))),
      ),
    ).toBe(true)
    expect(digests(home)[relative(home, logOf(home, 'session-plain'))]).toBe(
      digestsBefore[relative(home, logOf(home, 'session-plain'))],
    )

    // A host without loop opens each session; its events are the session's own non-loop events, renumbered.
    loopType.forget()
    const bare = await hosts.bootKeepingTimers({ root: join(home, 'sessions'), loop: false })
    for (const id of HOME_SESSIONS) {
      const kept = (before[id] as readonly StoredEvent[]).filter((event) => event.type !== 'loop/change')
      const expected = kept.map((event, seq) => ({ ...event, seq }))
      expect((await bare.ctx.sessionPersistence.readFrom(SessionId(id), 0)).events).toEqual(expected)
      // …and DSH's migration accepts it, with the same events.
      const migrated = migrateFormat0(await rawLog(bare, id))
      expect(migrated.events.map((event) => [event.type, event.seq, event.time, event.data])).toEqual(
        expected.map((event) => [event.type, event.seq, event.time, event.data]),
      )
    }
    // The fork's boundary counts its inherited events without the removed ones.
    const forkHeader = JSON.parse((await rawLog(bare, 'session-fork')).split('\n')[0]!) as { seedLength: number }
    const parentKept = (before['session-looped'] as readonly StoredEvent[]).filter(
      (event) => event.type !== 'loop/change',
    )
    expect(forkHeader.seedLength).toBe(parentKept.length)
    await hosts.dispose(bare)

    // A second run has nothing to remove and writes nothing.
    const settled = digests(home)
    const second = await upgrade(home)
    expect(second.files.map((file) => file.status)).toEqual(['no-loops', 'no-loops', 'no-loops'])
    expect(second.backupFolder).toBeUndefined()
    expect(digests(home)).toEqual(settled)
  })
})

/**
 * The removal release against the real host: logs a real rc.8 host with `loop` wrote, released
 * on disk, then opened by the real host without `loop` and again with it (SPEC.md §13
 * "Leaving loop").
 */
import { join, relative } from 'node:path'
import { zstdDecompressSync } from 'node:zlib'
import { SessionId } from '@deepseek-ai/dsh-session'
import { describe, expect, it } from 'vitest'
import { advance, listedOf, resumeFakeAgent, runTool, useHosts } from '../support/host.ts'
import {
  digests,
  framesOf,
  logOf,
  releaseDone,
  tallyOf,
  writeHome,
  useLoopTypeForgettable,
} from '../support/release-home.ts'

const loopType = useLoopTypeForgettable()

const hosts = useHosts()

describe('release for removal', () => {
  it('marks every loop/change row, touches no other file, and the host opens each session without loop', async () => {
    const { home, loopId } = await writeHome(hosts)
    const before = digests(home)
    expect(Object.keys(before).filter((path) => path.endsWith('session.jsonl.zstd'))).toHaveLength(3)

    // As written, a host without loop refuses the session.
    loopType.forget()
    const refusing = await hosts.bootKeepingTimers({ root: join(home, 'sessions'), loop: false })
    await expect(resumeFakeAgent(refusing, 'session-looped')).rejects.toThrow(
      /contains event type "loop\/change" \(seq \d+\) unknown to this harness and not marked ignorable/,
    )
    await hosts.dispose(refusing)
    loopType.restore()
    expect(digests(home)).toEqual(before)

    const ids = ['session-looped', 'session-fork', 'session-plain']
    const reader = await hosts.bootKeepingTimers({ root: join(home, 'sessions') })
    const history = await Promise.all(
      ids.map(async (id) => (await reader.ctx.sessionPersistence.readFrom(SessionId(id), 0)).events),
    )
    await hosts.dispose(reader)

    const writtenFrames = (await framesOf(logOf(home, 'session-looped'))).map(({ frame }) => frame)
    const dry = await releaseDone(home, { dryRun: true })
    expect(digests(home)).toEqual(before)
    expect(dry.files.map((file) => [file.sessionId, file.status])).toEqual([
      ['session-fork', 'released'],
      ['session-looped', 'released'],
      ['session-plain', 'no-loops'],
    ])

    const done = await releaseDone(home)
    expect(done.files.map((file) => [file.sessionId, file.status, tallyOf(file).loopRows])).toEqual(
      dry.files.map((file) => [file.sessionId, file.status, tallyOf(file).loopRows]),
    )
    // Frame for frame: a frame without loop rows keeps its bytes; one with them differs only by the markers.
    const releasedFrames = (await framesOf(logOf(home, 'session-looped'))).map(({ frame }) => frame)
    expect(releasedFrames).toHaveLength(writtenFrames.length)
    const rewrittenFrames = releasedFrames.filter((frame, index) => !frame.equals(writtenFrames[index]!))
    expect(rewrittenFrames.length).toBeGreaterThan(0)
    expect(rewrittenFrames.length).toBeLessThan(releasedFrames.length)
    releasedFrames.forEach((frame, index) =>
      expect(zstdDecompressSync(frame).toString().replaceAll(',"ignorable":true}', '}')).toBe(
        zstdDecompressSync(writtenFrames[index]!).toString(),
      ),
    )
    const after = digests(home)
    const changedFiles = Object.keys(before).filter((path) => before[path] !== after[path])
    expect(changedFiles.sort()).toEqual(
      done.files
        .filter((file) => file.status === 'released')
        .map((file) => relative(home, file.path))
        .sort(),
    )
    expect(Object.keys(after).sort()).toEqual(Object.keys(before).sort())

    // A second run writes nothing and says so.
    const second = await releaseDone(home)
    expect(second.files.map((file) => file.status)).toEqual(['already-released', 'already-released', 'no-loops'])
    expect(digests(home)).toEqual(after)

    // A host without loop: the type is unknown to it, and the marked rows let it open the sessions.
    loopType.forget()
    const bare = await hosts.bootKeepingTimers({ root: join(home, 'sessions'), loop: false })
    // Its history is the one written, each loop/change row marked and kept opaque.
    const marked = history.map((events) =>
      events.map((event) => (event.type === 'loop/change' ? { ...event, ignorable: true } : event)),
    )
    expect(
      await Promise.all(ids.map(async (id) => (await bare.ctx.sessionPersistence.readFrom(SessionId(id), 0)).events)),
    ).toEqual(marked)
    for (const id of ids) {
      const reopened = await resumeFakeAgent(bare, id)
      const loopRows = reopened.agent.session.events.filter((event) => event.type === 'loop/change')
      expect(loopRows.every((event) => event.ignorable === true)).toBe(true)
    }
    await hosts.dispose(bare)
    loopType.restore()

    // With loop back: the active loop is listed as before.
    const again = await hosts.bootKeepingTimers({ root: join(home, 'sessions') })
    const looped = await resumeFakeAgent(again, 'session-looped')
    const listed = await runTool(again, looped.agent, 'loop_list', {})
    expect(listedOf(listed, 'id')).toEqual([loopId])
    // …and fires: the occurrences missed while the session was closed arrive as one heartbeat.
    await advance(2_000)
    expect(looped.followup.mock.calls.length + looped.send.mock.calls.length).toBeGreaterThan(0)
    await hosts.dispose(again)

    // New records are written unmarked: a run after that marks just them.
    const third = await releaseDone(home)
    expect(
      third.files.map((file) => [
        file.sessionId,
        file.status,
        tallyOf(file).loopRows > 0,
        (tallyOf(file).alreadyMarked ?? 0) > 0,
      ]),
    ).toEqual([
      ['session-fork', 'already-released', false, true],
      ['session-looped', 'released', true, true],
      ['session-plain', 'no-loops', false, false],
    ])
  })
})

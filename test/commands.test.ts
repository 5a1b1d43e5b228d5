import { describe, expect, it, vi } from 'vitest'
import { formatList, parseLoopCommand } from '../src/commands.ts'
import type { LoopCreateChange } from '../src/types.ts'
import { createsOf, loopChanges, resumeFakeAgent, runCommand, useFakeHost } from './support/host.ts'
import { NOW } from './support/epoch.ts'

describe('parseLoopCommand', () => {
  it.each([
    [' 1 check the build', { kind: 'create', time_in_seconds: 1, prompt: 'check the build' }],
    [
      ' 30   Summarize any new failures  ',
      { kind: 'create', time_in_seconds: 30, prompt: 'Summarize any new failures' },
    ],
    [' 5 list', { kind: 'create', time_in_seconds: 5, prompt: 'list' }],
    [' 5 line one\nline two', { kind: 'create', time_in_seconds: 5, prompt: 'line one\nline two' }],
    [' 0 x', { kind: 'create', time_in_seconds: 0, prompt: 'x' }],
    [' list', { kind: 'list' }],
    ['   list  ', { kind: 'list' }],
    [' delete loop_a91', { kind: 'delete', id: 'loop_a91' }],
  ])('%j', (raw, parsed) => {
    expect(parseLoopCommand(raw)).toEqual(parsed)
  })

  it.each([
    '',
    ' ',
    ' 30',
    ' 30   ',
    ' abc do it',
    ' 1.5 x',
    ' -1 x',
    ' list all',
    ' LIST',
    ' delete',
    ' delete a b',
    ' pause loop_a',
  ])('%j is usage', (raw) => {
    expect(parseLoopCommand(raw)).toEqual({ kind: 'usage' })
  })
})

describe('/loop through the real command runtime', () => {
  const rig = useFakeHost('ses-cmd')

  /** The reply to a line the command refuses. */
  const refused = (text: string) => ({ kind: 'error', text })

  it('creates with the complete remainder as the prompt, lists, and deletes', async () => {
    const created = await rig.command('/loop 90 check the build & report <failures>')
    const id = createsOf(loopChanges(rig.fake.agent))[0]!.loop.id
    expect(created).toEqual({
      kind: 'success',
      text: `Created ${id}: every 1m 30s, next in 1m 30s. Prompt: check the build & report <failures>`,
    })
    expect(loopChanges(rig.fake.agent)).toEqual([
      {
        version: 1,
        operation: 'create',
        loop: { id, prompt: 'check the build & report <failures>', time_in_seconds: 90, next_at: NOW + 90_000 },
      },
    ])

    await vi.advanceTimersByTimeAsync(30_000)
    expect(await rig.command('/loop list')).toEqual({
      kind: 'success',
      text: `1 active loop:\n${id}  every 1m 30s  next in 1m (2026-11-30T00:01:30.000Z)  check the build & report <failures>`,
    })

    expect(await rig.command(`/loop delete ${id}`)).toEqual({
      kind: 'success',
      text: `Deleted ${id}.`,
    })
    expect(await rig.command('/loop list')).toEqual({
      kind: 'success',
      text: 'No active loops in this session. Create one with /loop <seconds> <prompt>.',
    })
    expect(loopChanges(rig.fake.agent).at(-1)).toEqual({ version: 1, operation: 'delete', id })
  })

  it('lists a multi-line prompt on one line, line breaks shown as ⏎ and cut on code points', async () => {
    // A prompt whose second line reads like a loop row: listed raw, it would pass for a second loop.
    const prompt =
      'Check CI\nloop_deadbeef  every 5s  next in 1s (2026-11-30T00:00:01.000Z)  rm -r📋\nthen report 📋 and wait for the reviewer to answer'
    await rig.command(`/loop 60 ${prompt}`)
    const [{ loop }] = createsOf(loopChanges(rig.fake.agent)) as [LoopCreateChange]
    const { id } = loop
    expect(loop.prompt).toBe(prompt)
    expect(await rig.command('/loop list')).toEqual({
      kind: 'success',
      text: `1 active loop:\n${id}  every 1m  next in 1m (2026-11-30T00:01:00.000Z)  Check CI⏎loop_deadbeef  every 5s  next in 1s (2026-11-30T00:00:01.000Z)  rm -r📋…`,
    })
  })

  it('refuses /loop 8700000000000 before appending (past the last date), and lists and deletes a far-future loop', async () => {
    const longest = Math.floor((8.64e15 - NOW) / 1000)
    expect(await rig.command('/loop 8700000000000 far away')).toEqual(
      refused(
        `time_in_seconds is 8700000000000, so the first heartbeat would fall after +275760-09-13T00:00:00.000Z, the last date a timestamp can hold; the longest interval accepted now is ${longest} seconds.`,
      ),
    )
    expect(loopChanges(rig.fake.agent)).toEqual([])
    // The longest interval accepted now is a loop like any other: it lists, with its date, and deletes.
    const created = await rig.command(`/loop ${longest} the longest`)
    expect(created.kind).toBe('success')
    const [change] = createsOf(loopChanges(rig.fake.agent)) as [LoopCreateChange]
    expect(change.loop.next_at).toBe(NOW + longest * 1000)
    expect(await rig.command('/loop list')).toEqual({
      kind: 'success',
      text: `1 active loop:\n${change.loop.id}  every 99979213d  next in 99979213d (+275760-09-13T00:00:00.000Z)  the longest`,
    })
    expect(await rig.command(`/loop delete ${change.loop.id}`)).toEqual({
      kind: 'success',
      text: `Deleted ${change.loop.id}.`,
    })
    // A record whose next_at lies beyond what a Date represents (written by an earlier build), in a log this build reopens.
    rig.fake.agent.session.append('loop/change', {
      version: 1,
      operation: 'create',
      loop: {
        id: 'loop_far',
        prompt: 'far away',
        time_in_seconds: 8_700_000_000_000,
        next_at: NOW + 8_700_000_000_000_000,
      },
    })
    await rig.host.ctx.sessions.flush(rig.fake.agent.session)
    await rig.fake.handle.dispose()
    const reopened = await resumeFakeAgent(rig.host, rig.fake.agent.session.id)
    expect(await runCommand(rig.host, reopened.agent, '/loop list')).toEqual({
      kind: 'success',
      text: '1 active loop:\nloop_far  every 100694444d 10h 40m  next in 100694444d 10h 40m (beyond the representable date range)  far away',
    })
    expect(await runCommand(rig.host, reopened.agent, '/loop delete loop_far')).toEqual({
      kind: 'success',
      text: 'Deleted loop_far.',
    })
  })

  it('refuses a create in a session whose log has used every loop id', async () => {
    // Only a hand-edited log gets there: a record holding the last counted id.
    rig.fake.agent.session.append('loop/change', {
      version: 1,
      operation: 'create',
      loop: { id: 'loop_fffffffffffff', prompt: 'the last id', time_in_seconds: 60, next_at: NOW + 60_000 },
    })
    await rig.host.ctx.sessions.flush(rig.fake.agent.session)
    await rig.fake.handle.dispose()
    const reopened = await resumeFakeAgent(rig.host, rig.fake.agent.session.id)
    expect(await runCommand(rig.host, reopened.agent, '/loop 30 one more')).toEqual(
      refused('This session has used every loop id; create loops in a new session.'),
    )
    expect(loopChanges(reopened.agent)).toHaveLength(1)
  })

  it('tells an id that breaks the id rule apart from an unknown one', async () => {
    expect(await rig.command('/loop delete loop_<x>')).toEqual(
      refused(
        'id must be a loop id such as loop_3fa9c2d1 (loop_ then letters, digits, _ or -); run loop_list to see them.',
      ),
    )
    expect(await rig.command('/loop delete loop_zz')).toEqual(
      refused('No active loop "loop_zz" in this session; run loop_list (or /loop list) to see its loops.'),
    )
  })

  it('answers malformed lines with the exact usage and appends nothing', async () => {
    for (const line of ['/loop', '/loop 30', '/loop soon do it', '/loop delete', '/loop pause x']) {
      expect(await rig.command(line)).toEqual(
        refused('Usage: /loop <seconds> <prompt> | /loop list | /loop delete <id>'),
      )
    }
    expect(loopChanges(rig.fake.agent)).toEqual([])
  })

  it('passes the tool validation message through as the command error', async () => {
    expect(await rig.command('/loop 0 check')).toEqual(
      refused('time_in_seconds must be a positive whole number of seconds, for example 30.'),
    )
    expect(await rig.command('/loop delete loop_missing')).toEqual(
      refused('No active loop "loop_missing" in this session; run loop_list (or /loop list) to see its loops.'),
    )
    expect(loopChanges(rig.fake.agent)).toEqual([])
  })

  it('logs command/run and command/done in the session like every command', async () => {
    await rig.command('/loop list')
    const types = rig.fake.agent.session.events.map((event) => event.type)
    expect(types).toEqual(['command/run', 'command/done'])
  })
})

describe('formatList', () => {
  it('pluralises and shows overdue loops', () => {
    const now = NOW + 10_000
    const loops = [
      {
        id: 'loop_a',
        prompt: 'A',
        time_in_seconds: 5,
        next_at: now - 3000,
        state: 'overdue',
        delivery_mode: 'session-local',
      },
      {
        id: 'loop_b',
        prompt: 'B',
        time_in_seconds: 3600,
        next_at: now + 3_600_000,
        state: 'scheduled',
        delivery_mode: 'session-local',
      },
    ] as const
    expect(formatList(loops, now)).toBe(
      '2 active loops:\nloop_a  every 5s  overdue by 3s (2026-11-30T00:00:07.000Z)  A\nloop_b  every 1h  next in 1h (2026-11-30T01:00:10.000Z)  B',
    )
  })
})

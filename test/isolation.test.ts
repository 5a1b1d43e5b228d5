/**
 * Isolation: a sibling session, a fork and a child agent of session A can never
 * list, delete, receive or project A's loops, through the tools, the `/loop`
 * command or the projection; an id copied from A is an input error elsewhere.
 */
import { beforeEach, describe, expect, it } from 'vitest'
import { LOOP_PROJECTION_KEY } from '../src/shared/projection-key.ts'
import {
  advance,
  createFakeAgent,
  createRelatedFakeAgent,
  failureOf,
  listedOf,
  loopChanges,
  outcomeOf,
  persistedLoopChanges,
  resumeFakeAgent,
  runCommand,
  runTool,
  settle,
  useFakeHost,
  type FakeAgent,
} from './support/host.ts'
import { auditDeliveries, recordHeartbeats, type SentHeartbeat } from './support/ledger.ts'

const rig = useFakeHost('ses-owner')
let owner: FakeAgent
let ownerSent: SentHeartbeat[]
let ids: string[]

beforeEach(async () => {
  owner = rig.fake
  ownerSent = recordHeartbeats(owner.send)
  ids = [await rig.create('owner secret one', 1), await rig.create('owner secret two', 3)]
  // Let one dispatch land, so the owner's log (and a fork's seed) holds creates and dispatches.
  await advance(1000)
})

const projected = (agent: FakeAgent) =>
  rig.host.ctx.sessionProjections.snapshot(agent.agent.session).values[LOOP_PROJECTION_KEY]

/** The owner's state, which nothing done elsewhere may change. */
async function ownerSnapshot() {
  return {
    memory: loopChanges(owner.agent),
    durable: await persistedLoopChanges(rig.host, 'ses-owner'),
    projected: projected(owner),
  }
}

/** What every other agent must see and be unable to do. */
async function expectIsolated(other: FakeAgent, relation: 'sibling' | 'fork' | 'child'): Promise<void> {
  await settle()
  const before = await ownerSnapshot()
  const otherChangesBefore = loopChanges(other.agent).length
  if (relation === 'fork') {
    // Its one change of its own, written when it first read its log: A's loops are not the fork's.
    const seedLength = other.agent.session.header.seedLength!
    const own = other.agent.session.events.slice(seedLength).filter((event) => event.type === 'loop/change')
    expect(own.map((event) => event.data)).toEqual([{ version: 1, operation: 'fork', ids }])
  }

  const listed = await runTool(rig.host, other.agent, 'loop_list', {})
  if (relation === 'child') expect(listed.isError).toBe(true)
  else expect(outcomeOf(listed)).toEqual([])
  const listReply = await runCommand(rig.host, other.agent, '/loop list')
  for (const id of ids) expect(listReply.text).not.toContain(id)
  expect(listReply.text).not.toContain('owner secret')

  for (const id of ids) {
    const deleted = await runTool(rig.host, other.agent, 'loop_delete', { id })
    if (relation === 'child') {
      expect(deleted.isError).toBe(true)
    } else {
      expect(failureOf(deleted)).toEqual({
        message: `No active loop "${id}" in this session; run loop_list (or /loop list) to see its loops.`,
        info: { name: 'LoopError', code: 'loop_not_found' },
      })
    }
    const reply = await runCommand(rig.host, other.agent, `/loop delete ${id}`)
    if (relation === 'child') expect(reply.kind).toBe('error')
    else
      expect(reply).toEqual({
        kind: 'error',
        text: `No active loop "${id}" in this session; run loop_list (or /loop list) to see its loops.`,
      })
  }

  expect(projected(other)).toEqual({ loops: [] })
  await advance(6000)
  expect(other.send).not.toHaveBeenCalled()
  expect(loopChanges(other.agent).slice(otherChangesBefore)).toEqual([])

  // The owner lost nothing and kept firing: two loops, on their own grid.
  const after = await ownerSnapshot()
  expect(after.memory.slice(0, before.memory.length)).toEqual(before.memory)
  expect(after.memory.slice(before.memory.length).every((change) => change.operation === 'dispatch')).toBe(true)
  expect(after.durable).toEqual(after.memory)
  expect((after.projected as { loops: { id: string }[] }).loops.map((loop) => loop.id)).toEqual(ids)
  expect(auditDeliveries(after.durable, ownerSent).violations).toEqual([])
  expect(new Set(ownerSent.map((heartbeat) => heartbeat.loopId))).toEqual(new Set(ids))
}

describe("another session cannot reach session A's loops", () => {
  it('a sibling root session', async () => {
    const sibling = await createFakeAgent(rig.host, 'ses-sibling')
    await expectIsolated(sibling, 'sibling')
  })

  it('a fork of A, live and again after it is resumed from disk', async () => {
    await settle()
    const fork = await createRelatedFakeAgent(rig.host, 'ses-fork', 'fork', owner.agent)
    // The fork's log really does begin with A's loop events.
    expect(fork.agent.session.events.filter((event) => event.type === 'loop/change').length).toBeGreaterThanOrEqual(2)
    await expectIsolated(fork, 'fork')
    await fork.handle.dispose()
    const resumed = await resumeFakeAgent(rig.host, 'ses-fork')
    await expectIsolated(resumed, 'fork')
  })

  it('a child agent of A', async () => {
    const child = await createRelatedFakeAgent(rig.host, 'ses-child', 'child', owner.agent)
    expect(rig.host.ctx.agents.roots()).not.toContain(child.agent)
    await expectIsolated(child, 'child')
  })

  it("a sibling's and a fork's own loops stay theirs: A cannot list or delete them", async () => {
    const sibling = await createFakeAgent(rig.host, 'ses-sibling')
    await settle()
    const fork = await createRelatedFakeAgent(rig.host, 'ses-fork', 'fork', owner.agent)
    for (const other of [sibling, fork]) {
      const id = await rig.create('not the owner', 2, other)
      const listed = await runTool(rig.host, owner.agent, 'loop_list', {})
      expect(listedOf(listed, 'id')).toEqual(ids)
      const deleted = await runTool(rig.host, owner.agent, 'loop_delete', { id })
      expect(failureOf(deleted)).toEqual({
        message: expect.any(String),
        info: { name: 'LoopError', code: 'loop_not_found' },
      })
      expect(projected(other)).toEqual({ loops: [expect.objectContaining({ id, prompt: 'not the owner' })] })
    }
    const ownerSends = ownerSent.length
    await advance(2000)
    expect(sibling.send).toHaveBeenCalledTimes(1)
    expect(fork.send).toHaveBeenCalledTimes(1)
    expect(ownerSent.slice(ownerSends).every((heartbeat) => ids.includes(heartbeat.loopId))).toBe(true)
  })
})

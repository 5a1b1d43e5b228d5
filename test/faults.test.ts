/**
 * What a tool call says when the host's flush or append fails, word for word: the cause named,
 * the change standing or not, and "do not repeat the call" once it is live. Whether such calls
 * keep every promise (durable on success, nothing appended when refused, retries, outages) over
 * every interleaving is the simulation's (test/sim/).
 */
import { describe, expect, it, vi } from 'vitest'
import { createsOf, failureMessageOf, failureOf, listedOf, loopChanges, settle, useFakeHost } from './support/host.ts'
import { FLUSH_FAULT_CAUSE, FLUSH_FAULTS, failFlush, failNextLoopAppend, type FlushFault } from './support/faults.ts'

const rig = useFakeHost('ses-faults')

/** How the caller is told each flush fault: the cause, named. */
const PERSISTENCE_FAILURE: Readonly<Record<FlushFault, string>> = {
  false: 'Session persistence did not acknowledge the flush; no persistence is mounted for this session.',
  reject: `Session persistence failed: ${FLUSH_FAULT_CAUSE.reject}`,
  throw: `Session persistence failed: ${FLUSH_FAULT_CAUSE.throw}`,
}

/** The error of a call whose change was not saved. */
const persistenceFailed = (message: string) => ({ message, info: { name: 'LoopError', code: 'persistence_failed' } })

/** The error of a call whose change is live but whose save failed: it names the loop and says not to repeat the call. */
const unsavedChange = (tool: 'loop_create' | 'loop_delete', id: string, fault: FlushFault) =>
  persistenceFailed(
    `${tool} changed ${id} in this session (${id} is ${tool === 'loop_create' ? 'active' : 'deleted'} now, as loop_list shows), but saving the change failed, so it may not survive a restart; do not repeat the call. ${PERSISTENCE_FAILURE[fault]}`,
  )

describe('a flush fails before the fold of a tool call', () => {
  it.each(FLUSH_FAULTS)(
    'flush %s: loop_create and loop_delete are refused with the cause, nothing appended',
    async (fault) => {
      const id = await rig.create('keep me', 5)
      const injection = failFlush(rig.host, fault, { times: 2 })
      const created = await rig.tool('loop_create', { prompt: 'watch CI', time_in_seconds: 10 })
      const deleted = await rig.tool('loop_delete', { id })
      injection.restore()
      expect(failureOf(created)).toEqual(persistenceFailed(PERSISTENCE_FAILURE[fault]))
      expect(failureOf(deleted)).toEqual(persistenceFailed(PERSISTENCE_FAILURE[fault]))
      expect(injection.sessions).toEqual([rig.fake.agent.session, rig.fake.agent.session])
      await settle()
      expect(createsOf(loopChanges(rig.fake.agent)).map((create) => create.loop.id)).toEqual([id])
      expect(loopChanges(rig.fake.agent)).toHaveLength(1)
    },
  )

  it('a flush that fails before the fold wins over the check of the id: an unknown id is refused for the flush', async () => {
    failFlush(rig.host, 'throw')
    const outcome = await rig.tool('loop_delete', { id: 'loop_00000001' })
    expect(failureOf(outcome)).toEqual(persistenceFailed(PERSISTENCE_FAILURE.throw))
    expect(loopChanges(rig.fake.agent)).toEqual([])
  })

  it('a flush rejects with something other than an Error: the call names it', async () => {
    vi.spyOn(rig.host.ctx.sessions, 'flush').mockRejectedValue('EIO')
    const outcome = await rig.tool('loop_create', { prompt: 'p', time_in_seconds: 5 })
    expect(failureOf(outcome)).toEqual(persistenceFailed('Session persistence failed: EIO'))
  })
})

describe('a flush fails after the append of a tool call', () => {
  it.each(FLUSH_FAULTS)(
    'flush %s: the create and the delete stand, and the caller is told so, with the loop id, and that a list shows it',
    async (fault) => {
      // Every flush after the first (before the append) fails, as on a full disk.
      const injection = failFlush(rig.host, fault, { after: 1, times: Number.MAX_SAFE_INTEGER })
      const outcome = await rig.tool('loop_create', { prompt: 'half saved', time_in_seconds: 10 })
      const id = createsOf(loopChanges(rig.fake.agent))[0]!.loop.id
      expect(failureOf(outcome)).toEqual(unsavedChange('loop_create', id, fault))
      // The list the caller is told to run answers from memory, flushing nothing.
      const flushes = injection.calls()
      expect(listedOf(await rig.tool('loop_list', {}), 'id')).toEqual([id])
      expect(injection.calls()).toBe(flushes)
      injection.restore()
      const again = failFlush(rig.host, fault, { after: 1 })
      expect(failureOf(await rig.tool('loop_delete', { id }))).toEqual(unsavedChange('loop_delete', id, fault))
      again.restore()
      expect(listedOf(await rig.tool('loop_list', {}), 'id')).toEqual([])
      expect(loopChanges(rig.fake.agent).at(-1)).toEqual({ version: 1, operation: 'delete', id })
    },
  )
})

it('session.append throws on a create: the call fails with the host error, nothing is appended, the next create works', async () => {
  await settle()
  failNextLoopAppend(rig.fake.agent.session)
  const outcome = await rig.tool('loop_create', { prompt: 'never written', time_in_seconds: 5 })
  expect(failureMessageOf(outcome)).toContain('session log sealed (injected)')
  await settle()
  expect(loopChanges(rig.fake.agent)).toEqual([])
  await rig.create('written', 5)
  expect(loopChanges(rig.fake.agent)).toHaveLength(1)
})

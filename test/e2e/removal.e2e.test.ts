/**
 * Step 6 of the end-to-end plan: uninstall the plugin, open a session that held
 * loops, record what the user gets; add the plugin back and get everything back.
 */
import { createHash } from 'node:crypto'
import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect } from 'vitest'
import {
  call,
  createSession,
  heartbeatsIn,
  history,
  profileManifest,
  prompt,
  reopenSession,
  runCommand,
} from '../../scripts/dsh-stack.ts'
import { heartbeatText } from '../support/heartbeat-xml.ts'
import { PLUGIN, PROFILE, createLoop, events, settle, sleepUntil, test, waitForHeartbeats } from './rig.ts'

/** Digest of every persisted file of one session (the JSONL log and whatever sits beside it). */
function sessionFiles(home: string, sessionId: string): Record<string, string> {
  const root = join(home, 'sessions')
  const files = readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && join(entry.parentPath, entry.name).includes(sessionId))
    .map((entry) => join(entry.parentPath, entry.name))
  return Object.fromEntries(
    files.map((file) => [file.slice(root.length + 1), createHash('sha256').update(readFileSync(file)).digest('hex')]),
  )
}

/** The error a rejected API call carries. */
async function rejection(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
  } catch (error) {
    return (error as Error).message
  }
  throw new Error('the call succeeded')
}

const UNKNOWN_EVENT =
  /session "session-[0-9a-f-]+" contains event type "loop\/change" \(seq \d+\) unknown to this harness and not marked ignorable; refusing to interpret the log/

describe('removing the plugin', () => {
  test('6. without the plugin a session that holds loops does not open; adding it back restores the session and its loops with nothing lost', async ({
    rig,
  }) => {
    const r = await rig()
    const sessionId = await createSession(r.url)
    const a = await createLoop(r.url, sessionId, 1, 'SURVIVES_REMOVAL_A')
    const b = await createLoop(r.url, sessionId, 2, 'SURVIVES_REMOVAL_B')
    await waitForHeartbeats(r.url, sessionId, { [a]: 1, [b]: 1 })
    await settle(r.url, sessionId)
    const stopped = await r.stop('SIGTERM')
    expect(stopped.code).toBe(0)

    // What was persisted, read back by a host with the plugin (a cold read resumes nothing).
    await r.start()
    const before = await history(r.url, sessionId, { maxMessages: 1_000_000 })
    const loopsBefore = (before.projections.loop as { loops: unknown[] }).loops
    expect(loopsBefore).toEqual([
      { id: a, prompt: 'SURVIVES_REMOVAL_A', time_in_seconds: 1, next_at: expect.any(Number) },
      { id: b, prompt: 'SURVIVES_REMOVAL_B', time_in_seconds: 2, next_at: expect.any(Number) },
    ])
    await r.stop('SIGTERM')
    const filesBefore = sessionFiles(r.home, sessionId)
    expect(Object.keys(filesBefore).length).toBeGreaterThan(0)

    // Uninstall exactly as a user does.
    const removed = r.plugin('remove')
    expect(profileManifest(r.home, PROFILE).dependencies?.[PLUGIN]).toBeUndefined()
    expect(profileManifest(r.home, PROFILE).dsh?.profile?.bundles).not.toContain(PLUGIN)

    await r.start()
    // The session is still listed…
    const listedSessions = await call<{ items: { sessionId: string }[] }>(r.url, 'session.list', {})
    expect(listedSessions.items.map((item) => item.sessionId)).toContain(sessionId)
    // …but nothing opens it: its history, a resume, a prompt and a command all fail with the host's format error.
    const seen = {
      history: await rejection(history(r.url, sessionId)),
      reopen: await rejection(reopenSession(r.url, sessionId)),
      prompt: await rejection(prompt(r.url, sessionId, 'hello?')),
      command: await rejection(runCommand(r.url, sessionId, '/loop list')),
    }
    console.log(
      `step 6, without the plugin (dsh plugin remove said: ${JSON.stringify(removed.trim().split('\n').at(-1))}):\n${JSON.stringify(seen, null, 2)}`,
    )
    expect(seen.history).toMatch(
      /^session\.history failed: \{"code":"internal","message":"history unavailable for session \\"session-[0-9a-f-]+\\": SessionFormatUnsupportedError: /,
    )
    for (const message of Object.values(seen)) expect(message.replaceAll('\\"', '"')).toMatch(UNKNOWN_EVENT)
    await r.stop('SIGTERM')
    // The failed attempts changed nothing on disk.
    expect(sessionFiles(r.home, sessionId)).toEqual(filesBefore)

    // Add the plugin back: the session opens, with every event and both loops as they were.
    r.plugin('add')
    await r.start()
    const restored = await history(r.url, sessionId, { maxMessages: 1_000_000 })
    expect(restored.events).toEqual(before.events)
    expect(restored.projections.loop).toEqual(before.projections.loop)
    const reopenedAt = Date.now()
    await reopenSession(r.url, sessionId)
    const listed = await runCommand(r.url, sessionId, '/loop list')
    expect(listed.text?.split('\n').map((line) => [line.split('  ')[0], line.split('  ').at(-1)])).toEqual([
      ['2 active loops:', '2 active loops:'],
      [a, 'SURVIVES_REMOVAL_A'],
      [b, 'SURVIVES_REMOVAL_B'],
    ])
    // And they fire again.
    await sleepUntil(reopenedAt + 2_500)
    const log = await settle(r.url, sessionId)
    expect(log.slice(0, before.events.length)).toEqual(before.events)
    const resumed = heartbeatsIn(log).filter((beat) => beat.time >= reopenedAt)
    expect(
      resumed.filter((beat) => beat.text === heartbeatText(a, 'SURVIVES_REMOVAL_A')).length,
    ).toBeGreaterThanOrEqual(2)
    expect(
      resumed.filter((beat) => beat.text === heartbeatText(b, 'SURVIVES_REMOVAL_B')).length,
    ).toBeGreaterThanOrEqual(1)
    expect((await events(r.url, sessionId)).length).toBeGreaterThan(before.events.length)
  })
})

/**
 * Property-based input tests through the REAL tool runtime (`ctx.tools.execute`)
 * and command runtime (`ctx.commands.execute`): every input creates exactly one
 * valid loop or is refused with a clear message and no event, nothing throws out
 * of a handler, and every heartbeat is well-formed XML that reads back to the
 * stored id and prompt. Set LOOP_FC_SEED to replay a reported failure, LOOP_FC_RUNS_FACTOR to search longer.
 */
import fc from 'fast-check'
import { readHeartbeat } from '../src/shared/heartbeat.ts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  advance,
  loopChanges,
  outcomeOf,
  persistedLoopChanges,
  runTool,
  settle,
  signal,
  startFakeHost,
  stopFakeHost,
  type FakeAgent,
  type Host,
} from './support/host.ts'
import {
  createArguments,
  createLine,
  deleteArguments,
  hostilePrompt,
  listArguments,
  longPrompt,
  otherLine,
  plainPrompt,
} from './support/arbitraries.ts'
import { parseHeartbeat } from './support/heartbeat-xml.ts'
import { expectCreate, isValidStoredPrompt, type CreateExpectation } from './support/input-oracle.ts'

/** Runs per property: enough to meet every generator branch many times, small enough for < 20 s in all. */
const RUNS = { toolArguments: 400, deleteAndList: 300, heartbeat: 150, commandLines: 400 } as const

/** fast-check parameters; its failure report includes the seed and path to replay. */
function parameters(numRuns: number): fc.Parameters<unknown> {
  const seed = process.env.LOOP_FC_SEED
  const factor = Number(process.env.LOOP_FC_RUNS_FACTOR ?? 1)
  return { numRuns: Math.round(numRuns * factor), ...(seed === undefined ? {} : { seed: Number(seed) }) }
}

const SESSION = 'ses-properties'
let host: Host
let fake: FakeAgent

beforeAll(async () => {
  ;({ host, fake } = await startFakeHost(SESSION))
})
afterAll(() => stopFakeHost(host))

/** The failure codes that mean "your input was wrong" rather than "the runtime failed". */
const RUNTIME_CODES = new Set(['persistence_failed', 'agent_unavailable', 'runtime_failed', 'corrupt_loop_log'])

/** A refusal a person can act on: a sentence, not a crash or a placeholder. */
function expectClearRefusal(message: string, code: unknown): void {
  expect(message.trim().length).toBeGreaterThan(10)
  expect(message).not.toMatch(/undefined|\[object Object\]|TypeError|Cannot read/)
  expect(RUNTIME_CODES.has(String(code))).toBe(false)
}

/** The loop/change events appended since `before`. */
const appendedSince = (before: number) => loopChanges(fake.agent).slice(before)

/** Delete every active loop, so a failed run leaves nothing behind and the session never nears its bound. */
async function clearLoops(): Promise<void> {
  const listed = await runTool(host, fake.agent, 'loop_list', {})
  if (listed.isError) throw new Error(`cleanup list failed: ${listed.error.message}`)
  for (const { id } of listed.value as { id: string }[]) {
    const outcome = await runTool(host, fake.agent, 'loop_delete', { id })
    if (outcome.isError) throw new Error(`cleanup of ${id} failed: ${outcome.error.message}`)
  }
}

/** Run one property body, then delete whatever it created even when it failed. */
async function isolated(body: () => Promise<void>): Promise<void> {
  try {
    await body()
  } finally {
    await clearLoops()
  }
}

interface StoredLoop {
  readonly id: string
  readonly prompt: string
  readonly time_in_seconds: number
  readonly next_at: number
}

/** A tool or command that created a loop must have appended exactly one valid create. */
function expectOneCreate(added: unknown[], expectation: CreateExpectation, now: number): StoredLoop {
  expect(added).toHaveLength(1)
  const change = added[0] as { version: number; operation: string; loop: StoredLoop }
  const { loop } = change
  expect(change).toEqual({
    version: 1,
    operation: 'create',
    loop: {
      id: loop.id,
      prompt: loop.prompt,
      time_in_seconds: loop.time_in_seconds,
      next_at: now + loop.time_in_seconds * 1000,
    },
  })
  expect(loop.id).toMatch(/^loop_[0-9a-f]{8}$/)
  expect(isValidStoredPrompt(loop.prompt)).toBe(true)
  expect(Number.isSafeInteger(loop.time_in_seconds) && loop.time_in_seconds >= 1).toBe(true)
  expect(loop.next_at).toBeLessThanOrEqual(8.64e15)
  if (expectation.kind === 'accept') {
    expect(loop.prompt).toBe(expectation.prompt)
    expect(loop.time_in_seconds).toBe(expectation.time_in_seconds)
  }
  return loop
}

describe('loop_create through the real tool runtime', () => {
  it(`accepts exactly the valid arguments and refuses the rest without an event (${RUNS.toolArguments} runs)`, async () => {
    await fc.assert(
      fc.asyncProperty(createArguments, (args) =>
        isolated(async () => {
          const expectation = expectCreate(args)
          const before = loopChanges(fake.agent).length
          const now = Date.now()
          const outcome = await runTool(host, fake.agent, 'loop_create', args)
          const added = appendedSince(before)
          if (outcome.isError) {
            expect(expectation.kind, `refused: ${outcome.error.message}`).not.toBe('accept')
            expect(added).toEqual([])
            expectClearRefusal(outcome.error.message, outcome.error.info?.code)
            return
          }
          expect(expectation.kind, `accepted ${JSON.stringify(outcome.value)}`).not.toBe('refuse')
          const loop = expectOneCreate(added, expectation, now)
          expect(outcome.value).toEqual({ ...loop, state: 'scheduled', delivery_mode: 'session-local' })
        }),
      ),
      parameters(RUNS.toolArguments),
    )
    await settle()
    // Everything the runs appended reached the disk, in order, once.
    expect(await persistedLoopChanges(host, SESSION)).toEqual(loopChanges(fake.agent))
  })
})

describe('loop_delete and loop_list through the real tool runtime', () => {
  it(`refuse every malformed or foreign argument without an event; list answers only {} (${RUNS.deleteAndList} runs)`, async () => {
    const created = await runTool(host, fake.agent, 'loop_create', {
      prompt: 'the one real loop',
      time_in_seconds: 3600,
    })
    if (created.isError) throw new Error(created.error.message)
    const real = created.value as { id: string; prompt: string; time_in_seconds: number; next_at: number }
    const listing = [{ ...real, state: 'scheduled', delivery_mode: 'session-local' }]
    try {
      await fc.assert(
        fc.asyncProperty(deleteArguments, listArguments, async (deleteArgs, listArgs) => {
          const before = loopChanges(fake.agent).length
          const deleted = await runTool(host, fake.agent, 'loop_delete', deleteArgs)
          // No generated argument names the real loop's random id, so every delete is refused.
          expect(deleted.isError, JSON.stringify(deleteArgs)).toBe(true)
          if (deleted.isError) expectClearRefusal(deleted.error.message, deleted.error.info?.code)
          const listed = await runTool(host, fake.agent, 'loop_list', listArgs)
          const isEmptyObject =
            typeof listArgs === 'object' &&
            listArgs !== null &&
            !Array.isArray(listArgs) &&
            Object.keys(listArgs).length === 0
          if (isEmptyObject) expect(outcomeOf(listed)).toEqual(listing)
          else if (listed.isError) expectClearRefusal(listed.error.message, listed.error.info?.code)
          else expect.fail(`loop_list accepted ${JSON.stringify(listArgs)}`)
          expect(appendedSince(before)).toEqual([])
        }),
        parameters(RUNS.deleteAndList),
      )
    } finally {
      await clearLoops()
    }
  })
})

describe('the heartbeat', () => {
  it(`is well-formed XML that reads back to the stored id and prompt (${RUNS.heartbeat} runs)`, async () => {
    const prompts = fc
      .oneof(hostilePrompt, plainPrompt, longPrompt)
      .filter((prompt) => expectCreate({ prompt, time_in_seconds: 1 }).kind !== 'refuse')
    await fc.assert(
      fc.asyncProperty(prompts, (prompt) =>
        isolated(async () => {
          const outcome = await runTool(host, fake.agent, 'loop_create', { prompt, time_in_seconds: 1 })
          if (outcome.isError) {
            expect(expectCreate({ prompt, time_in_seconds: 1 }).kind, outcome.error.message).toBe('either')
            return
          }
          const { id, prompt: stored } = outcome.value as { id: string; prompt: string }
          const sendsBefore = fake.send.mock.calls.length
          await advance(1000, 1000)
          const calls = fake.send.mock.calls.slice(sendsBefore)
          expect(calls).toHaveLength(1)
          const [message, target, wakeup] = calls[0]!
          expect([target, wakeup]).toEqual(['next-turn', true])
          expect(message.content).toHaveLength(1)
          const part = message.content[0] as { type: string; text: string }
          expect(part.type).toBe('text')
          // An XML reader normalizes line ends (XML 1.0 §2.11); the plugin's own reader, the dock's, reads it exactly.
          const xmlLineEnds = stored.replace(/\r\n?/g, '\n')
          expect(parseHeartbeat(part.text)).toEqual({ loopId: id, prompt: xmlLineEnds })
          expect(readHeartbeat(message)).toEqual({ loopId: id, prompt: stored, text: part.text })
        }),
      ),
      parameters(RUNS.heartbeat),
    )
  })
})

describe('/loop through the real command runtime', () => {
  it(`creates exactly one valid loop or replies with an error and no event; never throws (${RUNS.commandLines} runs)`, async () => {
    const lines = fc.oneof(
      createLine,
      otherLine.map((line) => ({ line, digits: undefined, prompt: undefined })),
    )
    await fc.assert(
      fc.asyncProperty(lines, ({ line, digits, prompt }) =>
        isolated(async () => {
          const before = loopChanges(fake.agent).length
          const now = Date.now()
          const execution = await host.ctx.commands.execute(fake.agent, line, [], signal())
          expect(execution).toBeDefined()
          const result = execution!.result
          const added = appendedSince(before)
          // A create-shaped line must do what the tool does with its remainder.
          const expectation: CreateExpectation =
            digits === undefined
              ? { kind: 'either', reason: 'not create-shaped' }
              : expectCreate({
                  prompt: line.slice(line.indexOf(digits) + digits.length),
                  time_in_seconds: Number(digits),
                })
          if (result.kind === 'error') {
            expect(expectation.kind, `refused ${JSON.stringify(line)}: ${result.text}`).not.toBe('accept')
            expect(added).toEqual([])
            expect((result.text ?? '').trim().length).toBeGreaterThan(10)
            expect(result.text).not.toMatch(/undefined|\[object Object\]|TypeError|Cannot read/)
            return
          }
          expect(
            expectation.kind,
            `accepted ${JSON.stringify(line)} (prompt ${JSON.stringify(prompt)}): ${result.text}`,
          ).not.toBe('refuse')
          if (added.length === 0) return // list
          const loop = expectOneCreate(added, expectation, now)
          expect(result.text?.startsWith(`Created ${loop.id}: `)).toBe(true)
        }),
      ),
      parameters(RUNS.commandLines),
    )
  })
})

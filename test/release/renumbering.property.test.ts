/**
 * The upgrade release's renumbering, as a property over generated logs (SPEC.md §13 "Leaving
 * loop"): one real rc.8 turn (recorded from the real agent loop against DSH's mock model) and
 * every other row type that names an event by its seq, replayed through the real session store
 * and JSONL persistence twice, once with `loop/change` rows at random positions and once without,
 * each with a fork at a random boundary. Released, the first reads, through DSH's own reader and
 * DSH's own format-0 migration, exactly as the second.
 */
import * as fsPromises from 'node:fs/promises'
import { join } from 'node:path'
import { KNOWN_SESSION_EVENT_TYPES, SessionId, type Session, type SessionEvent } from '@deepseek-ai/dsh-session'
import fc from 'fast-check'
import { beforeAll, describe, expect, it, vi } from 'vitest'
import { RELEASE_MODES } from '../../src/release/modes.ts'
import { migrateFormat0 } from '../support/format-migration.ts'
import { bootHost, createRealAgent, sendTask, until, useMockModel, type Host } from '../support/host.ts'
import { releasedFile, tallyOf } from '../support/release-home.ts'
import { tempDir } from '../../harness/temp-dir.ts'

/** What one replayed row is: a recorded event, or a row of the script that names earlier ones by index. */
interface Step {
  readonly type: string
  /** The payload, given the seq each earlier step got. */
  readonly data: (seqOf: (step: number) => number, ownSeq: number) => unknown
  /** The surface intent, likewise. */
  readonly surface?: (seqOf: (step: number) => number) => {
    surfaceOp: 'append' | { op: 'replace'; start: number; end: number }
    sourceEventSeqs?: number[]
  }
  readonly time: number
}

/** The replayed session's id, and its fork's: the same in both homes, so their logs compare whole. */
const SESSION = 'session-replayed'
const FORK = 'session-replayed-fork'
/** Both homes' sessions have this project folder. */
const CWD = '/work/project'

/** A recorded event with its surface intent, as the log holds it. */
type RecordedEvent = SessionEvent & {
  readonly surfaceOp?: 'append' | { readonly op: 'replace'; readonly start: number; readonly end: number }
  readonly sourceEventSeqs?: readonly number[]
}

/** The real turn, recorded once: a prompt, a tool call with its result, a streamed answer. */
let recorded: readonly RecordedEvent[] = []

const model = useMockModel()

beforeAll(async () => {
  const host = await model.start({
    sequence: ['tool_call_success', 'success'],
    repeatLast: true,
    successText: 'answered in a few streamed words',
    toolName: 'loop_list',
    toolArguments: '{}',
  })
  const agent = await createRealAgent(host, 'session-recorded')
  sendTask(agent, 'look at the loops')
  await until('the turn to end', () => agent.session.events.some((event) => event.type === 'turn/end'))
  recorded = agent.session.events as readonly RecordedEvent[]
  await model.dispose(host)
})

/** The script: the recorded turn, then one row of every type that names earlier events. */
function script(): Step[] {
  const steps: Step[] = recorded.map((event) => ({
    type: event.type,
    time: event.time,
    data: () => event.data,
    ...(event.surfaceOp === undefined
      ? {}
      : {
          surface: (seqOf: (step: number) => number) => {
            const sources = event.sourceEventSeqs?.map((seq) => seqOf(seq))
            const op = event.surfaceOp!
            return {
              surfaceOp: op === 'append' ? 'append' : { op: 'replace', start: seqOf(op.start), end: seqOf(op.end) },
              ...(sources === undefined ? {} : { sourceEventSeqs: sources }),
            }
          },
        }),
  }))
  const stepOf = (type: string, which: 'first' | 'last' = 'first'): number => {
    const index =
      which === 'first' ? recorded.findIndex((e) => e.type === type) : recorded.findLastIndex((e) => e.type === type)
    if (index === -1) throw new Error(`the recorded turn has no ${type}`)
    return index
  }
  const user = stepOf('user/message')
  const toolResult = stepOf('tool/result')
  const surface = recorded
    .map((event, index) => [event, index] as const)
    .filter(([event]) => event.surfaceOp !== undefined)
  const time = recorded.at(-1)!.time + 1
  steps.push(
    { type: 'command/run', time, data: () => ({ commandId: 'cmd-1', name: 'title', source: { kind: 'user' } }) },
    {
      type: 'command/done',
      time,
      data: (seqOf) => ({ commandId: 'cmd-1', kind: 'success', text: 'done', sourceEventSeq: seqOf(user) }),
    },
    {
      type: 'session/title-llm-request',
      time,
      data: (seqOf) => ({
        titleProvider: 'llm',
        messageSeqs: [seqOf(user)],
        route: { provider: 'deepseek-official', model: 'deepseek-chat' },
        system: 'Title this session.',
        messages: [],
        maxTokens: 32,
      }),
    },
    {
      type: 'session/title',
      time,
      data: (seqOf) => ({ title: 'Loops', messageSeqs: [seqOf(user)], source: { kind: 'provider', provider: 'llm' } }),
    },
    {
      type: 'compaction/prune',
      time,
      data: (seqOf) => ({
        shadowedRange: { start: seqOf(toolResult), end: seqOf(toolResult) },
        shadowedSeqs: [seqOf(toolResult)],
        shadowedTokenCount: 7,
      }),
    },
    {
      type: 'user/message',
      time,
      data: () => ({
        content: [{ type: 'text', text: 'what came before' }],
        source: { kind: 'user' },
        role: 'user',
        id: 'replacement',
      }),
      surface: (seqOf) => ({
        surfaceOp: { op: 'replace', start: seqOf(surface[0]![1]), end: seqOf(surface.at(-1)![1]) },
        sourceEventSeqs: surface.map(([, index]) => seqOf(index)),
      }),
    },
  )
  // "Every event through" the one before it, which may be a removed row.
  steps.push({
    type: 'session-log-deepseek/delivery-accepted',
    time,
    data: (_, ownSeq) => ({ sessionId: SESSION, throughSeq: ownSeq - 1 }),
  })
  return steps
}

/** Where a fork may be made (DSH refuses a boundary inside an open turn): the step counts after which no turn is open. */
function forkPoints(steps: readonly Step[]): number[] {
  const points: number[] = []
  let open = false
  steps.forEach((step, index) => {
    if (!open && index > 0) points.push(index)
    if (step.type === 'turn/start') open = true
    if (step.type === 'turn/end') open = false
  })
  points.push(steps.length)
  return points
}

/** A `loop/change` row to insert: creates and deletes in turn, as a loop's life writes them. */
function loopRow(index: number): unknown {
  const id = `loop_${(0x10000000 + Math.floor(index / 2)).toString(16)}`
  return index % 2 === 0
    ? { version: 1, operation: 'create', loop: { id, prompt: 'check the build', time_in_seconds: 60, next_at: 1 } }
    : { version: 1, operation: 'delete', id }
}

/**
 * Replay the script into a new session, `loopsBefore[i]` loop rows before step i (the last
 * entry: after the last step), and fork it after its first `forkAfter` steps (and the loop rows
 * written with them).
 */
function replay(host: Host, steps: readonly Step[], loopsBefore: readonly number[], forkAfter: number): void {
  const session: Session = host.ctx.sessions.create(SessionId(SESSION), { meta: { cwd: CWD } })
  const seqs: number[] = []
  let loops = 0
  // Rows of any type, their payloads built by the script (the log's own check is DSH's).
  const append = session.append.bind(session) as (type: string, data: unknown, ...surface: unknown[]) => SessionEvent
  const loopRows = (count: number) => {
    for (let n = 0; n < count; n += 1) append('loop/change', loopRow(loops++))
  }
  let forkBoundary = -1
  steps.forEach((step, index) => {
    loopRows(loopsBefore[index] ?? 0)
    // The fork takes everything written so far: the loop rows just written included.
    if (index === forkAfter) forkBoundary = session.events.length - 1
    vi.setSystemTime(step.time)
    const seqOf = (at: number) => seqs[at]!
    const surface = step.surface?.(seqOf)
    const event = (session.append as (...args: unknown[]) => SessionEvent)(
      step.type,
      step.data(seqOf, session.events.length),
      ...(surface === undefined ? [] : [surface]),
    )
    seqs.push(event.seq)
  })
  loopRows(loopsBefore[steps.length] ?? 0)
  if (forkAfter === steps.length) forkBoundary = session.events.length - 1
  host.ctx.sessions.fork(session, forkBoundary, SessionId(FORK))
}

/** What DSH reads of a stored session: its events through its own reader, and its migration to format 1. */
async function readBack(host: Host, id: string) {
  const raw = await host.ctx.sessionPersistence.readRaw(SessionId(id))
  const migrated = migrateFormat0(raw!.content)
  return {
    events: (await host.ctx.sessionPersistence.readFrom(SessionId(id), 0)).events,
    migrated,
  }
}

describe('the upgrade release renumbering', () => {
  it('turns a log with loop rows anywhere into the log written without them, as DSH reads and migrates it', async () => {
    // Known here as the plugins that write them make them known: loop, and DeepSeek's session log.
    for (const type of ['loop/change', 'session-log-deepseek/delivery-accepted'])
      (KNOWN_SESSION_EVENT_TYPES as Set<string>).add(type)
    const steps = script()
    expect(steps.map((step) => step.type)).toEqual(
      expect.arrayContaining(['assistant/chunk', 'tool/result', 'command/done', 'compaction/prune', 'session/title']),
    )
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.nat({ max: 2 }), { minLength: steps.length + 1, maxLength: steps.length + 1 }),
        fc.constantFrom(...forkPoints(steps)),
        async (loopsBefore, forkAfter) => {
          const withLoops = join(tempDir('loop-renumber-'), 'sessions')
          const without = join(tempDir('loop-renumber-'), 'sessions')
          const homes: [string, readonly number[]][] = [
            [withLoops, loopsBefore],
            [without, []],
          ]
          for (const [root, loops] of homes) {
            vi.useFakeTimers({ toFake: ['Date'], now: steps[0]!.time })
            const writer = await bootHost({ root, loop: false })
            try {
              replay(writer, steps, loops, forkAfter)
            } finally {
              await writer.dispose()
              vi.useRealTimers()
            }
          }
          const released = await bootHost({ root: withLoops, loop: false })
          const written = await bootHost({ root: without, loop: false })
          try {
            for (const id of [SESSION, FORK]) {
              const raw = await released.ctx.sessionPersistence.readRaw(SessionId(id))
              const log = join(withLoops, (await fsPromises.readdir(withLoops))[0]!, id, 'session.jsonl.zstd')
              const outcome = await releasedFile(log, {
                mode: RELEASE_MODES.upgrade,
                fs: fsPromises,
                write: {},
              })
              // As written, DSH's migration refuses exactly the logs that held loop rows.
              if (tallyOf(outcome).loopRows > 0) {
                expect(outcome.status).toBe('released')
                expect(() => migrateFormat0(raw!.content)).toThrow(/unknown historical event type "loop\/change"/)
              } else {
                expect(outcome.status).toBe('no-loops')
                expect(() => migrateFormat0(raw!.content)).not.toThrow()
              }
              expect(await readBack(released, id)).toEqual(await readBack(written, id))
            }
          } finally {
            await released.dispose()
            await written.dispose()
          }
        },
      ),
      { numRuns: 25 },
    )
  })
})

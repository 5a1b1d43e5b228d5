/**
 * The main job: a real DeepSeek Harness with `loop` installed, ready to use.
 *
 *   pnpm run demo [-- --port N]     pack, install into .dsh/, start the model and `dsh web`; Ctrl+C stops all
 *   pnpm run demo -- --scenario     the same stack, then a scripted terminal scenario that exits 0 on PASS
 *
 * Without DEEPSEEK_API_KEY the model is the published mock server on loopback,
 * answering every request with one short line; with it, the real DeepSeek provider.
 */
import { startMockLlmServer, type MockLlmServer } from '@deepseek-ai/dsh-llm-mock-server'
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { basename, dirname, join, relative } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import {
  PROJECT,
  call,
  createSession,
  dshPlugin,
  heartbeatsIn,
  history,
  messageText,
  mockEndpoint,
  packPlugin,
  prepareHome,
  profileManifest,
  runCommand,
  startWeb,
  turnsSettled,
  type DshWeb,
  type HistoryEvent,
  type ModelEndpoint,
} from '../harness/dsh-stack.ts'

const PLUGIN = 'dsh-plugin-loop'
const PROFILE = 'web'
/** The isolated DSH_HOME, inside the project and git-ignored; reused across runs. */
const HOME = join(PROJECT, '.dsh')
/** The folder the demo registers as a DSH workspace: sessions start there, so a real model's tools stay out of the project. */
const WORKSPACE = join(HOME, 'loop-demo')
/** What the embedded model answers to every request. */
const REPLY = 'Heartbeat received: nothing new to report.'
/** The scenario's loop. */
const SCENARIO_SECONDS = 2
const SCENARIO_PROMPT = 'Check whether the build is still healthy'
const SCENARIO_HEARTBEATS = 3

interface Options {
  readonly scenario: boolean
  readonly port: number
}

function parseArgs(argv: readonly string[]): Options {
  let scenario = false
  let port = Number(process.env.LOOP_DEMO_PORT ?? 0)
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i]!
    if (arg === '--') continue
    if (arg === '--scenario') scenario = true
    else if (arg === '--port') port = Number(argv[++i])
    else if (arg.startsWith('--port=')) port = Number(arg.slice('--port='.length))
    else {
      console.error(`unknown argument ${arg}\nusage: pnpm run demo [-- --port N] [--scenario]`)
      process.exit(2)
    }
  }
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`invalid port ${port}`)
    process.exit(2)
  }
  return { scenario, port }
}

const options = parseArgs(process.argv.slice(2))
const started = Date.now()
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`

// Everything started here, stopped in reverse order exactly once.
let web: DshWeb | undefined
let booting: Promise<DshWeb> | undefined
let mock: MockLlmServer | undefined
let stopping: Promise<void> | undefined
function stopAll(): Promise<void> {
  stopping ??= (async () => {
    // A signal during boot: let the boot finish (or fail), then stop that process gracefully.
    const running = web ?? (await booting?.catch(() => undefined))
    await running?.stop('SIGTERM')
    await mock?.close()
  })()
  return stopping
}
async function fail(message: string): Promise<never> {
  console.error(`\nFAIL: ${message}`)
  if (web !== undefined) console.error(`\n--- dsh output ---\n${web.output()}--- end of dsh output ---`)
  await stopAll()
  process.exit(1)
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    // pnpm forwards the signal it got too, so one Ctrl+C can arrive twice.
    if (stopping === undefined) console.log(`\n${signal}: stopping DSH and the model…`)
    void stopAll().then(() => process.exit(0))
  })
}

try {
  await main()
} catch (error) {
  await fail(error instanceof Error ? (error.stack ?? error.message) : String(error))
}

async function main(): Promise<void> {
  const version = (JSON.parse(readFileSync(join(PROJECT, 'package.json'), 'utf8')) as { version: string }).version
  const dshVersion = (
    JSON.parse(readFileSync(join(PROJECT, 'node_modules', '@deepseek-ai', 'dsh', 'package.json'), 'utf8')) as {
      version: string
    }
  ).version

  let step = Date.now()
  const tarball = packPlugin(join(HOME, 'packs'))
  console.log(`packed ${relative(PROJECT, tarball)} (${seconds(Date.now() - step)})`)

  step = Date.now()
  prepareHome(HOME)
  if (installedIn(HOME)) dshPlugin(HOME, PROFILE, 'remove', PLUGIN)
  dshPlugin(HOME, PROFILE, 'add', tarball)
  // The profile now points at the new tarball; older packs are no longer referenced.
  for (const entry of readdirSync(join(HOME, 'packs'))) {
    if (entry !== basename(dirname(tarball))) rmSync(join(HOME, 'packs', entry), { recursive: true, force: true })
  }
  console.log(
    `installed with: dsh plugin --profile ${PROFILE} add ${relative(PROJECT, tarball)}  (DSH_HOME=${relative(PROJECT, HOME)}/, ${seconds(Date.now() - step)})`,
  )

  let model: ModelEndpoint
  let modelLine: string
  const apiKey = process.env.DEEPSEEK_API_KEY
  if (apiKey !== undefined && apiKey !== '') {
    model = { apiKey }
    modelLine = 'DeepSeek (DEEPSEEK_API_KEY is set): heartbeats start real model turns and cost tokens'
  } else {
    mock = await startMockLlmServer({
      host: '127.0.0.1',
      port: 0,
      sequence: ['success'],
      repeatLast: true,
      successText: REPLY,
    })
    model = mockEndpoint(mock)
    modelLine = `embedded scripted model on ${mock.baseURL}/v1, answers every turn with "${REPLY}" (set DEEPSEEK_API_KEY for the real provider)`
  }

  step = Date.now()
  booting = startWeb({ home: HOME, model, port: options.port })
  web = await booting
  if (stopping !== undefined) return
  const bootMs = Date.now() - step
  const running = web
  running.child.once('exit', (code, signal) => {
    if (stopping !== undefined) return
    // Ctrl+C reaches the whole foreground process group, so dsh may see SIGINT (exit 130) before this process does.
    if (code === 130 || signal === 'SIGINT') void stopAll().then(() => process.exit(0))
    else void fail(`dsh web exited on its own (code ${code}, signal ${signal})`)
  })
  console.log(
    `dsh web ${dshVersion} with ${PLUGIN} ${version} is up (boot ${seconds(bootMs)}, ${seconds(Date.now() - started)} in all)`,
  )
  console.log(`model: ${modelLine}`)
  mkdirSync(WORKSPACE, { recursive: true })
  await call(running.url, 'workspace.create', { path: WORKSPACE })

  if (options.scenario) {
    await scenario(running.url)
    await stopAll()
    process.exit(0)
  }

  console.log(`
  Open ${running.url}

  The composer on the start page opens a session in the "${basename(WORKSPACE)}" workspace
  (${relative(PROJECT, WORKSPACE)}/). Type there:

    /loop 5 Check whether the build is still healthy
        every 5 s a <heartbeat> arrives (a "↻ Loop heartbeat" row in the conversation)
        and the agent answers it as a turn; the dock above the composer counts down
    /loop list
        id, interval, next due and prompt of each loop in this session
    /loop delete <id>
        stop one loop (the id from /loop list, e.g. loop_1a2b3c4d); or use the dock's Delete button

  Ctrl+C stops DSH and the model.`)
  // Stay up until a signal arrives (the handlers exit) or dsh exits on its own.
  await new Promise<never>(() => setInterval(() => {}, 1 << 30))
}

/** True when the profile already lists the plugin (a previous run), so this run replaces it. */
function installedIn(home: string): boolean {
  if (!existsSync(join(home, 'profiles', PROFILE, 'package.json'))) return false
  return profileManifest(home, PROFILE).dependencies?.[PLUGIN] !== undefined
}

/**
 * The terminal scenario: a 2-second loop answered as turns, list, delete,
 * then three quiet intervals. Throws on any deviation.
 */
async function scenario(url: string): Promise<void> {
  let t0 = Date.now()
  const stamp = (time: number) => `[+${((time - t0) / 1000).toFixed(1).padStart(5)} s]`
  const events = async () => (await history(url, sessionId, { maxMessages: 100_000 })).events
  const command = async (line: string) => {
    console.log(`\n> ${line}`)
    const reply = await runCommand(url, sessionId, line)
    console.log(reply.text?.replace(/^/gm, '  ') ?? '')
    if (reply.kind !== 'success') throw new Error(`${line} answered ${reply.kind}: ${reply.text}`)
    return reply.text ?? ''
  }

  const sessionId = await createSession(url, WORKSPACE)
  console.log(`\nscenario: session ${sessionId}`)
  const created = await command(`/loop ${SCENARIO_SECONDS} ${SCENARIO_PROMPT}`)
  t0 = Date.now()
  const loopId = /^Created (loop_[0-9a-f]{8}):/.exec(created)?.[1]
  if (loopId === undefined) throw new Error(`unexpected reply to /loop: ${created}`)

  // Print heartbeats and replies as they land in the session history.
  console.log(`\nwaiting for ${SCENARIO_HEARTBEATS} heartbeats, each answered by the agent as a turn:`)
  const printed = new Set<number>()
  const show = (log: readonly HistoryEvent[]) => {
    for (const event of log) {
      if (printed.has(event.seq)) continue
      const heartbeat = heartbeatsIn([event])[0]
      if (heartbeat !== undefined) {
        printed.add(event.seq)
        console.log(
          `${stamp(event.time)} heartbeat (user message from plugin loop):\n${heartbeat.text.replace(/^/gm, '             ')}`,
        )
      } else if (event.type === 'assistant/message' && printed.size > 0) {
        printed.add(event.seq)
        const calls = (
          (event.data as { message: { content: { type: string; name?: string }[] } }).message.content ?? []
        )
          .filter((part) => part.type === 'tool-call')
          .map((part) => `[calls ${part.name}]`)
        const turn = (event.data as { turn?: number }).turn
        console.log(
          `${stamp(event.time)} assistant (turn ${turn}): ${[messageText(event), ...calls].filter((text) => text !== '').join(' ')}`,
        )
      }
    }
  }
  const deadline = Date.now() + 60_000
  for (;;) {
    const log = await events()
    show(log)
    const beats = heartbeatsIn(log).filter((beat) => beat.loopId === loopId)
    const last = beats.at(SCENARIO_HEARTBEATS - 1)
    if (
      last !== undefined &&
      log.some((event) => event.type === 'assistant/message' && event.seq > last.seq) &&
      turnsSettled(log)
    )
      break
    if (Date.now() > deadline)
      throw new Error(`no ${SCENARIO_HEARTBEATS} answered heartbeats within 60 s (saw ${beats.length})`)
    await sleep(100)
  }

  const listed = await command('/loop list')
  if (!listed.includes(loopId) || !listed.includes(SCENARIO_PROMPT))
    throw new Error(`/loop list does not show ${loopId}`)
  const deleted = await command(`/loop delete ${loopId}`)
  if (deleted !== `Deleted ${loopId}.`) throw new Error(`unexpected reply to /loop delete: ${deleted}`)

  // A heartbeat sent just before the delete may still be in a turn: let it finish, then watch.
  const settle = Date.now() + 60_000
  let baseline = await events()
  while (!turnsSettled(baseline)) {
    if (Date.now() > settle) throw new Error('the last turn did not finish within 60 s')
    await sleep(100)
    baseline = await events()
  }
  show(baseline)
  const before = heartbeatsIn(baseline).length
  const watchMs = 3 * SCENARIO_SECONDS * 1000 + 500
  console.log(`\nwatching ${seconds(watchMs)} (3 intervals of ${SCENARIO_SECONDS} s) for anything else to arrive…`)
  await sleep(watchMs)
  const after = await events()
  show(after)
  const late = heartbeatsIn(after).length - before
  const dispatches = after.filter((event) => event.type === 'loop/change' && event.seq > baseline.at(-1)!.seq)
  if (late !== 0 || dispatches.length !== 0) throw new Error(`${late} heartbeat(s) arrived after /loop delete`)
  console.log('  nothing arrived.')
  await command('/loop list')

  const answered = heartbeatsIn(after).length
  console.log(
    `\nPASS: ${answered} heartbeats from ${loopId} answered as turns, listed, deleted, ` +
      `then nothing in ${seconds(watchMs)}; ${seconds(Date.now() - started)} in all`,
  )
}

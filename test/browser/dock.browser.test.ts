/**
 * The loop dock in a real DSH web with real Chromium: the packed plugin is
 * installed with `dsh plugin add` into an isolated DSH_HOME, `dsh web` runs on
 * loopback against the scripted mock model, loops are created with `/loop`
 * through the host's command API, and Debian's Chromium (playwright-core)
 * checks what a person sees: the dock in Chinese from `locale.preference: zh`
 * in settings.yaml and in English after a live switch (an external edit of
 * settings.yaml, which DSH hot-publishes), 0 → nothing, 1 and 2 rows, the
 * summary at 3, expand/Escape/outside click, delete with confirmation, one
 * `/loop delete` however fast Confirm is clicked, heartbeats as loop rows in
 * the conversation, light and dark themes, a model-made `loop_create` call as
 * `Create loop · every 5m · …` in both languages, the plugin's card in
 * Settings → Plugins → Plugin configuration (both languages, validation, Save
 * into settings.yaml, the new bound enforced live), and how the Plugin list
 * shows the plugin; no console errors. Screenshots go to
 * artifacts/screenshots/; the ones in docs/ are written when missing or with
 * UPDATE_DOCS_SCREENSHOTS=1.
 *
 * Run: `pnpm run test:browser` (installs Chromium and fonts-noto-cjk when missing).
 */
import { startMockLlmServer, type MockLlmServer } from '@deepseek-ai/dsh-llm-mock-server'
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { chromium, type Browser, type Page } from 'playwright-core'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import {
  PROJECT,
  call,
  createSession,
  dshPlugin,
  heartbeatsIn,
  history,
  mockEndpoint,
  packPlugin,
  prepareHome,
  prompt,
  runCommand,
  startWeb,
  turnsSettled,
  waitFor,
  type DshWeb,
  type HistoryEvent,
} from '../../harness/dsh-stack.ts'
import { tempDir } from '../../harness/temp-dir.ts'

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium'
const CHROMIUM_FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]
const SHOTS = join(PROJECT, 'artifacts', 'screenshots')
const DOCS = join(PROJECT, 'docs')
const SESSION_PROMPT = 'Loop dock browser test'
const LOOPS = [
  { seconds: 300, interval: 'every 5m', prompt: 'Check whether the build is still healthy' },
  { seconds: 90, interval: 'every 1m 30s', prompt: 'Summarize any new failures in the nightly run' },
  {
    seconds: 3_600,
    interval: 'every 1h',
    prompt:
      'Look at the open pull requests, list the ones that have waited on review for more than a day, and remind their authors about every question they have not answered yet',
  },
] as const

const HEARTBEAT_PROMPT = 'Say one word about the weather'
/** The forked session's parent: its first prompt, its loop, and the cwd both live in. */
const FORK_PARENT_PROMPT = 'Fork parent prompt'
const FORK_LOOP_PROMPT = 'check the parent build'
const FORK_CWD = 'forked-workspace'
/** The session whose first turn the mock model answers with a `loop_create` call. */
const MODEL_SESSION_PROMPT = 'Watch the CI for me'
const MODEL_LOOP = { time_in_seconds: 300, prompt: 'Check whether CI is green' } as const
/** Project instructions in the workspace: DSH injects them as a context row that is not a heartbeat. */
const AGENTS_MD = 'Answer in one short sentence.\n'

/** Copy screenshots that illustrate the docs into docs/: the missing ones, or all with UPDATE_DOCS_SCREENSHOTS=1. */
function publishScreenshots(pairs: readonly (readonly [shot: string, doc: string])[]): void {
  mkdirSync(DOCS, { recursive: true })
  for (const [shot, doc] of pairs) {
    if (process.env.UPDATE_DOCS_SCREENSHOTS === '1' || !existsSync(join(DOCS, doc)))
      copyFileSync(join(SHOTS, shot), join(DOCS, doc))
  }
}

/** Wall-clock phases, printed at the end, so a run shows how long each part of this test takes. */
const timings: [string, number][] = []
const suiteStarted = performance.now()
async function phase<T>(name: string, work: () => Promise<T> | T): Promise<T> {
  const started = performance.now()
  try {
    return await work()
  } finally {
    timings.push([name, performance.now() - started])
  }
}

let scratch: string | undefined
let mock: MockLlmServer | undefined
let web: DshWeb | undefined
let browser: Browser | undefined
let page!: Page
let sessionId: string
let modelSessionId: string
let workspace: string
let settingsFile: string
let home: string
let failed = false
const consoleErrors: string[] = []

beforeAll(async () => {
  try {
    scratch = tempDir('loop-browser-')
    mkdirSync(SHOTS, { recursive: true })
    home = prepareHome(join(scratch, 'home'))
    settingsFile = join(home, 'settings.yaml')
    // The user works in Chinese: DSH's UI, and the dock, open in zh.
    setLanguagePreference('zh')
    workspace = join(scratch, 'workspace')
    mkdirSync(workspace)
    writeFileSync(join(workspace, 'AGENTS.md'), AGENTS_MD)
    const tarball = await phase('build + pnpm pack', () => packPlugin(join(scratch!, 'packs')))
    await phase('dsh plugin --profile web add', () => dshPlugin(home, 'web', 'add', tarball))
    // The first model request answers with a loop_create call (the model-made loop), every later one with text.
    mock = await startMockLlmServer({
      host: '127.0.0.1',
      port: 0,
      sequence: ['tool_call_success', 'success'],
      repeatLast: true,
      successText: 'Noted.',
      toolName: 'loop_create',
      toolArguments: JSON.stringify(MODEL_LOOP),
    })
    web = await phase('dsh web boot (HTTP 200)', () => startWeb({ home, model: mockEndpoint(mock!), cwd: workspace }))
    const url = web.url
    // A session without a user message is hidden from the sidebar: give each one turn, one after the other.
    modelSessionId = await phase('model-made loop session', () => sessionWithOneTurn(url, MODEL_SESSION_PROMPT))
    sessionId = await phase('session + first turn', () => sessionWithOneTurn(url, SESSION_PROMPT))
    browser = await phase('chromium launch', () =>
      chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS }),
    )
    page = await newPage()
    await phase('page ready + session opened', () => openSession(url))
  } catch (error) {
    failed = true
    await page?.screenshot({ path: join(SHOTS, 'failure-setup.png') }).catch(() => undefined)
    throw error
  }
})

beforeEach(({ onTestFailed }) => {
  onTestFailed(async ({ task }) => {
    failed = true
    await page
      ?.screenshot({ path: join(SHOTS, `failure-${task.name.replace(/\W+/g, '-')}.png`) })
      .catch(() => undefined)
  })
})

afterAll(async () => {
  // Stop everything this file started, whatever happened above.
  await browser?.close().catch(() => undefined)
  await web?.stop().catch(() => undefined)
  await mock?.close().catch(() => undefined)
  if (failed && web !== undefined)
    console.error(`---- dsh web output ----\n${web.output()}\n---- end of dsh web output ----`)
  if (failed && consoleErrors.length > 0) console.error(`browser console errors:\n${consoleErrors.join('\n')}`)
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true })
  timings.push(['whole browser test file', performance.now() - suiteStarted])
  const table = timings.map(([name, ms]) => `  ${name.padEnd(32)} ${(ms / 1000).toFixed(1).padStart(6)} s`).join('\n')
  console.log(`browser test timings:\n${table}`)
  writeFileSync(
    join(PROJECT, 'artifacts', 'browser-test-timings.json'),
    `${JSON.stringify(Object.fromEntries(timings.map(([name, ms]) => [name, Math.round(ms)])), null, 2)}\n`,
  )
})

/** A page in a fresh browser context whose console errors are collected. */
async function newPage(): Promise<Page> {
  const context = await browser!.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' })
  const fresh = await context.newPage()
  fresh.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text())
  })
  fresh.on('pageerror', (error) => consoleErrors.push(`pageerror: ${error.message}`))
  return fresh
}

/** Create a session and run its first turn to the end. */
async function sessionWithOneTurn(url: string, text: string): Promise<string> {
  const id = await createSession(url, workspace)
  await prompt(url, id, text)
  await waitFor(`the first turn of "${text}" to end`, async () => {
    const { events } = await history(url, id)
    return events.some((event) => event.type === 'turn/end') && turnsSettled(events) ? true : undefined
  })
  return id
}

/**
 * Open the app and select the session in the sidebar (the app has no URL
 * routing). Sessions outside a registered workspace sit under "Ungrouped",
 * which may render collapsed and after the tree itself: poll until the
 * session's item shows, expanding "Ungrouped" whenever it is collapsed.
 */
async function openSession(url: string): Promise<void> {
  await page.goto(url)
  await selectSession(SESSION_PROMPT)
}

/** Select a session in the sidebar by its title (its first prompt). */
async function selectSession(title: string): Promise<void> {
  const tree = page.getByRole('tree', { name: /^(Sessions|会话)$/ })
  await tree.waitFor({ timeout: 20_000 })
  const session = tree.getByRole('treeitem', { name: new RegExp(title) }).first()
  const ungrouped = tree.getByRole('treeitem', { name: /Ungrouped|未分组/ }).first()
  const deadline = Date.now() + 20_000
  while (!(await session.isVisible())) {
    if (Date.now() > deadline)
      throw new Error(
        `session not in the sidebar; tree items: ${JSON.stringify(await tree.getByRole('treeitem').allInnerTexts())}`,
      )
    if ((await ungrouped.isVisible()) && (await ungrouped.getAttribute('aria-expanded')) === 'false')
      await ungrouped.click()
    await page.waitForTimeout(100)
  }
  await session.click()
  await page.locator('[data-composer-seat]').waitFor({ timeout: 20_000 })
}

const dock = () => page.locator('[data-loop-dock]')
const rows = () => page.locator('[data-loop-dock] [data-loop-row]')
const toggle = () => page.locator('[data-loop-dock] [data-loop-summary] button')

/**
 * Set `locale.preference` in the DSH home's settings.yaml, as a user editing it
 * does. Before boot it is the starting language; while DSH runs, the settings
 * provider hot-publishes the edit and the page switches without a reload.
 */
function setLanguagePreference(language: 'zh' | 'en'): void {
  const text = readFileSync(settingsFile, 'utf8')
  const section = /^locale:\n {2}preference: \w+$/m
  writeFileSync(
    settingsFile,
    section.test(text)
      ? text.replace(section, `locale:\n  preference: ${language}`)
      : `${text.trimEnd()}\nlocale:\n  preference: ${language}\n`,
  )
}

/** Switch the language live and wait until the page has followed. */
async function switchLanguage(language: 'zh' | 'en'): Promise<void> {
  setLanguagePreference(language)
  await page.waitForFunction((lang) => document.documentElement.lang === lang, language === 'zh' ? 'zh-CN' : 'en', {
    timeout: 10_000,
  })
}

/** How many times the host ran `/loop delete <id>` in this session. */
async function deleteRuns(id: string): Promise<number> {
  const { events } = await history(web!.url, sessionId, { maxMessages: 500 })
  return events.filter((event: HistoryEvent) => {
    const data = event.data as { name?: string; args?: string }
    return event.type === 'command/run' && data.name === 'loop' && data.args?.trim() === `delete ${id}`
  }).length
}

/** Create one loop through the host command API, as the composer's `/loop` would. */
async function createLoop(index: number): Promise<void> {
  const { seconds, prompt: text } = LOOPS[index]!
  const reply = await runCommand(web!.url, sessionId, `/loop ${seconds} ${text}`)
  expect(reply.kind, reply.text).toBe('success')
}

/** Ids of the session's active loops, from the projection the dock reads. */
async function loopIds(): Promise<string[]> {
  const { projections } = await history(web!.url, sessionId)
  return ((projections.loop as { loops?: { id: string }[] } | undefined)?.loops ?? []).map((loop) => loop.id)
}

/** Ids of another session's active loops. */
async function loopIdsOf(id: string): Promise<string[]> {
  const { projections } = await history(web!.url, id)
  return ((projections.loop as { loops?: { id: string }[] } | undefined)?.loops ?? []).map((loop) => loop.id)
}

/** Screenshot a conversation row with a little of the conversation around it. */
async function shootConversationRow(row: ReturnType<Page['locator']>, name: string): Promise<void> {
  await row.scrollIntoViewIfNeeded()
  await page.mouse.move(1_270, 10)
  const box = (await row.boundingBox())!
  const chat = (await page.locator('[data-composer-seat]').boundingBox())!
  await page.screenshot({
    path: join(SHOTS, `${name}.png`),
    clip: { x: chat.x, y: Math.max(0, box.y - 60), width: chat.width, height: box.height + 110 },
  })
}

/** Screenshot the settings card (the open card with a margin). */
async function shootSettingsCard(card: ReturnType<Page['locator']>, name: string): Promise<void> {
  await card.scrollIntoViewIfNeeded()
  await page.mouse.move(1_270, 790)
  const box = (await card.boundingBox())!
  await page.screenshot({
    path: join(SHOTS, `${name}.png`),
    clip: { x: box.x - 12, y: box.y - 12, width: box.width + 24, height: box.height + 24 },
  })
}

/** Switch DSH's theme the way a person's system setting does, and wait for the palette. */
async function setTheme(scheme: 'light' | 'dark'): Promise<void> {
  await page.emulateMedia({ colorScheme: scheme })
  await page.waitForFunction((dark) => document.body.hasAttribute('data-ds-dark-theme') === dark, scheme === 'dark', {
    timeout: 5_000,
  })
}

/** Screenshot the composer area (conversation tail, docks, composer) in light and dark. */
async function shoot(name: string): Promise<void> {
  // Park the pointer off the dock so no button shows a hover state.
  await page.mouse.move(1_270, 10)
  for (const scheme of ['light', 'dark'] as const) {
    await setTheme(scheme)
    const seat = (await page.locator('[data-composer-seat]').boundingBox())!
    const top = Math.max(0, seat.y - 56)
    await page.screenshot({
      path: join(SHOTS, `${name}-${scheme}.png`),
      clip: { x: seat.x, y: top, width: seat.width, height: Math.min(800 - top, seat.y + seat.height + 16 - top) },
    })
  }
  await setTheme('light')
}

/** The visible text of each row's cells: interval, countdown, prompt. */
async function rowCells(): Promise<string[][]> {
  return rows().evaluateAll((items) =>
    items.map((item) => [...item.children].slice(0, 3).map((child) => child.textContent ?? '')),
  )
}

describe('loop dock in dsh web (Chromium)', () => {
  it('renders nothing while the session has no loops', async () => {
    await expect.poll(() => loopIds()).toEqual([])
    expect(await dock().count()).toBe(0)
    // The plugin's bundle did load: its style is in the page.
    expect(await page.locator('style[data-plugin-css="dsh-plugin-loop/LoopsView.module.css"]').count()).toBe(1)
    await shoot('0-no-loops')
  })

  it('speaks Chinese with locale.preference: zh in settings.yaml', async () => {
    expect(await page.evaluate(() => document.documentElement.lang)).toBe('zh-CN')
    for (const index of [0, 1, 2]) await createLoop(index)
    await toggle().waitFor()
    const summary = (await page.locator('[data-loop-summary] > span').first().textContent())!
    expect(summary).toMatch(/^↻ 3 个活动循环 · 1分钟(2\d|30)秒后触发$/)
    expect(await toggle().textContent()).toBe('展开 ▾')
    await toggle().click()
    await expect.poll(() => rows().count()).toBe(3)
    expect(await toggle().textContent()).toBe('收起 ▴')
    expect(await dock().locator('ul').getAttribute('aria-label')).toBe('活动循环')
    const cells = await rowCells()
    expect(cells.map(([interval, , text]) => [interval, text])).toEqual([
      ['↻ 每5分钟', LOOPS[0].prompt],
      ['↻ 每1分钟30秒', LOOPS[1].prompt],
      ['↻ 每1小时', LOOPS[2].prompt],
    ])
    expect(cells[0]![1]).toMatch(/^(4分钟\d{1,2}秒|5分钟)后触发$/)
    expect(await dock().getByRole('button', { name: '删除' }).count()).toBe(3)
    const target = rows().filter({ hasText: LOOPS[1].prompt })
    await target.getByRole('button', { name: '删除' }).click()
    expect(await target.getByRole('status').textContent()).toBe('删除此循环？')
    expect(await target.getByRole('button').allTextContents()).toEqual(['确认', '取消'])
    // Apart from the prompts (the user's own words), not one Latin letter is left, visible or accessible.
    const words = await dock().evaluate(
      (root, prompts) => {
        const labels = [...root.querySelectorAll('[aria-label]')].map((element) => element.getAttribute('aria-label'))
        return prompts.reduce((text, prompt) => text.replace(prompt, ''), [root.textContent ?? '', ...labels].join(' '))
      },
      LOOPS.map((loop) => loop.prompt),
    )
    expect(words).not.toMatch(/[A-Za-z]/)
    await shoot('zh-delete-confirmation')
    await target.getByRole('button', { name: '取消' }).click()
    expect(await target.getByRole('button').allTextContents()).toEqual(['删除'])
  })

  it('follows a live language switch to English without a reload or a remount', async () => {
    const probe = () =>
      page.evaluate(
        () => (window as unknown as { loopProbe?: Element }).loopProbe === document.querySelector('[data-loop-dock]'),
      )
    await page.evaluate(
      () =>
        void ((window as unknown as { loopProbe?: Element | null }).loopProbe =
          document.querySelector('[data-loop-dock]')),
    )
    await switchLanguage('en')
    await expect.poll(() => toggle().textContent()).toBe('Collapse ▴')
    // Same page, same dock element, still expanded: the dock re-rendered in place.
    expect(await probe()).toBe(true)
    expect((await rowCells()).map(([interval]) => interval)).toEqual(['↻ every 5m', '↻ every 1m 30s', '↻ every 1h'])
    expect(await dock().locator('ul').getAttribute('aria-label')).toBe('Active loops')
    expect(await dock().getByRole('button', { name: 'Delete' }).count()).toBe(3)
    // Back to no loops but the first, for the English walk-through.
    const ids = await loopIds()
    for (const id of ids.slice(1))
      expect((await runCommand(web!.url, sessionId, `/loop delete ${id}`)).kind).toBe('success')
    await expect.poll(() => rows().count()).toBe(1)
  })

  it('shows one row for one loop, with interval, countdown, prompt and Delete only', async () => {
    await rows().first().waitFor()
    expect(await rows().count()).toBe(1)
    const [[interval, due, text]] = (await rowCells()) as [string[]]
    expect(interval).toBe('↻ every 5m')
    expect(due).toMatch(/^next in (4m \d{1,2}s|5m)$/)
    expect(text).toBe(LOOPS[0].prompt)
    const dockText = (await dock().textContent())!
    expect(dockText).not.toMatch(/loop_[0-9a-f]|session/i)
    expect(dockText).not.toContain(sessionId)
    expect(await dock().getByRole('button').allTextContents()).toEqual(['Delete'])
    // It sits in the composer stack above the composer.
    expect(await page.locator('[data-composer-seat] [data-loop-dock]').count()).toBe(1)
    // The countdown repaints once a second.
    const before = (await rowCells())[0]![1]
    await expect.poll(async () => (await rowCells())[0]![1], { timeout: 3_000 }).not.toBe(before)
    await shoot('1-one-loop')
  })

  it('shows two rows for two loops', async () => {
    await createLoop(1)
    await expect.poll(() => rows().count()).toBe(2)
    const cells = await rowCells()
    expect(cells.map(([interval, , text]) => [interval, text])).toEqual([
      ['↻ every 5m', LOOPS[0].prompt],
      ['↻ every 1m 30s', LOOPS[1].prompt],
    ])
    expect(await toggle().count()).toBe(0)
    await shoot('2-two-loops')
  })

  it('collapses into one summary row at three loops', async () => {
    await createLoop(2)
    await toggle().waitFor()
    expect(await rows().count()).toBe(0)
    const summary = (await page.locator('[data-loop-summary] > span').first().textContent())!
    expect(summary).toMatch(/^↻ 3 active loops · next in 1m (2\d|30)s$/)
    expect(await toggle().textContent()).toBe('Expand ▾')
    expect(await toggle().getAttribute('aria-expanded')).toBe('false')
    const controls = (await toggle().getAttribute('aria-controls'))!
    expect(await page.locator(`[id="${controls}"]`).evaluate((list) => list.tagName)).toBe('UL')
    await shoot('3-three-loops-collapsed')
  })

  it('expands in place, truncates a long prompt, and collapses on Escape with focus back on the button', async () => {
    await toggle().click()
    await expect.poll(() => rows().count()).toBe(3)
    expect(await toggle().getAttribute('aria-expanded')).toBe('true')
    expect(await toggle().textContent()).toBe('Collapse ▴')

    // The long prompt is one line, cut with an ellipsis, and whole in its title.
    const long = rows().nth(2).locator(`[title="${LOOPS[2].prompt}"]`)
    const metrics = await long.evaluate((element) => ({
      overflow: element.scrollWidth > element.clientWidth,
      ellipsis: getComputedStyle(element).textOverflow,
      oneLine: element.getBoundingClientRect().height <= 24,
      text: element.textContent,
    }))
    expect(metrics).toEqual({ overflow: true, ellipsis: 'ellipsis', oneLine: true, text: LOOPS[2].prompt })

    // Every interactive target is at least 44 × 44 px.
    const boxes = await dock()
      .getByRole('button')
      .evaluateAll((buttons) =>
        buttons.map((button) => button.getBoundingClientRect()).map(({ width, height }) => ({ width, height })),
      )
    expect(boxes).toHaveLength(4)
    for (const box of boxes) {
      expect(box.width).toBeGreaterThanOrEqual(44)
      expect(box.height).toBeGreaterThanOrEqual(44)
    }

    await shoot('4-three-loops-expanded')

    // Keyboard order: the toggle, then each row's Delete.
    await toggle().focus()
    const order: string[] = []
    for (let step = 0; step < 3; step += 1) {
      await page.keyboard.press('Tab')
      order.push(
        await page.evaluate(
          () =>
            `${document.activeElement?.textContent}|${document.activeElement?.closest('[data-loop-row]')?.children[2]?.textContent}`,
        ),
      )
    }
    expect(order).toEqual(LOOPS.map((loop) => `Delete|${loop.prompt}`))

    await page.keyboard.press('Escape')
    await expect.poll(() => rows().count()).toBe(0)
    expect(await toggle().getAttribute('aria-expanded')).toBe('false')
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Expand ▾')
  })

  it('collapses on a click outside, leaving focus where the click put it', async () => {
    await toggle().click()
    await expect.poll(() => rows().count()).toBe(3)
    const composer = page
      .locator('[data-composer-seat] textarea, [data-composer-seat] [contenteditable="true"]')
      .first()
    await composer.click()
    await expect.poll(() => rows().count()).toBe(0)
    expect(await composer.evaluate((element) => element === document.activeElement)).toBe(true)
  })

  it('deletes a loop after an in-row confirmation and drops its row from the projection', async () => {
    await toggle().click()
    await expect.poll(() => rows().count()).toBe(3)
    const target = rows().filter({ hasText: LOOPS[1].prompt })
    await target.getByRole('button', { name: 'Delete' }).click()
    expect(await target.getByRole('status').textContent()).toBe('Delete this loop?')
    expect(await target.getByRole('button').allTextContents()).toEqual(['Confirm', 'Cancel'])
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Confirm')
    await shoot('5-delete-confirmation')

    // Cancel first: nothing is sent.
    const idsBefore = await loopIds()
    await target.getByRole('button', { name: 'Cancel' }).click()
    expect(await target.getByRole('button').allTextContents()).toEqual(['Delete'])
    expect(await loopIds()).toEqual(idsBefore)

    await target.getByRole('button', { name: 'Delete' }).click()
    const targetId = idsBefore[1]!
    // A person's double click on Confirm sends one delete.
    await target.getByRole('button', { name: 'Confirm' }).dblclick()
    // Two loops remain: the dock shows both rows again, without the deleted prompt.
    await expect.poll(() => rows().count(), { timeout: 10_000 }).toBe(2)
    expect((await rowCells()).map(([, , text]) => text)).toEqual([LOOPS[0].prompt, LOOPS[2].prompt])
    expect(await loopIds()).toHaveLength(2)
    expect(await deleteRuns(targetId)).toBe(1)
    expect(await page.getByRole('alert').count()).toBe(0)
    // Focus left with the deleted row and landed on the dock's first usable button.
    expect(
      await page.evaluate(() => [
        document.activeElement?.textContent,
        document.activeElement?.closest('[data-loop-row]')?.children[2]?.textContent,
      ]),
    ).toEqual(['Delete', LOOPS[0].prompt])
    await shoot('6-after-delete')
  })

  it('sends one delete for two clicks on Confirm in one frame, and disappears when the last loops go', async () => {
    const [first, last] = await loopIds()
    const row = rows().filter({ hasText: LOOPS[0].prompt })
    await row.getByRole('button', { name: 'Delete' }).click()
    // Two clicks in one task: React cannot re-render the disabled Confirm in between; the ref fence holds.
    await row.getByRole('button', { name: 'Confirm' }).evaluate((button: HTMLButtonElement) => {
      button.click()
      button.click()
    })
    await expect.poll(() => rows().count(), { timeout: 10_000 }).toBe(1)
    expect(await deleteRuns(first!)).toBe(1)
    expect((await runCommand(web!.url, sessionId, `/loop delete ${last}`)).kind).toBe('success')
    await expect.poll(() => dock().count(), { timeout: 10_000 }).toBe(0)
  })

  it("shows heartbeats in the conversation as loop rows, in the user's language, and leaves other context rows to DSH", async () => {
    expect((await runCommand(web!.url, sessionId, `/loop 1 ${HEARTBEAT_PROMPT}`)).kind).toBe('success')
    const [id] = await loopIds()
    const beat = await waitFor('a heartbeat', async () => heartbeatsIn((await history(web!.url, sessionId)).events)[0])
    expect(beat.loopId).toBe(id)
    const row = page.locator('[data-loop-heartbeat]').first()
    await row.waitFor({ timeout: 10_000 })
    const button = row.locator('button')
    expect(await button.textContent()).toBe(`↻Loop heartbeat·every 1s·${HEARTBEAT_PROMPT}▾`)
    expect(await button.getAttribute('aria-expanded')).toBe('false')
    // Expanding shows the exact text the model received.
    await button.click()
    expect(await button.getAttribute('aria-expanded')).toBe('true')
    expect(await row.locator('pre').textContent()).toBe(beat.text)
    expect(await row.locator('pre').isVisible()).toBe(true)
    // Every heartbeat is a loop row; the context rows that are not (AGENTS.md, DSH's system prompt) stay DSH's own.
    const contextRows = page.locator('[data-chat-flow-kind="context"]')
    const heartbeatRows = page.locator('[data-chat-flow-kind="context"]:has([data-loop-heartbeat])')
    const hostRows = page.locator('[data-chat-flow-kind="context"]:not(:has([data-loop-heartbeat]))')
    const hostTexts = await hostRows.allTextContents()
    expect(hostTexts).toContain('Context injectionAGENTS.md')
    for (const text of hostTexts) expect(text).toMatch(/^Context injection/)
    expect(await contextRows.count()).toBe((await heartbeatRows.count()) + hostTexts.length)
    // Live in Chinese, then without its interval once the loop is gone.
    await switchLanguage('zh')
    await expect.poll(() => button.textContent()).toBe(`↻循环触发·每1秒·${HEARTBEAT_PROMPT}▴`)
    for (const text of await hostRows.allTextContents()) expect(text).toMatch(/^上下文注入/)
    await row.scrollIntoViewIfNeeded()
    await page.mouse.move(1_270, 10)
    const box = (await row.boundingBox())!
    const chat = (await page.locator('[data-composer-seat]').boundingBox())!
    await page.screenshot({
      path: join(SHOTS, 'heartbeat-row-zh.png'),
      clip: { x: chat.x, y: Math.max(0, box.y - 52), width: chat.width, height: box.height + 64 },
    })
    expect((await runCommand(web!.url, sessionId, `/loop delete ${id}`)).kind).toBe('success')
    await expect.poll(() => button.textContent()).toBe(`↻循环触发·${HEARTBEAT_PROMPT}▴`)
    await switchLanguage('en')
    await expect.poll(() => button.textContent()).toBe(`↻Loop heartbeat·${HEARTBEAT_PROMPT}▴`)
    await waitFor('the heartbeat turns to end', async () =>
      turnsSettled((await history(web!.url, sessionId)).events) ? true : undefined,
    )
  })

  it('used the DSH theme in light and dark and logged no console errors', async () => {
    await createLoop(0)
    await rows().first().waitFor()
    const panel = dock().locator('> div')
    await setTheme('light')
    const light = await panel.evaluate((element) => getComputedStyle(element).backgroundColor)
    await setTheme('dark')
    const dark = await panel.evaluate((element) => getComputedStyle(element).backgroundColor)
    await setTheme('light')
    expect(light).toBe('rgb(245, 246, 247)')
    expect(dark).toBe('rgb(53, 54, 56)')
    expect(await page.locator('[data-slot-error]').count()).toBe(0)
    expect(consoleErrors).toEqual([])
    // Five of the screenshots illustrate the docs; refreshed on request (their countdowns differ every run).
    publishScreenshots([
      ['4-three-loops-expanded-light.png', 'loop-dock-light.png'],
      ['5-delete-confirmation-dark.png', 'loop-dock-dark.png'],
      ['5-delete-confirmation-light.png', 'loop-dock-en.png'],
      ['zh-delete-confirmation-light.png', 'loop-dock-zh.png'],
      ['heartbeat-row-zh.png', 'loop-heartbeat-zh.png'],
    ])
  })
  it('shows the model-made loop_create call as "Create loop · every 5m · <prompt>" in both languages', async () => {
    await selectSession(MODEL_SESSION_PROMPT)
    const row = page.locator('[data-loop-tool="loop_create"]')
    await row.waitFor({ timeout: 10_000 })
    const button = row.locator('button')
    expect(await button.textContent()).toBe(`↻Create loop·every 5m·${MODEL_LOOP.prompt}▾`)
    expect(await row.getAttribute('data-state')).toBe('ok')
    // DSH's generic row ("Tool call · loop_create · …") is replaced, not shown beside it.
    expect(await page.locator('[data-tool="loop_create"]').count()).toBe(0)
    expect(await page.locator('[data-chat-flow-kind="tool-call"]').count()).toBe(1)
    expect(await page.locator('[data-chat-flow-kind="tool-call"] [data-loop-tool="loop_create"]').count()).toBe(1)
    // Expanding shows what the tool returned to the model: the new loop, with its prompt and interval.
    await button.click()
    const result = row.locator('pre')
    expect(await result.isVisible()).toBe(true)
    expect(await result.getAttribute('aria-label')).toBe('What the tool returned to the model')
    const returned = JSON.parse((await result.textContent())!) as {
      id: string
      prompt: string
      time_in_seconds: number
    }
    const [created] = await loopIdsOf(modelSessionId)
    expect(returned).toMatchObject({ id: created, prompt: MODEL_LOOP.prompt, time_in_seconds: 300 })
    await button.click()
    await shootConversationRow(row, 'tool-call-en')
    await switchLanguage('zh')
    await expect.poll(() => button.textContent()).toBe(`↻创建循环·每5分钟·${MODEL_LOOP.prompt}▾`)
    await shootConversationRow(row, 'tool-call-zh')
  })

  it('has a loop card in Settings → Plugins → Plugin configuration, in Chinese and English, saved into settings.yaml and enforced live', async () => {
    // Still Chinese from the previous test: the host's own settings chrome is Chinese too.
    // A taller window, so the settings dialog shows the whole open card (restored by the next test).
    await page.setViewportSize({ width: 1280, height: 1000 })
    await page.getByRole('button', { name: '设置', exact: true }).click()
    await page.getByRole('button', { name: '插件', exact: true }).click()
    expect(
      await page.getByRole('tablist', { name: '插件视图' }).getByRole('tab', { selected: true }).textContent(),
    ).toBe('插件配置')
    const card = page.locator('[data-loop-settings]')
    await card.waitFor({ timeout: 10_000 })
    // Listed with DSH's own cards, in slot registration order, which follows how the client bundles happened to load.
    const names = await page
      .locator('ul:has([data-loop-settings]) li')
      .evaluateAll((items) => items.map((item) => item.querySelector('button span span')?.textContent))
    expect(names.sort()).toEqual(['终端', 'Agent 循环', '网页搜索', '定时循环'].sort())
    const header = card.locator('button[aria-expanded]').first()
    expect(await header.textContent()).toBe('定时循环通过 /loop 或由模型创建的定时重复提示。')
    expect(await header.getAttribute('aria-label')).toBe('展开设置: 定时循环')
    await header.click()
    expect(await header.getAttribute('aria-expanded')).toBe('true')
    const maxLoops = card.getByLabel('每个会话的循环上限')
    const maxPrompt = card.getByLabel('提示词长度上限（字符）')
    expect([await maxLoops.inputValue(), await maxPrompt.inputValue()]).toEqual(['20', '4000'])
    expect(await card.locator('p').allTextContents()).toEqual([
      '1 到 1000。达到上限后，需先删除一个循环才能再创建。',
      '1 到 100000。超长的提示词会被拒绝而不是截断；每次触发都会重复发送提示词。',
    ])
    expect(await card.getByRole('button').allTextContents()).toEqual([
      '定时循环通过 /loop 或由模型创建的定时重复提示。',
      '放弃修改',
      '保存',
    ])
    await shootSettingsCard(card, 'settings-card-zh')

    // Live switch: the same card, still open, in English.
    await switchLanguage('en')
    await expect.poll(() => header.textContent()).toBe('LoopsRecurring prompts created with /loop or by the model.')
    expect(await header.getAttribute('aria-label')).toBe('Hide settings: Loops')
    expect(await card.getByLabel('Active loops per session').inputValue()).toBe('20')
    expect(await card.getByLabel('Prompt length (characters)').inputValue()).toBe('4000')

    // Validation follows the schema: whole numbers from 1 to 1000 / 1 to 100000; anything else blocks Save.
    const save = card.getByRole('button', { name: 'Save' })
    const loopsInput = card.getByLabel('Active loops per session')
    const loopsHint = card.locator(`[id="${await loopsInput.getAttribute('aria-describedby')}"]`)
    for (const draft of ['0', '1001', '1.5', 'ten']) {
      await loopsInput.fill(draft)
      expect(await loopsInput.getAttribute('aria-invalid')).toBe('true')
      expect(await loopsHint.textContent()).toBe(
        'Enter a whole number from 1 to 1000, or leave blank to use the default.',
      )
      expect(await save.isDisabled()).toBe(true)
    }
    await card.getByLabel('Prompt length (characters)').fill('100001')
    expect(await card.locator('[aria-invalid="true"]').count()).toBe(2)
    await card.getByLabel('Prompt length (characters)').fill('4000')
    await loopsInput.fill('1')
    expect(await loopsInput.getAttribute('aria-invalid')).toBe('false')
    expect(await header.textContent()).toBe('LoopsRecurring prompts created with /loop or by the model.Unsaved')
    await shootSettingsCard(card, 'settings-card-en')
    await save.click()
    // Saved: the override shows, the draft is gone, and the host wrote the loop section of settings.yaml.
    await card.getByText('Overridden').waitFor({ timeout: 10_000 })
    expect(await card.getByRole('button', { name: 'Reset to default' }).count()).toBe(1)
    expect(await save.isDisabled()).toBe(true)
    expect(readFileSync(settingsFile, 'utf8')).toMatch(/^loop:\n {2}maxLoopsPerSession: 1\n/m)

    // The host half reads the section live: a fresh session takes one loop, and refuses the second.
    const fresh = await createSession(web!.url, workspace)
    expect(await runCommand(web!.url, fresh, '/loop 60 a')).toMatchObject({ kind: 'success' })
    const refused = await runCommand(web!.url, fresh, '/loop 60 b')
    expect(refused.kind).toBe('error')
    expect(refused.text).toContain(
      'This session already has 1 active loop; the limit is 1 (plugin setting maxLoopsPerSession).',
    )
    expect(await loopIdsOf(fresh)).toHaveLength(1)
    const [only] = await loopIdsOf(fresh)
    expect((await runCommand(web!.url, fresh, `/loop delete ${only}`)).kind).toBe('success')
  })

  it('lists the plugin in the Plugin list tab', async () => {
    await page.getByRole('tablist', { name: 'Plugin views' }).getByRole('tab', { name: 'Plugin list' }).click()
    await page.getByPlaceholder('Search plugins').fill('loop')
    const panel = page.locator('[role="tabpanel"]:has(input[placeholder="Search plugins"])')
    const item = panel.getByText('plugin-loop', { exact: true })
    await item.waitFor({ timeout: 10_000 })
    // The inventory names it after the package (dsh- stripped) and shows its state, nothing of its own.
    expect(await panel.innerText()).toMatch(/Plugin list\s+2\s+agent-loop\s+Enabled\s+plugin-loop\s+Enabled$/)
    await page.screenshot({ path: join(SHOTS, 'plugin-list.png') })
    // Expanded, it shows only what the inventory knows of any plugin: its patch row, enabled, mounted.
    await item.click()
    await panel.getByText('Cordis status').waitFor()
    expect(await panel.innerText()).toMatch(
      /plugin-loop\s+Enabled\s+include:loop\s+Configuration\s+Enabled\s+Cordis status\s+Mounted/,
    )
    await page.screenshot({ path: join(SHOTS, 'plugin-list-expanded.png') })
    await page.setViewportSize({ width: 1280, height: 800 })
    expect(await page.locator('[data-slot-error]').count()).toBe(0)
    expect(consoleErrors).toEqual([])
    publishScreenshots([
      ['settings-card-en.png', 'loop-settings-en.png'],
      ['settings-card-zh.png', 'loop-settings-zh.png'],
      ['tool-call-en.png', 'loop-tool-call-en.png'],
      ['tool-call-zh.png', 'loop-tool-call-zh.png'],
    ])
  })

  // Restarts dsh web, so it runs last.
  it("shows no loop row for a fork after a restart, and its parent's loop row in the parent", async () => {
    const cwd = join(scratch!, FORK_CWD)
    mkdirSync(cwd)
    const parent = await createSession(web!.url, cwd)
    expect((await runCommand(web!.url, parent, `/loop 3600 ${FORK_LOOP_PROMPT}`)).kind).toBe('success')
    await prompt(web!.url, parent, FORK_PARENT_PROMPT)
    await waitFor('the parent turn to end', async () => {
      const { events } = await history(web!.url, parent)
      return events.some((event) => event.type === 'turn/end') && turnsSettled(events) ? true : undefined
    })
    const { sessionId: fork } = await call<{ sessionId: string }>(web!.url, 'session.fork', { sessionId: parent })
    // The fork's runtime names the inherited loop in its log once it first reads it.
    await waitFor('the fork change', async () => {
      const { events } = await history(web!.url, fork)
      return events.at(-1)?.type === 'loop/change' ? true : undefined
    })
    // Restart on the same home: nothing is live, and the fork has no projection-cache row yet.
    await page.context().close()
    await web!.stop()
    web = await startWeb({ home, model: mockEndpoint(mock!), cwd: workspace })
    const errorsBefore = consoleErrors.length
    page = await newPage()
    await page.goto(web.url)
    // Read cold, the fork is named after its cwd in the sidebar (its title is in no projection-cache row yet).
    await selectSession(`^${FORK_CWD}`)
    // Opened, it has its title (its parent's first prompt) and shows the conversation it inherited, without the dock.
    const tree = page.getByRole('tree', { name: /^(Sessions|会话)$/ })
    const titled = (selected: boolean) =>
      tree.getByRole('treeitem', { name: new RegExp(`^${FORK_PARENT_PROMPT}`), selected })
    await titled(true).waitFor({ timeout: 10_000 })
    await page
      .getByText(/^Created loop_[0-9a-f]{8}: every 1h/)
      .first()
      .waitFor({ timeout: 10_000 })
    await page.waitForTimeout(1_000)
    expect(await dock().count()).toBe(0)
    await page.mouse.move(1_270, 10)
    await page.screenshot({ path: join(SHOTS, 'fork-after-restart.png') })
    // The other row with that title, the parent, still shows its loop.
    await titled(false).click()
    await rows().first().waitFor({ timeout: 10_000 })
    expect((await rowCells()).map(([, , text]) => text)).toEqual([FORK_LOOP_PROMPT])
    expect(await tree.getByRole('treeitem', { name: new RegExp(`^${FORK_PARENT_PROMPT}`) }).count()).toBe(2)
    expect(consoleErrors.slice(errorsBefore)).toEqual([])
  })
})

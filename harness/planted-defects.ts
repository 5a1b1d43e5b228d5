/**
 * Defects planted in the runtime, one at a time, to show the simulation (test/sim/) finds each:
 * `scripts/plant-defects.sh` applies one defect's Perl substitutions to a scratch copy of `src/`,
 * runs the simulation over 50 seeds, and reports the first seed that fails.
 * @module harness/planted-defects
 */
import { fileURLToPath } from 'node:url'
import type { RevertEdit } from './departure-reverts.ts'

/** Each defect's edits, by a name that says what it breaks. */
export const PLANTED_DEFECTS: Readonly<Record<string, readonly RevertEdit[]>> = {
  'drive decides before its flush is acknowledged': [
    {
      file: 'src/loop.ts',
      perl: 's/await flushSession\\(this.ctx, this.agent.session\\)\\n    \\} catch \\(error\\) \\{\\n      \\/\\/ A session without loops/void flushSession(this.ctx, this.agent.session).catch(() => {})\\n    } catch (error) {\\n      \\/\\/ A session without loops/',
    },
  ],
  'a tool call returns before its change is flushed': [
    {
      file: 'src/loop.ts',
      perl: 's/try \\{\\n        await flushSession\\(this.ctx, this.agent.session\\)\\n      \\} catch \\(error\\) \\{\\n        throw decision.notSaved/try {\\n        void flushSession(this.ctx, this.agent.session).catch(() => {})\\n      } catch (error) {\\n        throw decision.notSaved/',
    },
  ],
  'a burst: missed intervals are each delivered': [
    {
      file: 'src/shared/timing.ts',
      perl: 's/const skipped = Math.floor\\(\\(now - loop.next_at\\) \\/ intervalMs\\) \\+ 1/const skipped = 1/',
    },
  ],
  'an occurrence skipped: the next one is one interval too far': [
    { file: 'src/shared/timing.ts', perl: 's/\\/ intervalMs\\) \\+ 1/\\/ intervalMs) + 2/' },
  ],
  'a due loop fires early': [
    { file: 'src/drive.ts', perl: 's/if \\(loop.next_at <= now &&/if (loop.next_at <= now + 500 \\&\\&/' },
  ],
  'not the earliest due first': [
    {
      file: 'src/drive.ts',
      perl: 's/\\(due === undefined \\x7c\\x7c loop.next_at < due.next_at\\)/(due === undefined)/',
    },
  ],
  'ties go to the newest loop': [
    {
      file: 'src/drive.ts',
      perl: 's/\\(due === undefined \\x7c\\x7c loop.next_at < due.next_at\\)/(due === undefined \\x7c\\x7c loop.next_at <= due.next_at)/',
    },
  ],
  'no coalescing while a heartbeat waits for a running agent': [
    {
      file: 'src/delivery.ts',
      perl: "s/if \\(facts.waiting\\) return facts.running \\? \\{ kind: 'coalesce' \\} :/if (facts.waiting && !facts.running) return/",
    },
  ],
  'a second heartbeat for the open turn': [
    { file: 'src/delivery.ts', perl: "s/return facts.inOpenTurn \\? \\{ kind: 'coalesce' \\} : /return /" },
  ],
  'an idle agent gets a second heartbeat beside the waiting one': [
    {
      file: 'src/delivery.ts',
      perl: "s/\\{ kind: 'replace', target: 'next-turn' \\}\\n  if/{ kind: 'send', target: 'next-turn' }\\n  if/",
    },
  ],
  'an idle agent coalesces instead of waking': [
    {
      file: 'src/delivery.ts',
      perl: "s/facts.running \\? \\{ kind: 'coalesce' \\} : \\{ kind: 'replace', target: 'next-turn' \\}/{ kind: 'coalesce' }/",
    },
  ],
  'a delete leaves its waiting heartbeat': [
    {
      file: 'src/loop.ts',
      perl: 's/\\n        this.inbox.withdraw\\(withdrawLoopId\\)\\n/\\n/',
    },
  ],
  "a step enters with a deleted loop's claimed heartbeat": [
    {
      file: 'src/loop.ts',
      perl: 's/const admitted = admitClaimedHeartbeats\\(claimed, decision, fold.loops\\)/const admitted = decision/',
    },
  ],
  'claims go unseen': [
    { file: 'src/index.ts', perl: 's/runtimes.get\\(agent\\)\\?.noteClaimed\\(message, turn\\)/undefined/' },
  ],
  'the next-step list is not read for waiting heartbeats': [
    {
      file: 'src/heartbeat-inbox.ts',
      perl: 's/return \\[...this.agent.inbox.nextStep, ...this.agent.inbox.nextTurn\\]/return [...this.agent.inbox.nextTurn]/',
    },
  ],
  'a refused send still moves the schedule': [
    {
      file: 'src/loop.ts',
      perl: 's/const failure = refused \\?\\? this.recordDispatch/const failure = this.recordDispatch/',
    },
  ],
  'a clock correction delivers a heartbeat': [
    {
      file: 'src/loop.ts',
      perl: "s/const refused = decision.kind === 'deliver' \\? this.inbox.deliver\\(loop\\) : undefined/const refused = this.inbox.deliver(loop)/",
    },
  ],
  'no clock correction': [{ file: 'src/drive.ts', perl: 's/if \\(skewed !== undefined\\)/if (false)/' }],
  'waits longer than a minute': [
    { file: 'src/drive.ts', perl: 's/MAX_TIMER_WAIT_MS = 60_000/MAX_TIMER_WAIT_MS = 2_147_483_647/' },
  ],
  'retries do not back off': [
    { file: 'src/loop.ts', perl: 's/this.retryDelay \\* 2, MAX_RETRY_DELAY_MS/this.retryDelay, MAX_RETRY_DELAY_MS/' },
  ],
  'retries back off past a minute': [
    { file: 'src/loop.ts', perl: 's/const MAX_RETRY_DELAY_MS = 60_000/const MAX_RETRY_DELAY_MS = 600_000/' },
  ],
  'a failed drive is not retried': [
    { file: 'src/loop.ts', perl: 's/this.timer.arm\\(this.retryDelay\\)/void this.retryDelay/' },
  ],
  'a hot reload mid-turn does not wait to see the turn': [
    {
      file: 'src/loop.ts',
      perl: "s/this.turnUnseen = this.options.joinedLive === true && this.agent.status === 'running'/this.turnUnseen = false/",
    },
  ],
  'a delete appends before the step it raced is logged': [
    { file: 'src/heartbeat-inbox.ts', perl: 's/=== true && !entered.logged \\?/=== true \\&\\& false ?/' },
  ],
  'a delete by a runtime that joined live races the old hook': [
    { file: 'src/loop.ts', perl: 's/if \\(this.turnUnseen\\) \\{\\n          await/if (false) {\\n          await/' },
  ],
  'a runtime that joined mid-turn does not read the turn again': [
    { file: 'src/loop.ts', perl: 's/this.inbox.readOpenTurn\\(events, header.seedLength \\?\\? 0\\)\\n      for/for/' },
  ],
  'a reload while the pre-step hooks run lets a deleted loop in': [
    {
      file: 'src/index.ts',
      perl: 's/return admitByLog\\(messages, decision, events, header.seedLength \\?\\? 0\\)/return decision/',
    },
  ],
  'a fork whose first flush failed leaves its record for a create': [
    { file: 'src/loop.ts', perl: 's/if \\(loops > 0 \\|\\| this.pendingFork !== undefined\\)/if (loops > 0)/' },
  ],
  'the hooks wait for the host inspection': [
    {
      file: 'src/index.ts',
      perl: 's/(  const runtimes = new Map<Agent, LoopRuntime>\\(\\)\\n)/$1  await inspectHost(process.argv[1])\\n/',
    },
  ],
  'a delete is folded as nothing': [
    {
      file: 'src/fold.ts',
      perl: "s/activeIndex\\(loops, change.id, 'delete'\\)\\n      return \\{ loops: loops.filter\\(\\(loop\\) => loop.id !== change.id\\), lastIdNumber \\}/return fold/",
    },
  ],
}

if (process.argv[1] === fileURLToPath(import.meta.url))
  for (const [name, edits] of Object.entries(PLANTED_DEFECTS))
    process.stdout.write(`${name}|${edits.map(({ file, perl }) => `${file}::${perl}`).join(';;')}\n`)

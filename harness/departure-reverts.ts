/**
 * The edits that revert each departure of SPEC.md §10 "Departures from the specification", by the
 * row's key: Perl substitutions, each run over one source file. Kept here so the table is prose;
 * `harness/departures.ts` joins the two, and the docs test checks that every row has its edits and
 * every key a row.
 * @module harness/departure-reverts
 */

/** An edit that reverts a departure: a Perl substitution run over one source file. */
export interface RevertEdit {
  readonly file: string
  readonly perl: string
}

/** Each row's edits, by its key in the table. */
export const DEPARTURE_REVERTS: Readonly<Record<string, readonly RevertEdit[]>> = {
  'coalesce-while-waiting': [
    {
      file: 'src/delivery.ts',
      perl: "s/if \\(facts.waiting\\) return facts.running \\? \\{ kind: 'coalesce' \\} :/if (facts.waiting && !facts.running) return/",
    },
  ],
  'replace-on-idle': [
    {
      file: 'src/delivery.ts',
      perl: "s/\\{ kind: 'replace', target: 'next-turn' \\}\\n  if/{ kind: 'send', target: 'next-turn' }\\n  if/",
    },
  ],
  'one-heartbeat-a-turn': [
    { file: 'src/delivery.ts', perl: "s/return facts.inOpenTurn \\? \\{ kind: 'coalesce' \\} : /return /" },
  ],
  archived: [{ file: 'src/drive.ts', perl: 's/if \\(archived\\) return/if (false) return/' }],
  subagent: [
    { file: 'src/index.ts', perl: "s/ \\x7c\\x7c agent.session.header.origin === 'subagent'//" },
    {
      file: 'src/projection.ts',
      perl: 's/if \\(\\(event.type as string\\) === SUBAGENT_DESCRIPTOR_EVENT\\) return NO_LOOPS//',
    },
  ],
  'minute-waits': [{ file: 'src/drive.ts', perl: 's/MAX_TIMER_WAIT_MS = 60_000/MAX_TIMER_WAIT_MS = 2_147_483_647/' }],
  'clock-correction': [{ file: 'src/drive.ts', perl: 's/if \\(skewed !== undefined\\)/if (false)/' }],
  'read-once': [
    {
      file: 'src/loop.ts',
      perl: 's/this.fold \\?\\?= this.readLogAndNameInheritedLoops\\(\\)/this.fold = this.readLogAndNameInheritedLoops()/',
    },
  ],
  'latest-date': [
    { file: 'src/shared/timing.ts', perl: 's/return Math.min\\(occurrence, LATEST_DATE_MS\\)/return occurrence/' },
  ],
  'longest-interval': [{ file: 'src/validation.ts', perl: 's/if \\(seconds <= longest\\) return/return/' }],
  'runaway-bounds': [
    { file: 'src/validation.ts', perl: 's/if \\(active < maxLoopsPerSession\\) return/return/' },
    { file: 'src/validation.ts', perl: 's/if \\(prompt.length > maxPromptLength\\)/if (false)/' },
  ],
  'xml-prompt': [
    {
      file: 'src/validation.ts',
      perl: 's/const character = firstNonXmlCharacter\\(prompt\\)/const character = undefined/',
    },
  ],
  'unknown-keys': [{ file: 'src/validation.ts', perl: 's/if \\(unknown === undefined\\) return/return/' }],
  'fork-record': [
    { file: 'src/loop.ts', perl: 's/const inherited = from > 0/const inherited = false \\&\\& from > 0/' },
  ],
  'corrupt-kept': [
    {
      file: 'src/projection.ts',
      perl: 's/return corrupt === undefined \\? \\{ loops \\} : \\{ loops, corrupt \\}/return { loops }/',
    },
  ],
  'one-shot': [{ file: 'src/loop.ts', perl: 's/if \\(this.options.oneShotHost \\x7c\\x7c/if (false \\x7c\\x7c/' }],
  'other-host': [
    {
      file: 'src/host-support.ts',
      perl: 's/if \\(found.length === 0\\) return \\{ supported: true \\}/return { supported: true }/',
    },
  ],
  'fold-module': [
    { file: 'src/fold.ts', perl: "s/^(import \\{ createHash \\} from 'node:crypto'\\n)/$1import '.\\/loop.ts'\\n/m" },
  ],
}

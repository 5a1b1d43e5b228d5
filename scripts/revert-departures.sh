#!/usr/bin/env bash
# Each departure of SPEC.md §10 "Departures from the specification", reverted one at a time in a
# scratch copy of HEAD: its test must then fail. A reverting edit that no longer applies (the code
# moved) is an error too, so this list is kept in step with the code.
#
#   bash scripts/revert-departures.sh          the in-process tests (about a minute)
#   bash scripts/revert-departures.sh --e2e    also the end-to-end ones (builds the plugin; about 10 minutes)
#
# Not part of `pnpm run check`: a departure's test already runs there without the revert.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
scratch="$(mktemp -d)"
trap 'git -C "$root" worktree remove --force "$scratch/tree" >/dev/null 2>&1; rm -rf "$scratch"' EXIT
git -C "$root" worktree add --detach --quiet "$scratch/tree" HEAD
ln -s "$root/node_modules" "$scratch/tree/node_modules"
cd "$scratch/tree" || exit 2
export PATH="$PWD/node_modules/.bin:$PATH"

# name | file | the perl edit that reverts the departure | suite (unit or e2e) | test file | test name
CASES=(
  "one waiting heartbeat|src/delivery.ts|s/if \(facts.waiting\) return facts.running \? \{ kind: 'coalesce' \} :/if (facts.waiting && !facts.running) return/|unit|test/loop.test.ts|advances the schedule without sending while the heartbeat waits unconsumed"
  "idle replaces|src/delivery.ts|s/\{ kind: 'replace', target: 'next-turn' \}\n  if/{ kind: 'send', target: 'next-turn' }\n  if/|unit|test/inbox.integration.test.ts|Stop keeping the inbox while a next-step heartbeat waits"
  "one per turn|src/delivery.ts|s/return facts.inOpenTurn \? \{ kind: 'coalesce' \} : /return /|unit|test/model.integration.test.ts|a 1 s loop and a busy agent"
  "archived sessions|src/drive.ts|s/if \(archived\) return/if (false) return/|unit|test/host-features.test.ts|starts no turn while another session keeps its cadence"
  "no runtime for a delegated session|src/index.ts|s/ \x7c\x7c agent.session.header.origin === 'subagent'//|unit|test/host-features.test.ts|is a root without an owner"
  "descriptor reset|src/projection.ts|s/if \(\(event.type as string\) === SUBAGENT_DESCRIPTOR_EVENT\) return NO_LOOPS//|unit|test/projection.test.ts|shows no loops from a sub-agent"
  "minute waits|src/drive.ts|s/MAX_TIMER_WAIT_MS = 60_000/MAX_TIMER_WAIT_MS = 2_147_483_647/|unit|test/clock-jumps.test.ts|fires an overdue loop within a minute"
  "clock correction|src/drive.ts|s/if \(skewed !== undefined\)/if (false)/|unit|test/clock-jumps.test.ts|reschedules durably"
  "the log read once|src/loop.ts|s/this.fold \?\?= this.readLogAndNameInheritedLoops\(\)/this.fold = this.readLogAndNameInheritedLoops()/|unit|test/loop.test.ts|reads it once"
  "the last date|src/shared/timing.ts|s/return Math.min\(occurrence, LATEST_DATE_MS\)/return occurrence/|unit|test/writer.test.ts|fires, stops its schedule at the last date"
  "an interval past the last date|src/validation.ts|s/if \(seconds <= longest\) return/return/|unit|test/validation.test.ts|accepts every positive safe integer whose first occurrence is still a date"
  "the loop bound|src/validation.ts|s/if \(active < maxLoopsPerSession\) return/return/|unit|test/config.test.ts|holds a runaway model"
  "the prompt bound|src/validation.ts|s/if \(prompt.length > maxPromptLength\)/if (false)/|unit|test/config.test.ts|keeps a pasted megabyte"
  "characters XML cannot carry|src/validation.ts|s/const character = firstNonXmlCharacter\(prompt\)/const character = undefined/|unit|test/tools.test.ts|no XML reader"
  "unknown keys|src/validation.ts|s/if \(unknown === undefined\) return/return/|unit|test/tools.test.ts|before appending anything"
  "a corrupt log in the projection|src/projection.ts|s/return corrupt === undefined \? \{ loops \} : \{ loops, corrupt \}/return { loops }/|unit|test/projection.test.ts|fails closed to no loops on a malformed record"
  "another DSH|src/host-support.ts|s/if \(found.length === 0\) return \{ supported: true \}/return { supported: true }/|unit|test/host.test.ts|boots, adds no loop tool"
  "one per turn (dsh web)|src/delivery.ts|s/return facts.inOpenTurn \? \{ kind: 'coalesce' \} : /return /|e2e|test/e2e/features.e2e.test.ts|leaves /goal its rounds"
  "archived sessions (dsh web)|src/drive.ts|s/if \(archived\) return/if (false) return/|e2e|test/e2e/features.e2e.test.ts|starts no turn while another session"
  "no runtime for a delegated session (dsh web)|src/index.ts|s/ \x7c\x7c agent.session.header.origin === 'subagent'//|e2e|test/e2e/features.e2e.test.ts|a background sub-agent whose model asks"
  "descriptor reset (dsh web)|src/projection.ts|s/if \(\(event.type as string\) === SUBAGENT_DESCRIPTOR_EVENT\) return NO_LOOPS//|e2e|test/e2e/features.e2e.test.ts|a subagent_fork child shows none"
  "the fork record|src/loop.ts|s/const inherited = from > 0/const inherited = false && from > 0/|e2e|test/e2e/fork.e2e.test.ts|forking a session that holds a loop"
  "one-shot hosts|src/loop.ts|s/if \(this.options.oneShotHost \x7c\x7c/if (false \x7c\x7c/|e2e|test/e2e/headless.e2e.test.ts|7.1 a model that creates a 2 s loop"
)

# The control: every in-process test named above passes as the code is.
files=()
for entry in "${CASES[@]}"; do
  IFS='|' read -r _ _ _ suite tests _ <<<"$entry"
  [[ $suite == unit ]] && files+=("$tests")
done
if ! vitest run $(printf '%s\n' "${files[@]}" | sort -u) >"$scratch/out" 2>&1; then
  cat "$scratch/out"
  echo "the named tests fail without any revert"
  exit 2
fi

held=0
for entry in "${CASES[@]}"; do
  IFS='|' read -r name file edit suite tests title <<<"$entry"
  [[ $suite == e2e && ${1:-} != --e2e ]] && continue
  git checkout --quiet -- src
  perl -0pi -e "$edit" "$file"
  if git diff --quiet -- src; then
    echo "NOT REVERTED  $name: the edit no longer applies to $file"
    held=1
    continue
  fi
  config=()
  if [[ $suite == e2e ]]; then
    tsdown >/dev/null 2>&1 || { echo "NOT BUILT     $name"; held=1; continue; }
    config=(-c test/e2e/vitest.config.ts)
  fi
  if timeout 900 vitest run "${config[@]}" "$tests" -t "$title" >"$scratch/out" 2>&1; then
    echo "STILL PASSES  $name: $tests \"$title\""
    held=1
  else
    echo "fails         $name: $tests \"$title\""
    # Why it failed, so a reader can tell the departure's defect from a broken set-up.
    sed 's/\x1b\[[0-9;]*m//g' "$scratch/out" | grep -m1 -E '^(AssertionError|[A-Za-z]*Error):' | cut -c1-160 | sed 's/^/                /'
  fi
done
exit $held

#!/usr/bin/env bash
# Each departure of SPEC.md §10 "Departures from the specification", reverted one at a time in a
# scratch copy of HEAD by the edits harness/departure-reverts.ts holds for its key: every test its
# Test cell names must then fail. The cases are read from the table joined with those edits
# (harness/departures.ts); an edit that no longer applies (the code moved) is an error too.
#
#   bash scripts/revert-departures.sh          the in-process tests (about two minutes)
#   bash scripts/revert-departures.sh --e2e    also the end-to-end ones (builds the plugin; about 10 minutes)
#
# Not part of `pnpm run check`: a departure's test already runs there without the revert, and
# test/docs.test.ts checks that every row names tests that exist and edits to revert it.
set -uo pipefail
# shellcheck source=scripts/scratch-edits.sh
source "$(dirname "$0")/scratch-edits.sh"

# key | file::perl;;file::perl | test file | title pattern
mapfile -t CASES < <(node --experimental-transform-types --disable-warning=ExperimentalWarning harness/departures.ts)
[[ ${#CASES[@]} -gt 0 ]] || { echo "no departures read from SPEC.md"; exit 2; }

# The control: every in-process test named passes as the code is.
files=()
for entry in "${CASES[@]}"; do
  IFS='|' read -r _ _ tests _ <<<"$entry"
  [[ $tests != test/e2e/* ]] && files+=("$tests")
done
if ! vitest run $(printf '%s\n' "${files[@]}" | sort -u) >"$scratch/out" 2>&1; then
  cat "$scratch/out"
  echo "the named tests fail without any revert"
  exit 2
fi

held=0
for entry in "${CASES[@]}"; do
  IFS='|' read -r row edits tests title <<<"$entry"
  [[ $tests == test/e2e/* && ${1:-} != --e2e ]] && continue
  if ! apply_edits "$edits"; then
    echo "NOT REVERTED  row $row: an edit no longer applies"
    held=1
    continue
  fi
  config=()
  if [[ $tests == test/e2e/* ]]; then
    tsdown >/dev/null 2>&1 || { echo "NOT BUILT     row $row"; held=1; continue; }
    config=(-c test/e2e/vitest.config.ts)
  fi
  timeout 900 vitest run "${config[@]}" "$tests" -t "$title" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' >"$scratch/out"
  if grep -qE '^ +Tests +[0-9]+ failed' "$scratch/out"; then
    echo "fails         row $row: $tests \"$title\""
    # Why it failed, so a reader can tell the departure's defect from a broken set-up.
    grep -m1 -E '^(AssertionError|[A-Za-z]*Error):' "$scratch/out" | cut -c1-160 | sed 's/^/                /'
  elif grep -qE '^ +Tests +[0-9]+ passed' "$scratch/out"; then
    echo "STILL PASSES  row $row: $tests \"$title\""
    held=1
  else
    echo "NOT RUN       row $row: $tests \"$title\" (no such test, or the run broke)"
    held=1
  fi
done
exit $held

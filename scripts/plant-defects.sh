#!/usr/bin/env bash
# Each defect of harness/planted-defects.ts planted in a scratch copy of HEAD, one at a time: the
# simulation (test/sim/) must then fail within 50 seeds. Prints, for each, the first seed that
# fails and the invariant it broke; an edit that no longer applies (the code moved) is an error.
#
#   bash scripts/plant-defects.sh            50 seeds a defect (about ten minutes)
#   SIM_SEEDS=200 bash scripts/plant-defects.sh
#
# Not part of `pnpm run check`: the simulation itself runs there, on the code as it is.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
scratch="$(mktemp -d)"
trap 'git -C "$root" worktree remove --force "$scratch/tree" >/dev/null 2>&1; rm -rf "$scratch"' EXIT
git -C "$root" worktree add --detach --quiet "$scratch/tree" HEAD
ln -s "$root/node_modules" "$scratch/tree/node_modules"
cd "$scratch/tree" || exit 2
export PATH="$PWD/node_modules/.bin:$PATH"
export SIM_SEEDS="${SIM_SEEDS:-50}"

mapfile -t DEFECTS < <(node --experimental-transform-types --disable-warning=ExperimentalWarning harness/planted-defects.ts)
[[ ${#DEFECTS[@]} -gt 0 ]] || { echo "no defects read"; exit 2; }

missed=0
for entry in "${DEFECTS[@]}"; do
  IFS='|' read -r name edits <<<"$entry"
  git checkout --quiet -- src
  applied=1
  while IFS= read -r edit; do
    [[ -z $edit ]] && continue
    file="${edit%%::*}"
    perl -0pi -e "${edit#*::}" "$file"
    git diff --quiet -- "$file" && applied=0
  done < <(printf '%s\n' "${edits//;;/$'\n'}")
  if [[ $applied == 0 ]]; then
    echo "NOT PLANTED   $name: an edit no longer applies"
    missed=1
    continue
  fi
  timeout 900 vitest run test/sim/simulation.test.ts -t "keeps every" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' >"$scratch/out"
  found="$(grep -m1 -oE 'seed [0-9]+ \(replay: SIM_SEED=[0-9]+\): .*' "$scratch/out" | cut -c1-170)"
  if [[ -n $found ]]; then
    echo "found         $name: $found"
  elif grep -qE '^ +Tests +[0-9]+ passed' "$scratch/out"; then
    echo "NOT FOUND     $name (in $SIM_SEEDS seeds)"
    missed=1
  else
    echo "BROKE         $name: $(grep -m1 -E '(Error|error)' "$scratch/out" | cut -c1-160)"
  fi
done
exit $missed

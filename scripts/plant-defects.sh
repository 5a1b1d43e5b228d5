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
# shellcheck source=scripts/scratch-edits.sh
source "$(dirname "$0")/scratch-edits.sh"
export SIM_SEEDS="${SIM_SEEDS:-50}"

mapfile -t DEFECTS < <(node --experimental-transform-types --disable-warning=ExperimentalWarning harness/planted-defects.ts)
[[ ${#DEFECTS[@]} -gt 0 ]] || { echo "no defects read"; exit 2; }

missed=0
for entry in "${DEFECTS[@]}"; do
  IFS='|' read -r name edits <<<"$entry"
  if ! apply_edits "$edits"; then
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

# Sourced by the scripts that edit src/ in a scratch copy of HEAD and run tests there
# (revert-departures.sh, plant-defects.sh). Sourcing makes the copy, removed on exit, and
# enters it with the project's tools on PATH.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
scratch="$(mktemp -d)"
trap 'git -C "$root" worktree remove --force "$scratch/tree" >/dev/null 2>&1; rm -rf "$scratch"' EXIT
git -C "$root" worktree add --detach --quiet "$scratch/tree" HEAD
ln -s "$root/node_modules" "$scratch/tree/node_modules"
cd "$scratch/tree" || exit 2
export PATH="$PWD/node_modules/.bin:$PATH"

# apply_edits "file::perl;;file::perl": src/ as HEAD has it, then each Perl substitution in turn.
# Fails when there is none, or one no longer changes its file (the code moved).
apply_edits() {
  local edits="$1" edit file applied=1
  git checkout --quiet -- src
  [[ -n $edits ]] || return 1
  while IFS= read -r edit; do
    [[ -z $edit ]] && continue
    file="${edit%%::*}"
    perl -0pi -e "${edit#*::}" "$file"
    git diff --quiet -- "$file" && applied=0
  done < <(printf '%s\n' "${edits//;;/$'\n'}")
  [[ $applied == 1 ]]
}

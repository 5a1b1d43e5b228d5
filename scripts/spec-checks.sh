#!/usr/bin/env bash
# The specification's verification commands, exactly as written there, in order (SPEC.md §11 "Source map").
# Run through `pnpm run check:spec`, which puts node_modules/.bin first on PATH, so `node`
# is the Node 22 the `node` dev dependency installs (DSH and tsdown need Node >= 22).
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_OPTIONS=--experimental-require-module \
  node_modules/.bin/vitest run --coverage --maxWorkers=1

node_modules/.bin/tsc -p tsconfig.json --noEmit
node_modules/.bin/tsc -p tsconfig.client.json --noEmit
node_modules/.bin/tsc -p tsconfig.json
node_modules/.bin/tsc -p tsconfig.client.json
node node_modules/tsdown/dist/run.mjs
git diff --check

node --input-type=module -e \
  "process.argv[1] = process.cwd() + '/lib/index.js'; import('./lib/index.js').then(m => { if (m.name !== 'loop' || typeof m.apply !== 'function') process.exit(1) })"

# The same check without process.argv[1], as a bare import of the entry runs it.
node --input-type=module -e "import('./lib/index.js').then(m => { if (m.name !== 'loop' || typeof m.apply !== 'function') process.exit(1) })"
echo "spec-checks: every verification command passed"

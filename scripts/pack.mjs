// Builds and packs the installable tarball (what `dsh plugin add` takes) into artifacts/.
import { execFileSync } from 'node:child_process'
import { mkdirSync, readdirSync } from 'node:fs'

const run = (command, args) => execFileSync(command, args, { stdio: 'inherit' })
mkdirSync('artifacts', { recursive: true })
run('pnpm', ['run', 'build'])
run('pnpm', ['pack', '--pack-destination', 'artifacts'])
const tarballs = readdirSync('artifacts').filter((name) => name.endsWith('.tgz'))
console.log(`packed: ${tarballs.map((name) => `artifacts/${name}`).join(', ')}`)

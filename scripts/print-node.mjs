// Prints which Node runs the suite: DSH needs >= 22.19 and a fresh machine ships 20.
const [major, minor] = process.versions.node.split('.').map(Number)
console.log(`node ${process.version} (${process.execPath})`)
if (major < 22 || (major === 22 && minor < 19)) {
  console.error(
    'DSH needs Node >= 22.19; run through the project scripts so node_modules/.bin/node comes first on PATH',
  )
  process.exit(1)
}

/**
 * Which Node runs the release command. It imports nothing, so that the executable can ask it
 * before it loads the command: on an older Node the command's Zstandard imports fail to link
 * before any line of it runs.
 * @module dsh-plugin-loop/release/node-version
 */

/**
 * Why this Node cannot run the command (Zstandard in `node:zlib` came in 22.15; DSH 0.1.0-rc.8
 * needs 22.19), or `undefined` when it can.
 * @param version - `process.versions.node`.
 * @returns the line to print, or `undefined`.
 */
export function nodeRefusal(version: string): string | undefined {
  const [major = 0, minor = 0] = version.split('.').map(Number)
  if (major > 22 || (major === 22 && minor >= 19)) return undefined
  return `dsh-plugin-loop needs Node 22.19 or later, as DSH does, and this is Node ${version}: run it with the node that runs DSH`
}

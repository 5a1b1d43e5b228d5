/**
 * Every log a release finds gets a true line, however the file is held (SPEC.md §13
 * "Leaving loop"): through a link, with its mode and owner, with CRLF rows, with a backup that
 * cannot be a hard link.
 */
import {
  chmodSync,
  chownSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import * as fsPromises from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import type { ReleaseFs } from '../../src/release/release-fs.ts'
import { decodeFrame, encodeFrame } from '../../src/release/zstd-frames.ts'
import { releaseDone } from '../support/release-home.ts'
import { tempDir } from '../../harness/temp-dir.ts'

const HEADER = '{"type":"session","version":0,"id":"session-a","createdAt":1,"delegationDepth":0}'
const LOOP_ROW = '{"type":"loop/change","seq":0,"time":1,"data":{"version":1,"operation":"delete","id":"loop_1"}}'
const COMMAND_ROW = '{"type":"command/run","seq":1,"time":2,"data":{"commandId":"c","name":"loop","args":" list"}}'
const LOG = `${HEADER}\n${LOOP_ROW}\n${COMMAND_ROW}\n`
const MARKED = `${HEADER}\n${LOOP_ROW.slice(0, -1)},"ignorable":true}\n${COMMAND_ROW}\n`
const UPGRADED = `${HEADER}\n${COMMAND_ROW.replace('"seq":1', '"seq":0')}\n`

/** A home with one session folder; the log is written where the test says. */
function home(): { home: string; folder: string } {
  const root = tempDir('loop-files-')
  const folder = join(root, 'sessions', '--p--', 'session-a')
  mkdirSync(folder, { recursive: true })
  return { home: root, folder }
}

describe('a log behind a link', () => {
  it('is released through the link, which stays, and its backup holds the content', async () => {
    const { home: root, folder } = home()
    const target = join(tempDir('loop-files-target-'), 'kept.jsonl')
    writeFileSync(target, LOG)
    symlinkSync(target, join(folder, 'session.jsonl'))
    const release = await releaseDone(root, { mode: 'upgrade' })
    expect(release.files).toMatchObject([{ path: join(folder, 'session.jsonl'), status: 'released' }])
    expect(lstatSync(join(folder, 'session.jsonl')).isSymbolicLink()).toBe(true)
    expect(readlinkSync(join(folder, 'session.jsonl'))).toBe(target)
    expect(readFileSync(target, 'utf8')).toBe(UPGRADED)
    const [file] = release.files
    expect(file?.status === 'released' && readFileSync(file.original!, 'utf8')).toBe(LOG)
  })

  it("has its target's temp files, which an interrupted run left there, found and removed by the next run", async () => {
    const { home: root, folder } = home()
    const targetFolder = tempDir('loop-files-target-')
    const target = join(targetFolder, 'kept.jsonl')
    writeFileSync(target, LOG)
    symlinkSync(target, join(folder, 'session.jsonl'))
    const left = join(targetFolder, 'kept.jsonl.loop-release-4000001-0a1b2c3d.tmp')
    writeFileSync(left, 'half')
    writeFileSync(join(targetFolder, 'other.jsonl.loop-release-4000001-0a1b2c3d.tmp'), 'not its')
    const release = await releaseDone(root)
    expect(release.leftovers).toEqual([left])
    expect(readdirSync(targetFolder).sort()).toEqual(['kept.jsonl', 'other.jsonl.loop-release-4000001-0a1b2c3d.tmp'])
    expect(readFileSync(target, 'utf8')).toBe(MARKED)
  })

  it('in a session folder that is a link, is released', async () => {
    const { home: root } = home()
    const elsewhere = join(tempDir('loop-files-elsewhere-'), 'session-b')
    mkdirSync(elsewhere)
    writeFileSync(join(elsewhere, 'session.jsonl'), LOG)
    symlinkSync(elsewhere, join(root, 'sessions', '--p--', 'session-b'))
    const release = await releaseDone(root)
    expect(release.files.map((file) => [file.path, file.status])).toEqual([
      [join(root, 'sessions', '--p--', 'session-b', 'session.jsonl'), 'released'],
    ])
    expect(readFileSync(join(elsewhere, 'session.jsonl'), 'utf8')).toBe(MARKED)
  })

  it('that points nowhere, is LEFT with the reason', async () => {
    const { home: root, folder } = home()
    symlinkSync(join(root, 'gone.jsonl'), join(folder, 'session.jsonl'))
    expect((await releaseDone(root)).files).toEqual([
      {
        path: join(folder, 'session.jsonl'),
        sessionId: undefined,
        status: 'left',
        reason: 'it is a link to a file that does not exist',
      },
    ])
  })
  it('that loops, is LEFT with the reason', async () => {
    const { home: root, folder } = home()
    symlinkSync(join(folder, 'session.jsonl'), join(folder, 'session.jsonl'))
    expect((await releaseDone(root)).files).toMatchObject([
      { status: 'left', reason: expect.stringMatching(/^ELOOP: too many symbolic links/) },
    ])
  })
})

describe('a replaced log', () => {
  it.each([
    ['removal', 0o600],
    ['upgrade', 0o600],
    // A mode the umask narrows: the temp file is created 0644 and given the log's.
    ['removal', 0o666],
  ] as const)('%s: keeps its mode (%o), not the umask, and its owner', async (mode, permissions) => {
    const { home: root, folder } = home()
    const log = join(folder, 'session.jsonl')
    writeFileSync(log, LOG)
    chmodSync(log, permissions)
    const umask = process.umask(0o022)
    onTestFinished(() => void process.umask(umask))
    // Another owner where this process may give one (as root); its own otherwise.
    const owner =
      process.getuid?.() === 0 ? { uid: 1234, gid: 2345 } : { uid: statSync(log).uid, gid: statSync(log).gid }
    chownSync(log, owner.uid, owner.gid)
    expect((await releaseDone(root, { mode })).files.map((file) => file.status)).toEqual(['released'])
    expect(readFileSync(log, 'utf8')).toBe(mode === 'removal' ? MARKED : UPGRADED)
    const stats = statSync(log)
    expect([stats.mode & 0o7777, stats.uid, stats.gid]).toEqual([permissions, owner.uid, owner.gid])
  })
})

describe('CRLF rows', () => {
  it('are read alike by both modes, each row keeping its line ending', async () => {
    const crlf = (text: string) => text.replaceAll('\n', '\r\n')
    for (const [mode, expected] of [
      ['removal', crlf(MARKED)],
      ['upgrade', crlf(UPGRADED)],
    ] as const) {
      const { home: root, folder } = home()
      writeFileSync(join(folder, 'session.jsonl'), crlf(LOG))
      const release = await releaseDone(root, { mode })
      expect(release.files).toMatchObject([{ status: 'released' }])
      expect(readFileSync(join(folder, 'session.jsonl'), 'utf8')).toBe(expected)
    }
  })

  it('in a row the upgrade parses keep their line ending too', async () => {
    const { home: root, folder } = home()
    const title = '{"type":"session/title","seq":2,"time":3,"data":{"title":"t","messageSeqs":[1]}}'
    writeFileSync(join(folder, 'session.jsonl'), `${HEADER}\r\n${LOOP_ROW}\r\n${COMMAND_ROW}\r\n${title}\r\n`)
    await releaseDone(root, { mode: 'upgrade' })
    expect(readFileSync(join(folder, 'session.jsonl'), 'utf8')).toBe(
      `${HEADER}\r\n${COMMAND_ROW.replace('"seq":1', '"seq":0')}\r\n` +
        '{"type":"session/title","seq":1,"time":3,"data":{"title":"t","messageSeqs":[0]}}\r\n',
    )
  })
})

describe('a backup that cannot be a hard link', () => {
  it('is a copy synced to disk, and the report says which', async () => {
    const { home: root, folder } = home()
    writeFileSync(join(folder, 'session.jsonl'), LOG)
    const synced: string[] = []
    // A file system whose links into the backup fail as across file systems, and whose syncs are recorded.
    const fs = new Proxy(fsPromises, {
      get(target, key) {
        if (key === 'link')
          return async (from: string, to: string) => {
            // The backup folder is on another file system; the lock, beside the home's own files, is not.
            if (!to.includes('loop-release-backup')) return target.link(from, to)
            throw Object.assign(new Error('EXDEV: cross-device link not permitted'), { code: 'EXDEV' })
          }
        if (key !== 'open') return Reflect.get(target, key)
        return async (path: string, flags: string) => {
          const handle = await target.open(path, flags)
          return new Proxy(handle, {
            get(object, name) {
              const value = Reflect.get(object, name) as (...args: unknown[]) => unknown
              if (name !== 'sync') return typeof value === 'function' ? value.bind(object) : value
              return async () => {
                synced.push(path)
                return value.call(object)
              }
            },
          })
        }
      },
    }) as ReleaseFs
    const release = await releaseDone(root, { mode: 'upgrade', fs })
    const backup = join(release.backupFolder!, 'sessions', '--p--', 'session-a', 'session.jsonl')
    expect(release.files).toMatchObject([{ status: 'released', original: backup, copied: true }])
    expect(readFileSync(backup, 'utf8')).toBe(LOG)
    expect(synced).toContain(backup)
  })
})

describe('a backup that fails', () => {
  it('leaves the log as it was when the link fails for another reason, with or without an error code', async () => {
    for (const failure of [Object.assign(new Error('EIO: simulated'), { code: 'EIO' }), new Error('odd failure')]) {
      const { home: root, folder } = home()
      writeFileSync(join(folder, 'session.jsonl'), LOG)
      const fs = new Proxy(fsPromises, {
        get: (target, key) =>
          key === 'link'
            ? async (from: string, to: string) => {
                if (!to.includes('loop-release-backup')) return target.link(from, to)
                throw failure
              }
            : Reflect.get(target, key),
      }) as ReleaseFs
      const release = await releaseDone(root, { mode: 'upgrade', fs })
      expect(release.files).toMatchObject([{ status: 'left', reason: failure.message }])
      expect(readFileSync(join(folder, 'session.jsonl'), 'utf8')).toBe(LOG)
    }
  })
})

describe('a plain log with a row longer than a read', () => {
  it('is read across the chunks the row spans, and released', async () => {
    const { home: root, folder } = home()
    // 2.5 MiB of text in one row, read a MiB at a time.
    const long = COMMAND_ROW.replace('" list"', `"${'x'.repeat(5 << 19)}"`).replace('"seq":1', '"seq":0')
    writeFileSync(join(folder, 'session.jsonl'), `${HEADER}\n${long}\n${LOOP_ROW.replace('"seq":0', '"seq":1')}\n`)
    const release = await releaseDone(root, { mode: 'upgrade' })
    expect(release.files).toMatchObject([{ status: 'released', tally: { rows: 2, loopRows: 1 } }])
    expect(readFileSync(join(folder, 'session.jsonl'), 'utf8')).toBe(`${HEADER}\n${long}\n`)
  })
})

describe('a Zstandard log', () => {
  it('keeps the bytes of each frame after a changed one that it need not change', async () => {
    const { home: root, folder } = home()
    const frames = [`${HEADER}\n`, `${LOOP_ROW}\n`, `${COMMAND_ROW}\n`].map((text) => encodeFrame(Buffer.from(text)))
    writeFileSync(join(folder, 'session.jsonl.zstd'), Buffer.concat(frames))
    await releaseDone(root)
    const written = readFileSync(join(folder, 'session.jsonl.zstd'))
    expect(written.subarray(0, frames[0]!.length).equals(frames[0]!)).toBe(true)
    expect(written.subarray(-frames[2]!.length).equals(frames[2]!)).toBe(true)
    expect(decodeFrame(written.subarray(frames[0]!.length, -frames[2]!.length)).toString()).toBe(
      `${LOOP_ROW.slice(0, -1)},"ignorable":true}\n`,
    )
  })
})

/** A run's journal, and what an earlier replacement means for its log now (SPEC.md §13 "Leaving loop"): plain values. */
import { mkdirSync, writeFileSync } from 'node:fs'
import * as fsPromises from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  BACKUP_FOLDER,
  JOURNAL_FILE,
  journalLine,
  parseJournal,
  readEarlierRuns,
  rebuildSource,
  replacementState,
  type Replacement,
} from '../../src/release/journal.ts'
import type { ReleaseFs } from '../../src/release/release-fs.ts'
import { tempDir } from '../../harness/temp-dir.ts'

const REPLACED: Replacement = {
  log: '/h/sessions/p/s/session.jsonl',
  kept: '/h/loop-release-backup/t/sessions/p/s/session.jsonl',
  keptAs: 'link',
  readSize: 100,
  ino: '12345678901234567890',
  size: 90,
}

describe('the journal', () => {
  it('reads back what it wrote, a line cut short by a kill or unknown to it passed over', () => {
    const text =
      journalLine({ kind: 'run', mode: 'upgrade' }) +
      journalLine({ kind: 'replaced', ...REPLACED }) +
      '{"kind":"replaced","log":"/h/x"}\n' +
      '[1]\n' +
      journalLine({ kind: 'replaced', ...REPLACED, keptAs: 'copy' }) +
      journalLine({ kind: 'replaced', ...REPLACED, keptAs: 'copy' }).slice(0, 30)
    expect(text.split('\n')[1]).toBe(
      '{"kind":"replaced","log":"/h/sessions/p/s/session.jsonl","kept":"/h/loop-release-backup/t/sessions/p/s/session.jsonl",' +
        '"keptAs":"link","readSize":100,"ino":"12345678901234567890","size":90}',
    )
    const copied: Replacement = { ...REPLACED, keptAs: 'copy' }
    expect(parseJournal(text)).toEqual({ mode: 'upgrade', replacements: [REPLACED, copied] })
    expect(parseJournal('')).toEqual({ mode: undefined, replacements: [] })
  })

  it("finds the earlier runs' folders in the order they ran, with or without a journal", async () => {
    const home = tempDir('loop-journal-')
    expect(await readEarlierRuns(fsPromises, home)).toEqual([])
    const root = join(home, BACKUP_FOLDER)
    mkdirSync(join(root, '2026-12-02T00-00-00-000Z'), { recursive: true })
    mkdirSync(join(root, '2026-12-01T00-00-00-000Z'))
    writeFileSync(join(root, '2026-12-01T00-00-00-000Z', JOURNAL_FILE), journalLine({ kind: 'run', mode: 'removal' }))
    writeFileSync(join(root, 'stray-file'), '')
    expect(await readEarlierRuns(fsPromises, home)).toEqual([
      {
        folder: join(root, '2026-12-01T00-00-00-000Z'),
        journal: { mode: 'removal', replacements: [] },
      },
      { folder: join(root, '2026-12-02T00-00-00-000Z'), journal: undefined },
    ])
    const failing = (call: 'readdir' | 'readFile') =>
      new Proxy(fsPromises, {
        get: (target, key) =>
          key === call
            ? async () => {
                throw Object.assign(new Error('EIO: simulated'), { code: 'EIO' })
              }
            : Reflect.get(target, key),
      }) as ReleaseFs
    await expect(readEarlierRuns(failing('readdir'), home)).rejects.toThrow('EIO: simulated')
    await expect(readEarlierRuns(failing('readFile'), home)).rejects.toThrow('EIO: simulated')
  })
})

describe('replacementState', () => {
  const now = { ino: REPLACED.ino, size: REPLACED.size }
  it('tells a log another run replaced, one left whole, one cut, and one a DSH wrote to', () => {
    expect(replacementState(REPLACED, { ...now, ino: '7' }, 100)).toEqual({ kind: 'superseded' })
    expect(replacementState(REPLACED, now, 100)).toEqual({ kind: 'whole' })
    expect(replacementState(REPLACED, { ...now, size: 89 }, 100)).toEqual({ kind: 'cut' })
    expect(replacementState(REPLACED, { ...now, size: 95 }, 100)).toEqual({
      kind: 'appended',
      originalGrew: false,
      tail: 5,
    })
    expect(replacementState(REPLACED, now, 130)).toEqual({ kind: 'appended', originalGrew: true, tail: 0 })
    // An original deleted since: only the log itself tells.
    expect(replacementState(REPLACED, now, undefined)).toEqual({ kind: 'whole' })
  })
})

describe('rebuildSource', () => {
  it("joins the rows DSH wrote after the replacement to the numbering they continue, and refuses two that don't join", () => {
    // The original grew and nothing came after: the kept original is the log.
    expect(rebuildSource({ originalGrew: true, tailFirst: undefined, keptNext: 50, writtenNext: 40 })).toBe(
      'original-and-tail',
    )
    // Rows after the replacement in the original's numbering: it had read the original.
    expect(rebuildSource({ originalGrew: true, tailFirst: 50, keptNext: 50, writtenNext: 40 })).toBe(
      'original-and-tail',
    )
    expect(rebuildSource({ originalGrew: false, tailFirst: 48, keptNext: 48, writtenNext: 40 })).toBe(
      'original-and-tail',
    )
    // In the replacement's numbering: it had read the replacement, which with them holds every event.
    expect(rebuildSource({ originalGrew: false, tailFirst: 40, keptNext: 48, writtenNext: 40 })).toBe('log')
    // Two numberings at once, or neither.
    expect(rebuildSource({ originalGrew: true, tailFirst: 40, keptNext: 50, writtenNext: 40 })).toBe('conflict')
    expect(rebuildSource({ originalGrew: false, tailFirst: 44, keptNext: 48, writtenNext: 40 })).toBe('conflict')
  })
})

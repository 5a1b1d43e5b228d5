/**
 * DSH's own format-0 migration, as a later DSH runs it before it opens an rc.8 session: the
 * published `@deepseek-ai/dsh-session-format-v0-to-v1` edge in DSH's catalog, strict.
 * @module test/support/format-migration
 */
import { createSessionFormatCatalog } from '@deepseek-ai/dsh-session-format'
import {
  RELEASED_V0_EVENT_TYPES,
  assertReleasedV1Header,
  releasedV0SessionFormatCodec,
  releasedV1SessionFormatCodec,
  restoreReleasedV1Artifact,
  sessionFormatV0ToV1,
} from '@deepseek-ai/dsh-session-format-v0-to-v1'

const known = new Set(RELEASED_V0_EVENT_TYPES)
const restore = (artifact: Parameters<typeof restoreReleasedV1Artifact>[0]) =>
  restoreReleasedV1Artifact(artifact, known)

const catalog = createSessionFormatCatalog({
  codecs: [releasedV0SessionFormatCodec, releasedV1SessionFormatCodec],
  migrations: [sessionFormatV0ToV1],
  currentVersion: 1,
  restoreCurrentHeader: (header) => {
    assertReleasedV1Header(header)
    return header
  },
  restoreCurrent: restore,
  restoreTransformedCurrent: restore,
  currentEncoder: {
    encodeHeader: (header) => ({ ...header }),
    encodeEvent: (event) => ({ ...event }),
  },
})

/** A format-0 log migrated to format 1: its header and events. */
export type MigratedSession = ReturnType<ReturnType<typeof catalog.createRestore>['finish']>

/**
 * Migrate one rc.8 log's text (the plaintext of every frame, in order) as a later DSH does.
 * @param text - the log's rows, header first, one per line.
 * @returns the migrated session; DSH's refusal throws.
 */
export function migrateFormat0(text: string): MigratedSession {
  const [header, ...rows] = text.split('\n').filter((line) => line !== '')
  const restoring = catalog.createRestore(JSON.parse(header!) as unknown, {
    recovery: 'strict',
    validation: 'transformed',
  })
  for (const row of rows) restoring.decodeRow(JSON.parse(row) as unknown)
  return restoring.finish()
}

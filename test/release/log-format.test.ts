/** What a format-0 log is, as a release reads it, with plain values (SPEC.md §13 "Leaving loop"). */
import { describe, expect, it } from 'vitest'
import {
  SEQ_REFERENCES,
  eventSeqFieldsOf,
  isLoopRow,
  readHeader,
  readRowHead,
  seqAfter,
} from '../../src/release/log-format.ts'
import { LaterFormat } from '../../src/release/refusals.ts'
import { refusal } from '../support/release-home.ts'

/** The header of a log whose first line is `line`. */
const header = (line: string) => readHeader(Buffer.from(line))

describe('readHeader', () => {
  it('reads a format-0 header and a fork boundary', () => {
    const plain = { type: 'session', version: 0, id: 's', createdAt: 1, delegationDepth: 0 }
    expect(header(JSON.stringify(plain))).toEqual({ id: 's', seedLength: undefined, fields: plain })
    expect(header('{"type":"session","version":0,"id":"f","seedLength":7}')).toEqual({
      id: 'f',
      seedLength: 7,
      fields: { type: 'session', version: 0, id: 'f', seedLength: 7 },
    })
  })

  it('refuses another format, naming it, and anything that is not a header', () => {
    // A later DSH's format is no refusal: there is nothing to release.
    expect(() => header('{"type":"session","version":4,"id":"s"}')).toThrow(new LaterFormat('s', 4))
    for (const version of ['-1', '0.5', '"1"', 'null'])
      expect(refusal(() => header(`{"type":"session","version":${version},"id":"s"}`))).toBe(
        `the log's session format is ${version}, which no DSH writes (DSH 0.1.0-rc.8 writes 0)`,
      )
    expect(refusal(() => header('{"type":"user/message","seq":0}'))).toBe('the first line is not a session header')
    expect(refusal(() => header('{"type":"session","version":0,"id":"s","seedLength":-1}'))).toBe(
      'the header seedLength is not a count',
    )
    expect(refusal(() => header('{"type":'))).toBe('the header line is not valid JSON')
    expect(refusal(() => header('[1]'))).toBe('the header line is not a JSON object')
    expect(refusal(() => readHeader(Buffer.from([0x7b, 0xff, 0x7d])))).toBe(
      'the header line holds bytes that are not UTF-8',
    )
  })
})

describe('readRowHead', () => {
  it('reads where the type ends and the seq of an event row and of a packed chunk run, with the place of the seq', () => {
    const row = '{"type":"user/message","seq":12,"time":3,"data":{}}'
    expect(readRowHead(Buffer.from(row), 1)).toEqual({ typeEnd: 21, seq: 12, seqStart: 29, seqEnd: 31 })
    expect([row.slice(9, 21), row.slice(29, 31)]).toEqual(['user/message', '12'])
    expect(readRowHead(Buffer.from('{"type":"text-chunks","seq0":4,"time0":1,"data":{}}'), 1)).toMatchObject({
      typeEnd: 20,
      seq: 4,
    })
  })

  it.each([
    '{"seq":1,"type":"user/message"}',
    '{"type":"","seq":1,"time":1}',
    '{"type":"a\\"b","seq":1,"time":1}',
    '{"type":"user/message","time":1,"seq":1}',
    '{"type":"user/message","seq":,"time":1}',
    '{"type":"user/message","seq":-1,"time":1}',
    '{"type":"user/message","seq":1}',
    '{"type":"user/message","seq":90071992547409930,"time":1}',
    '{"type":"user/message',
  ])('refuses %s: it does not begin as DSH writes a row', (row) => {
    expect(refusal(() => readRowHead(Buffer.from(row), 2))).toBe(
      'row 2 does not begin with its type and seq as DSH writes a row',
    )
  })
})

describe('eventSeqFieldsOf', () => {
  it("finds a row's fields that name events by its type's bytes, and none for another type", () => {
    const fieldsOf = (row: string) => eventSeqFieldsOf(Buffer.from(row), readRowHead(Buffer.from(row), 1))
    for (const [type, fields] of Object.entries(SEQ_REFERENCES.events))
      expect(fieldsOf(`{"type":"${type}","seq":1,"time":1,"data":{}}`)).toBe(fields)
    // Same length as tool/result, and one a prefix of a type that names events.
    for (const type of ['text-chunks', 'tool/resul', 'tool/results'])
      expect(fieldsOf(`{"type":"${type}","seq":1,"time":1,"data":{}}`)).toBeUndefined()
  })
})

describe('isLoopRow', () => {
  it('knows a loop/change row by how DSH begins it, and nothing else', () => {
    expect(isLoopRow(Buffer.from('{"type":"loop/change","seq":4,"data":{}}'))).toBe(true)
    expect(
      isLoopRow(Buffer.from('{"type":"user/message","seq":4,"data":{"text":"{\\"type\\":\\"loop/change\\","}}')),
    ).toBe(false)
    expect(isLoopRow(Buffer.from('{"type":"loop/changes","seq":4}'))).toBe(false)
    expect(isLoopRow(Buffer.from('{"seq":4,"type":"loop/change"}'))).toBe(false)
  })
})

describe('SEQ_REFERENCES', () => {
  it('names, frozen, every field of a format-0 log that holds seqs: the header, the surface envelopes, the data of the migration', () => {
    expect(Object.isFrozen(SEQ_REFERENCES)).toBe(true)
    expect(Object.isFrozen(SEQ_REFERENCES.events)).toBe(true)
    expect(SEQ_REFERENCES.header).toEqual({ seedLength: 'count' })
    for (const [type, fields] of Object.entries(SEQ_REFERENCES.events)) {
      expect(Object.isFrozen(fields), type).toBe(true)
      for (const part of Object.values(fields)) expect(Object.isFrozen(part), type).toBe(true)
    }
    expect(
      Object.fromEntries(Object.entries(SEQ_REFERENCES.events).map(([type, fields]) => [type, Object.keys(fields)])),
    ).toEqual({
      'user/message': ['envelope'],
      'assistant/message': ['envelope'],
      'tool/result': ['envelope'],
      'command/done': ['data'],
      'compaction/prune': ['data'],
      'compaction/summary': ['data'],
      'session/title': ['data'],
      'session/title-llm-request': ['data'],
      'session-log-deepseek/delivery-accepted': ['data'],
    })
  })
})

describe('seqAfter', () => {
  it("is the seq after a row's last event: an event's, or a packed run's last member's", () => {
    expect(seqAfter(Buffer.from('{"type":"command/run","seq":41,"time":1,"data":{}}'), 'row 1')).toBe(42)
    const run = (data: string) => Buffer.from(`{"type":"text-chunks","seq0":10,"time0":1,"data":${data}}`)
    expect(seqAfter(run('{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":["a","b","c"]}'), 'row 1')).toBe(13)
    expect(seqAfter(run('{"turn":1,"step":1,"index":0,"dt":[1],"id":"c","args":["{","}"]}'), 'row 1')).toBe(12)
    expect(refusal(() => seqAfter(run('{"turn":1}'), 'the last row'))).toBe('the last row names no seq')
    expect(refusal(() => seqAfter(run('[]'), 'the last row'))).toBe('the last row names no seq')
    expect(refusal(() => seqAfter(Buffer.from('{"type":"x"}'), 'the last row'))).toBe('the last row names no seq')
  })
})

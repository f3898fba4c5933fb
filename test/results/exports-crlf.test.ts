/**
 * `crlfRecords` (src/results/exports/crlf.ts): COPY's CSV records end with LF, RFC 4180 §2 wants
 * CRLF. Every record-ending LF becomes CRLF, a line break inside a quoted field stays, and the
 * quote parity survives any split of the bytes into chunks (checked at every split point and
 * byte by byte).
 */
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { crlfRecords } from '../../src/results/exports/crlf.ts';

/** COPY's bytes of a header and three records: a quoted JSON cell with doubled quotes, a field holding LF and CRLF, an empty-string field. */
const COPY_CSV = 'id,note,ids\n1,"line one\nline two","[""a"", ""b""]"\n2,"say ""hi""\r\nbye",\n3,"",[]\n';
const RFC_CSV = 'id,note,ids\r\n1,"line one\nline two","[""a"", ""b""]"\r\n2,"say ""hi""\r\nbye",\r\n3,"",[]\r\n';

const through = (chunks: Buffer[]) => text(Readable.from(chunks).pipe(crlfRecords()));

describe('CSV records end with CRLF (RFC 4180)', () => {
  it('turns record ends into CRLF and leaves line breaks inside quoted fields', async () => {
    expect(await through([Buffer.from(COPY_CSV)])).toBe(RFC_CSV);
    expect(parse(RFC_CSV, { columns: true, record_delimiter: '\r\n' })).toEqual([
      { id: '1', note: 'line one\nline two', ids: '["a", "b"]' },
      { id: '2', note: 'say "hi"\r\nbye', ids: '' },
      { id: '3', note: '', ids: '[]' },
    ]);
  });

  it('keeps the quote parity across chunks, wherever the bytes are split', async () => {
    const bytes = Buffer.from(COPY_CSV);
    for (let at = 0; at <= bytes.length; at++) expect(await through([bytes.subarray(0, at), bytes.subarray(at)]), `split at ${at}`).toBe(RFC_CSV);
    expect(await through([...bytes].map((b) => Buffer.from([b])))).toBe(RFC_CSV);
  });

  it('counts the records, the header and each record with line breaks inside once, however split', async () => {
    const bytes = Buffer.from(COPY_CSV);
    for (const chunks of [[bytes], [...bytes].map((b) => Buffer.from([b]))]) {
      let records = 0;
      await text(Readable.from(chunks).pipe(crlfRecords((n) => (records += n))));
      expect(records).toBe(4);
    }
  });
});

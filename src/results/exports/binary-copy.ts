/**
 * CSV records (RFC 4180, CRLF) and NDJSON lines from PostgreSQL's binary
 * `COPY … TO STDOUT (format binary)`.
 *
 * Why: in text, every cell is written by PostgreSQL, and the export's timestamps must be RFC 3339
 * with microseconds (the lists' text), which only `to_char` gives in SQL — three calls a row,
 * ~0.9 s of the backend's ~3.5 s for a CSV of 1M results; NDJSON also concatenates its lines in
 * SQL. PostgreSQL's one backend was the bound (bench/README.md "Streaming exports"). In binary,
 * PostgreSQL sends a uuid as its 16 bytes and a timestamptz as its int8 microseconds since
 * 2000-01-01 UTC (no text conversion at all), and the rest as text; this module writes the
 * records here, on the other core, in one pass over the bytes without a JavaScript object per
 * value.
 *
 * Not pg-copy-streams-binary: it decodes each value into a JavaScript object (a timestamp into
 * a Date, which drops the microseconds), a million rows × 12 cells of garbage.
 *
 * The binary format (PostgreSQL docs, "COPY", "Binary Format"): an 11-byte signature, int32
 * flags, int32 header-extension length and the extension; then per tuple an int16 field count
 * (-1: the trailer) and per field an int32 length (-1: null) and the value's bytes, all
 * big-endian. Values are written byte for byte as the text exports wrote them:
 *
 * - timestamps as `to_char(ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')` (src/db/sql.ts
 *   `rfc3339`): years with four digits or more, a year BC as its number without a sign (to_char's
 *   YYYY); ±infinity, for which to_char gives null, as null; uuids as their output function;
 * - CSV as COPY's CSV writes cells (CopyAttributeOutCSV): null as an empty unquoted cell; a text
 *   quoted when empty or when it holds `"`, `,`, CR or LF, with its quotes doubled;
 * - NDJSON as `json_build_object` writes an object (`{"k" : v, "k2" : v2}`, the lists' layout):
 *   strings escaped as `to_json` escapes them (escape_json: `"` `\\` and the control characters
 *   below 0x20), `raw` values (numbers' and JSON's text) as they are but a number's `NaN` and
 *   `±Infinity`, which are not JSON numbers (written as strings), null as `null`.
 */
import { Transform } from 'node:stream';

/**
 * How a column arrives in binary and is written: `uuid` (16 bytes), `timestamp` (timestamptz:
 * int8 µs since 2000-01-01 UTC), `string` (UTF-8 text: a JSON string in NDJSON), `raw` (UTF-8
 * text written as it is in NDJSON: a number's or a JSON value's text). CSV quotes string and raw alike.
 */
export type BinaryKind = 'uuid' | 'timestamp' | 'string' | 'raw';

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
const QUOTE = 0x22;
const COMMA = 0x2c;
const CR = 0x0d;
const LF = 0x0a;
const BACKSLASH = 0x5c;
/** The two ASCII hex digits of each byte value: high digit, low digit. */
const HEX_HI = Uint8Array.from({ length: 256 }, (_, b) => '0123456789abcdef'.charCodeAt(b >> 4));
const HEX_LO = Uint8Array.from({ length: 256 }, (_, b) => '0123456789abcdef'.charCodeAt(b & 15));
/** The two ASCII decimal digits of 0–99: tens, units. */
const DEC_HI = Uint8Array.from({ length: 100 }, (_, n) => 48 + Math.floor(n / 10));
const DEC_LO = Uint8Array.from({ length: 100 }, (_, n) => 48 + (n % 10));

const US_PER_DAY = 86_400_000_000;
/** Days from 0000-03-01 (the civil calendar's era origin) to 2000-01-01, PostgreSQL's epoch. */
const EPOCH_DAYS = 730_425;
const INT64_MAX_HI = 0x7fffffff;

/** The big-endian int32 at `p` of `b` (no bounds check: the caller knows the bytes are there). */
const int32 = (b: Buffer, p: number) => (b[p]! << 24) | (b[p + 1]! << 16) | (b[p + 2]! << 8) | b[p + 3]!;

/** Write `n` (0–99) as two digits at `o`. */
function two(out: Buffer, o: number, n: number): void {
  out[o] = DEC_HI[n]!;
  out[o + 1] = DEC_LO[n]!;
}

/** A date's `YYYY-MM-DDT` bytes, from days since 2000-01-01 (H. Hinnant's civil_from_days). */
function datePrefix(days: number): Buffer {
  const z = days + EPOCH_DAYS;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  const y = yoe + era * 400 + (m <= 2 ? 1 : 0);
  const pad = (n: number, w: number) => String(n).padStart(w, '0');
  // to_char's YYYY of a year BC is its number BC (astronomical year 0 is 1 BC), with no sign.
  return Buffer.from(`${pad(y < 1 ? 1 - y : y, 4)}-${pad(m, 2)}-${pad(d, 2)}T`, 'latin1');
}

/** The last date written in one timestamp column, kept: consecutive rows mostly share it. */
interface DateCache {
  day: number;
  prefix: Buffer;
}

/**
 * Write the RFC 3339 text of the timestamptz at `p` of `b` into `out` at `o` (nothing for
 * ±infinity, as to_char); returns the new offset.
 */
function timestamp(b: Buffer, p: number, out: Buffer, o: number, cache: DateCache): number {
  const hi = int32(b, p);
  const lo = int32(b, p + 4) >>> 0;
  if ((hi === INT64_MAX_HI && lo === 0xffffffff) || (hi === -0x80000000 && lo === 0)) return o;
  const us = hi * 0x1_0000_0000 + lo;
  let d: number;
  let t: number;
  if (Number.isSafeInteger(us)) {
    d = Math.floor(us / US_PER_DAY);
    t = us - d * US_PER_DAY;
  } else {
    // Beyond ±2^53 µs of 2000-01-01 (before the year 1715 or after 2285): exact in bigint.
    const v = (BigInt(hi) << 32n) | BigInt(lo);
    const day = BigInt(US_PER_DAY);
    const r = ((v % day) + day) % day;
    d = Number((v - r) / day);
    t = Number(r);
  }
  if (d !== cache.day) {
    cache.day = d;
    cache.prefix = datePrefix(d);
  }
  const prefix = cache.prefix;
  for (let i = 0; i < prefix.length; i++) out[o++] = prefix[i]!;
  const micros = t % 1_000_000;
  t = (t - micros) / 1_000_000;
  const sec = t % 60;
  t = (t - sec) / 60;
  const min = t % 60;
  two(out, o, (t - min) / 60);
  out[o + 2] = 0x3a;
  two(out, o + 3, min);
  out[o + 5] = 0x3a;
  two(out, o + 6, sec);
  out[o + 8] = 0x2e;
  two(out, o + 9, Math.floor(micros / 10_000));
  two(out, o + 11, Math.floor(micros / 100) % 100);
  two(out, o + 13, micros % 100);
  out[o + 15] = 0x5a;
  return o + 16;
}

/** Write the uuid (16 bytes) at `p` of `b` as its 36-character text. */
function uuid(b: Buffer, p: number, out: Buffer, o: number): number {
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) out[o++] = 0x2d;
    const v = b[p + i]!;
    out[o] = HEX_HI[v]!;
    out[o + 1] = HEX_LO[v]!;
    o += 2;
  }
  return o;
}

/** Write the CSV cell of bytes s…e of `b`, quoted as COPY's CSV quotes it (empty, or holding `"` `,` CR LF). */
function csvText(b: Buffer, s: number, e: number, out: Buffer, o: number): number {
  const start = o;
  let i = s;
  for (; i < e; i++) {
    const c = b[i]!;
    if (c === QUOTE || c === COMMA || c === LF || c === CR) break;
    out[o++] = c;
  }
  if (i === e && e > s) return o;
  o = start;
  out[o++] = QUOTE;
  for (i = s; i < e; i++) {
    const c = b[i]!;
    out[o++] = c;
    if (c === QUOTE) out[o++] = QUOTE;
  }
  out[o++] = QUOTE;
  return o;
}

/** escape_json's short escapes: the byte after the backslash, 0 where `\u00XX` is written. */
const JSON_ESCAPE = Uint8Array.from({ length: 0x60 }, (_, c) => {
  const short: Record<number, string> = { 8: 'b', 9: 't', 10: 'n', 12: 'f', 13: 'r', 34: '"', 92: '\\' };
  return short[c] ? short[c].charCodeAt(0) : 0;
});

/** Write the bytes s…e of `b` as a JSON string, escaped as PostgreSQL's escape_json escapes text. */
function jsonString(b: Buffer, s: number, e: number, out: Buffer, o: number): number {
  out[o++] = QUOTE;
  for (let i = s; i < e; i++) {
    const c = b[i]!;
    if (c >= 0x20 && c !== QUOTE && c !== BACKSLASH) {
      out[o++] = c;
    } else if (JSON_ESCAPE[c]) {
      out[o++] = BACKSLASH;
      out[o++] = JSON_ESCAPE[c]!;
    } else {
      // \u00XX, lowercase hex as escape_json writes it
      out[o++] = BACKSLASH;
      out[o++] = 0x75;
      out[o++] = 0x30;
      out[o++] = 0x30;
      out[o++] = HEX_HI[c]!;
      out[o++] = HEX_LO[c]!;
    }
  }
  out[o++] = QUOTE;
  return o;
}

/**
 * The fewest bytes the tuple of `width` fields at `p` can take, from what of it is in `b`: the
 * end of the last field whose length is there (2 for the trailer or a field count not yet there).
 */
function tupleNeed(b: Buffer, p: number, width: number): number {
  // The trailer (-1), or a count that `step` refuses: 2 bytes decide.
  if (p + 2 > b.length || ((b[p]! << 8) | b[p + 1]!) !== width) return 2;
  let q = p + 2;
  for (let f = 0; f < width; f++) {
    if (q + 4 > b.length) return q + 4 - p;
    q += 4 + Math.max(int32(b, q), 0);
  }
  return q - p;
}

/** The end of the tuple of `width` fields at `p` when all of it is in `b`, else -1. */
function tupleEnd(b: Buffer, p: number, width: number): number {
  let q = p + 2;
  for (let f = 0; f < width; f++) {
    if (q + 4 > b.length) return -1;
    const n = int32(b, q);
    q += 4 + Math.max(n, 0);
  }
  return q <= b.length ? q : -1;
}

const UUID = 1;
const TIMESTAMP = 2;
const STRING = 3;
const RAW = 4;
const CODES: Record<BinaryKind, number> = { uuid: UUID, timestamp: TIMESTAMP, string: STRING, raw: RAW };

/** Check a fixed-width value's length: a uuid is 16 bytes, a timestamp 8. */
function checkWidth(code: number, n: number): void {
  if (code === UUID && n !== 16) throw new Error('export: a uuid not of 16 bytes');
  if (code === TIMESTAMP && n !== 8) throw new Error('export: a timestamp not of 8 bytes');
}

/**
 * One format's record writer: `row(b, p, out, o)` writes the record of the tuple whose first
 * field starts at `p` of `b` (all of it there) at `o` of `out` and returns the new offset;
 * `bound(n)` is the most bytes it writes for a tuple of `n` bytes.
 */
interface RecordWriter {
  row(b: Buffer, p: number, out: Buffer, o: number): number;
  bound(tupleBytes: number): number;
}

/** CSV records ending CRLF. */
function csvWriter(codes: Uint8Array, dates: DateCache[]): RecordWriter {
  const width = codes.length;
  return {
    // A 12-byte timestamp field → ≤ 30 bytes (a comma, ≤ 29 of text: years up to 294276); a 20-byte uuid field → 37;
    // a text field of n + 4 bytes → ≤ 2n + 3; the tuple's 2-byte count → CRLF.
    bound: (n) => 3 * n,
    row(b, p, out, o) {
      for (let f = 0; f < width; f++) {
        if (f > 0) out[o++] = COMMA;
        const n = int32(b, p);
        p += 4;
        if (n < 0) continue;
        const code = codes[f]!;
        checkWidth(code, n);
        if (code === UUID) o = uuid(b, p, out, o);
        else if (code === TIMESTAMP) o = timestamp(b, p, out, o, dates[f]!);
        else o = csvText(b, p, p + n, out, o);
        p += n;
      }
      out[o++] = CR;
      out[o++] = LF;
      return o;
    },
  };
}

const NULL = Buffer.from('null');

/** NDJSON lines: each row a JSON object of `names` in json_build_object's layout. */
function ndjsonWriter(codes: Uint8Array, dates: DateCache[], names: readonly string[]): RecordWriter {
  const width = codes.length;
  const keys = names.map((name, i) => Buffer.from(`${i === 0 ? '{' : ', '}${JSON.stringify(name)} : `));
  const keyBytes = keys.reduce((sum, k) => sum + k.length, 0);
  return {
    // Keys, `}` LF; per value at most 6 bytes a byte of text (\u00XX), 2 + 29 for a timestamp,
    // 38 for a uuid, 4 for null.
    bound: (n) => keyBytes + 2 + 6 * n,
    row(b, p, out, o) {
      for (let f = 0; f < width; f++) {
        const key = keys[f]!;
        for (let i = 0; i < key.length; i++) out[o++] = key[i]!;
        const n = int32(b, p);
        p += 4;
        const code = codes[f]!;
        if (n < 0) {
          for (let i = 0; i < 4; i++) out[o++] = NULL[i]!;
          continue;
        }
        checkWidth(code, n);
        if (code === UUID) {
          out[o++] = QUOTE;
          o = uuid(b, p, out, o);
          out[o++] = QUOTE;
        } else if (code === TIMESTAMP) {
          const at = o;
          o = timestamp(b, p, out, o + 1, dates[f]!);
          if (o === at + 1) {
            for (let i = 0; i < 4; i++) out[at + i] = NULL[i]!; // ±infinity: to_char gives null
            o = at + 4;
          } else {
            out[at] = QUOTE;
            out[o++] = QUOTE;
          }
        } else if (code === STRING) {
          o = jsonString(b, p, p + n, out, o);
        } else if (b[p] === 0x49 || b[p] === 0x4e || (b[p] === 0x2d && b[p + 1] === 0x49)) {
          o = jsonString(b, p, p + n, out, o); // Infinity, -Infinity, NaN: a string, as json_build_object writes them
        } else {
          o += b.copy(out, o, p, p + n);
        }
        p += n;
      }
      out[o++] = 0x7d;
      out[o++] = LF;
      return o;
    },
  };
}

/** Output buffered before it is pushed: a few socket writes' worth. */
const OUT_BYTES = 256 * 1024;
/** Bytes of the next chunk joined to a tuple split across chunks (more only for a longer tuple). */
const JOIN_BYTES = 16 * 1024;

/**
 * The tuples of a binary COPY stream of `width` fields, fed chunk by chunk: `feed(chunk)` calls
 * `onTuple(b, p, end)` for each tuple now whole (its field count at `p` of `b`, its end at `end`),
 * after `onStart()` once the header is read. A tuple split across chunks is completed from the head
 * of the next one; the chunks themselves are not joined (each export would otherwise copy all its
 * input once more). A tuple longer than that (a text of megabytes) waits, its chunks kept aside,
 * until enough bytes came for it, and is joined once (joining at every chunk was quadratic). `ended` is true once the trailer was read. Malformed input (a wrong signature,
 * a tuple of another width) throws an Error.
 */
export class BinaryCopyTuples {
  ended = false;
  private rest: Buffer | null = null;
  /** Chunks kept after `rest` until the tuple it starts can be whole (`need` bytes in all). */
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private need = 0;
  private started = false;

  constructor(
    private readonly width: number,
    private readonly onTuple: (b: Buffer, p: number, end: number) => void,
    private readonly onStart: () => void = () => {},
  ) {}

  /** The tuple (or the trailer) at `p` of `b`: the position after it, or -1 when it is not all in `b`. */
  private step(b: Buffer, p: number): number {
    if (p + 2 > b.length) return -1;
    const count = (b[p]! << 8) | b[p + 1]!;
    if (count === 0xffff) {
      this.ended = true;
      return p + 2;
    }
    if (count !== this.width) throw new Error(`export: a tuple of ${count} fields, ${this.width} expected`);
    const end = tupleEnd(b, p, this.width);
    if (end !== -1) this.onTuple(b, p, end);
    return end;
  }

  feed(chunk: Buffer): void {
    let b = chunk;
    let p = 0;
    if (this.rest && this.started && this.rest.length + this.pendingBytes + chunk.length < this.need) {
      this.pending.push(chunk);
      this.pendingBytes += chunk.length;
      return;
    }
    if (this.pending.length > 0) {
      this.rest = Buffer.concat([this.rest!, ...this.pending]);
      this.pending = [];
      this.pendingBytes = 0;
    }
    const rest = this.rest;
    if (!this.started) {
      b = rest ? Buffer.concat([rest, chunk]) : chunk;
      this.rest = null;
      if (b.length >= 11 && !b.subarray(0, 11).equals(SIGNATURE)) throw new Error('export: not a binary COPY stream');
      if (b.length < 19 || b.length < 19 + int32(b, 15)) {
        this.rest = b;
        return;
      }
      p = 19 + int32(b, 15);
      this.started = true;
      this.onStart();
    } else if (rest) {
      // The tuple split across chunks: its start (rest) and the head of this chunk. (rest is
      // only ever a tuple's start, or the trailer's: nothing follows the trailer.)
      const head = Buffer.concat([rest, chunk.subarray(0, JOIN_BYTES)]);
      const end = this.step(head, 0);
      if (end !== -1) {
        p = end - rest.length;
      } else if (chunk.length <= JOIN_BYTES) {
        this.rest = head; // still not whole: wait for the next chunk
        this.need = tupleNeed(head, 0, this.width);
        return;
      } else {
        b = Buffer.concat([rest, chunk]); // a tuple longer than JOIN_BYTES
      }
      this.rest = null;
    }
    while (!this.ended) {
      const q = this.step(b, p);
      if (q === -1) break;
      p = q;
    }
    if (p < b.length && !this.ended) {
      this.rest = b.subarray(p);
      this.need = tupleNeed(b, p, this.width);
    }
  }
}

/**
 * A Transform from the bytes of a binary COPY to `writer`'s records, after `header`;
 * `onRecords(n)` is told, chunk by chunk, how many were written. Output is pushed in chunks of
 * the bytes written (copied out of one reused buffer: a chunk holds no slack).
 */
function fromBinaryCopy(width: number, writer: RecordWriter, header: string, onRecords: (n: number) => void): Transform {
  let out = Buffer.allocUnsafeSlow(OUT_BYTES);
  let o = 0;
  let records = 0;
  let stream: Transform;
  const tuples = new BinaryCopyTuples(
    width,
    (b, p, end) => {
      // Push the output buffered so far when the tuple may not fit.
      const need = writer.bound(end - p);
      if (o + need > out.length) {
        if (o > 0) stream.push(Buffer.from(out.subarray(0, o)));
        o = 0;
        if (need > out.length) out = Buffer.allocUnsafeSlow(need);
      }
      o = writer.row(b, p + 2, out, o);
      records += 1;
    },
    () => {
      if (header) stream.push(header);
    },
  );
  stream = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      try {
        tuples.feed(chunk);
        if (records > 0) onRecords(records);
        records = 0;
        const written = o > 0 ? Buffer.from(out.subarray(0, o)) : undefined;
        o = 0;
        done(null, written);
      } catch (err) {
        done(err as Error);
      }
    },
    flush(done) {
      done(tuples.ended ? null : new Error('export: the binary COPY stream ended before its trailer'));
    },
  });
  return stream;
}

const caches = (kinds: readonly BinaryKind[]) => kinds.map((): DateCache => ({ day: Number.NaN, prefix: Buffer.alloc(0) }));

/**
 * A Transform from the bytes of `COPY (…) TO STDOUT (format binary)` whose columns arrive as
 * `kinds` to CSV records ending CRLF, after `header` (the header row, CRLF included).
 * `onRecords(n)` is told, chunk by chunk, how many records (rows) were written. Malformed input
 * (a wrong signature, a tuple of another width, a uuid not 16 bytes, a timestamp not 8, a stream
 * ending before its trailer) destroys the stream with an Error.
 */
export function csvFromBinaryCopy(kinds: readonly BinaryKind[], header: string, onRecords: (n: number) => void = () => {}): Transform {
  return fromBinaryCopy(
    kinds.length,
    csvWriter(
      Uint8Array.from(kinds, (k) => CODES[k]),
      caches(kinds),
    ),
    header,
    onRecords,
  );
}

/**
 * As `csvFromBinaryCopy`, to NDJSON: a line per row, the JSON object of `columns` (names and
 * kinds, in the COPY's order) in json_build_object's layout.
 */
export function ndjsonFromBinaryCopy(columns: readonly { name: string; kind: BinaryKind }[], onRecords: (n: number) => void = () => {}): Transform {
  const kinds = columns.map((c) => c.kind);
  const writer = ndjsonWriter(
    Uint8Array.from(kinds, (k) => CODES[k]),
    caches(kinds),
    columns.map((c) => c.name),
  );
  return fromBinaryCopy(kinds.length, writer, '', onRecords);
}

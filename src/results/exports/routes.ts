/**
 * `GET /v1/exports/{activity-results|artifacts|progress|learners|deletions}` (issue #24): every row
 * of the key's tenant in one answer, streamed — NDJSON, CSV or Parquet (formats.ts), from one
 * snapshot whose watermark is the `Svc-Consistent-Through` header (stream.ts).
 *
 * Registered by src/results/routes.ts inside the API-key context: the same key check, rate limit
 * (the request counts once), error body and RLS as the list endpoints. Query: `format`
 * (`ndjson` | `csv` | `parquet`, which `Accept` may still refuse: 406; else the `Accept` header
 * decides, NDJSON by default) and
 * `updated_since` (RFC 3339: only rows changed at or after it — give the previous export's
 * watermark). `Accept-Encoding`: as the client prefers, ties zstd, gzip, identity.
 *
 * Errors before the first row are the /v1 error body: 400 (unknown parameter, malformed
 * `updated_since` or `format`), 404 (unknown export), 406 (`Accept` names nothing we serve, or refuses `format`; `Accept-Encoding` refuses every coding),
 * 429 with `Retry-After` (an export of this key is already running), 503. An error after the
 * first byte aborts the connection (no terminating chunk): every reader sees a failed transfer,
 * never a clean truncated file. Not bound by the list statement timeout (its own connection).
 */
import { finished, pipeline, Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import zlib from 'node:zlib';
import client from '@prometheus-io/client';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import Negotiator from 'negotiator';
import { z } from 'zod';
import type { Deps } from '../../deps.ts';
import { ApiError } from '../../http/api-errors.ts';
import { registry } from '../../telemetry/metrics.ts';
import { keyOf } from '../auth.ts';
import { doc, ErrorBody } from '../schemas.ts';
import { normalizeTimestamp } from '../timestamps.ts';
import { EXPORTS, type ExportName } from './columns.ts';
import { FORMATS, type Format } from './formats.ts';
import { ExportRefused, loadParquet, startExport } from './stream.ts';

const exportsTotal = new client.Counter<'export' | 'format' | 'outcome'>({
  name: 'svc_exports_total',
  help: 'Exports by export, format and outcome (completed, aborted, refused).',
  labelNames: ['export', 'format', 'outcome'],
  registers: [registry],
});
const exportRows = new client.Counter<'export' | 'format'>({
  name: 'svc_export_rows_total',
  help: 'Rows sent by exports (NDJSON and CSV: lines counted as they stream).',
  labelNames: ['export', 'format'],
  registers: [registry],
});

const EXPORT_QUERY = z.strictObject({
  format: doc(z.enum(['ndjson', 'csv', 'parquet']), 'The format (406 if `Accept` refuses it). Default: by `Accept`, else ndjson.').optional(),
  updated_since: doc(
    z.string().transform((s, ctx) => {
      const normalized = normalizeTimestamp(s);
      if (normalized === undefined) {
        ctx.addIssue({ code: 'custom', message: 'must be an RFC 3339 date-time with at most 6 fractional digits, e.g. 2026-01-31T12:00:00.000001Z' });
        return z.NEVER;
      }
      return normalized;
    }),
    'Incremental pull: only rows changed at or after this RFC 3339 instant — the `Svc-Consistent-Through` of the previous export.',
    { format: 'date-time' },
  ).optional(),
});

const NDJSON_BODY = doc(z.string(), 'One JSON object a line: the list endpoint’s data items.');
const CSV_BODY = doc(z.string(), 'RFC 4180: a header row, nested values as JSON text, null as an empty cell.');
const PARQUET_BODY = doc(z.string(), 'A Parquet file (timestamps INT64 TIMESTAMP(MICROS, UTC)).', { contentMediaType: 'application/vnd.apache.parquet' });

/**
 * The Content-Type of each format: CSV names its charset and header row (RFC 4180 §3: without
 * `charset`, text/csv is US-ASCII, and our cells are UTF-8); JSON text is UTF-8 by definition
 * (RFC 8259 §8.1) and Parquet is binary.
 */
const CONTENT_TYPES: Record<Format, string> = { ...FORMATS, csv: `${FORMATS.csv}; charset=utf-8; header=present` };

/** Media type → format. */
const BY_TYPE = new Map(Object.entries(FORMATS).map(([f, t]) => [t, f as Format]));

/**
 * The format an `Accept` header asks for (RFC 9110 §12.5.1, by negotiator: each format's q comes
 * from the most specific range that matches it; the highest q wins; of equal q, the one matched by
 * the more specific range, then the one the client lists first, then FORMATS' order — NDJSON
 * first for `*\/*`). No header: NDJSON. With `wanted` (the `format` query parameter): that format,
 * unless `Accept` refuses it. Undefined when nothing acceptable is served (406).
 */
export function negotiateFormat(accept: string | undefined, wanted?: Format): Format | undefined {
  if (!accept?.trim()) return wanted ?? 'ndjson';
  // Media-type parameters other than q are dropped: `text/csv; charset=utf-8` asks for our CSV
  // (negotiator would require our type to carry the same parameters).
  const ranges = accept
    .split(',')
    .map((range) => {
      const [type, ...params] = range.split(';');
      return [type, ...params.filter((p) => /^\s*q\s*=/i.test(p))].join(';');
    })
    .join(',');
  const types = new Negotiator({ headers: { accept: ranges } }).mediaTypes(wanted ? [FORMATS[wanted]] : Object.values(FORMATS));
  return types[0] === undefined ? undefined : BY_TYPE.get(types[0] as (typeof FORMATS)[Format]);
}

/** The codings we can write, in our order of preference for ties. */
const CODINGS = typeof zlib.createZstdCompress === 'function' ? ['zstd', 'gzip', 'identity'] : ['gzip', 'identity'];

/**
 * The coding for an `Accept-Encoding` header (RFC 9110 §12.5.3, by negotiator: an explicit entry's
 * q, else `*`'s; q=0 refuses; identity is acceptable unless refused): the highest q, ties zstd,
 * gzip, identity. No header: identity. `'identity'` for no coding; undefined when identity is
 * refused and nothing else is acceptable (406).
 */
export function negotiateEncoding(header: string | undefined): 'zstd' | 'gzip' | 'identity' | undefined {
  if (!header?.trim()) return 'identity';
  const [best] = new Negotiator({ headers: { 'accept-encoding': header.replace(/\bx-gzip\b/gi, 'gzip') } }).encodings(CODINGS, { preferred: CODINGS });
  return best as 'zstd' | 'gzip' | 'identity' | undefined;
}

/** Longest wait, ms, for an export that failed before its first byte to free its key's slot before the error is answered. */
const RELEASE_WAIT_MS = 2000;

/** Milliseconds between checks that a running export's key is still live (revocation reaches the lists within a second too). */
const KEY_CHECK_MS = 1000;

/**
 * Check every KEY_CHECK_MS that the key `keyId` is still live (not revoked, not deleted) and call
 * `onRevoked` once when it is not: an export that lasts minutes stops within a second of the
 * key's revocation, as every other request of that key does. A failed check (the database
 * unreachable) is left to the export's own failure. Returns the timer (clear it at the end).
 */
function watchKey(deps: Deps, keyId: string, onRevoked: () => void): NodeJS.Timeout {
  let checking = false; // one check at a time: a slow database does not pile them up
  const timer = setInterval(() => {
    if (checking) return;
    checking = true;
    deps.db
      .query<{ live: boolean }>('select exists (select 1 from api_keys where id = $1 and revoked_at is null) as live', [keyId])
      .then(([row]) => {
        if (row && !row.live) {
          clearInterval(timer);
          onRevoked();
        }
      })
      .catch(() => {})
      .finally(() => (checking = false));
  }, KEY_CHECK_MS);
  timer.unref();
  return timer;
}

/**
 * Resolves once `body` has its first bytes to send (or has ended), rejects with its error if it
 * fails before: a failure before the first row is then an error answer with the API's error body
 * and none of the export's headers (a compressor would otherwise hold the first bytes back and the
 * error would go out as `Content-Encoding: gzip`).
 */
function started(body: Readable): Promise<void> {
  return new Promise((resolve, reject) => {
    const settle = (err?: Error) => {
      body.off('readable', ok).off('error', settle).off('close', closed);
      if (err) reject(err);
      else resolve();
    };
    const ok = () => settle();
    const closed = () => settle(new Error('export: the body closed before its first bytes'));
    body.on('readable', ok).on('error', settle).on('close', closed);
  });
}

const DOCS: Record<ExportName, string> = {
  'activity-results': 'Every activity result of the tenant (the `ActivityResult` objects of `/v1/activity-results`).',
  artifacts: 'Every artifact of the tenant (the `Artifact` objects of `/v1/artifacts`).',
  progress: 'Every progress row of the tenant (the `Progress` objects of `/v1/progress`).',
  learners: 'Every learner of the tenant (the `Learner` objects of `/v1/learners`).',
  deletions: 'Tombstones (the `Deletion` objects of `/v1/deletions`): with `updated_since`, what was deleted since the last export.',
};

const errorJson = (description: string) => ({ description, content: { 'application/json': { schema: ErrorBody } } });

/**
 * Register the export routes on `api` (the API-key context of src/results/routes.ts). On
 * PostgreSQL the Parquet writer is loaded now, with the server's other modules; the embedded
 * service (PGlite) loads it with its first Parquet export (~30 MiB it need not spend before).
 */
export async function registerExports(api: FastifyInstance, deps: Deps, errors: Record<number, unknown>): Promise<void> {
  if (deps.db.dedicatedClient) await loadParquet();
  const handler = (name: ExportName) => async (req: FastifyRequest, reply: FastifyReply) => {
    const query = req.query as z.output<typeof EXPORT_QUERY>;
    reply.header('vary', 'Accept, Accept-Encoding');
    const format = negotiateFormat(req.headers.accept, query.format);
    if (!format) {
      throw new ApiError(
        'not_acceptable',
        query.format
          ? `Accept does not allow ${FORMATS[query.format]} (format=${query.format})`
          : 'Accept: exports are application/x-ndjson, text/csv or application/vnd.apache.parquet',
      );
    }
    const coding = negotiateEncoding(req.headers['accept-encoding']);
    if (!coding) throw new ApiError('not_acceptable', 'Accept-Encoding: exports are sent as zstd, gzip or identity, and all three are refused');
    const representation = () =>
      reply.type(CONTENT_TYPES[format]).header('cache-control', 'private, no-store').header('content-disposition', `attachment; filename="${name}.${format}"`);
    // HEAD: the headers of the format, without running an export (no watermark: none was taken).
    // An empty stream, not '': the GET's length is unknown (chunked), so no Content-Length: 0.
    if (req.method === 'HEAD') {
      if (coding !== 'identity') reply.header('content-encoding', coding);
      return representation().send(Readable.from([]));
    }
    const key = keyOf(req);
    // The response closes early only when the client left (or the socket failed) before the answer.
    const left = new AbortController();
    const leave = () => left.abort();
    reply.raw.once('close', leave);
    let running: Awaited<ReturnType<typeof startExport>>;
    try {
      running = await startExport(deps.db, {
        name,
        format,
        tenantId: key.tenantId,
        keyId: key.id,
        since: query.updated_since,
        max: deps.config.results.exportsMax,
        signal: left.signal,
      });
    } catch (err) {
      if (err instanceof ExportRefused) exportsTotal.inc({ export: name, format, outcome: 'refused' });
      else if (left.signal.aborted) {
        exportsTotal.inc({ export: name, format, outcome: 'aborted' });
        return reply.hijack(); // the client left: no one to answer
      }
      throw err;
    } finally {
      reply.raw.off('close', leave);
    }
    let failed = false;
    const watch = watchKey(deps, key.id, () => running.body.destroy(new ApiError('unauthorized', 'the API key was revoked during the export')));
    // A client that stops reading (or a query that long without a row) ends the export after the
    // idle timeout: it holds a snapshot, a connection and the key's export.
    const socket = req.raw.socket;
    const idle = () => socket.destroy();
    socket.setTimeout(deps.config.results.exportIdleTimeoutMs, idle);
    // finished(), not a 'close' listener: it also runs for an answer whose client left while the
    // export was starting (its 'close' already fired).
    finished(reply.raw, () => {
      clearInterval(watch);
      socket.off('timeout', idle); // the value is Node's again once the answer ends (keep-alive)
      const outcome = reply.raw.writableFinished && !failed ? 'completed' : 'aborted';
      exportsTotal.inc({ export: name, format, outcome });
      exportRows.inc({ export: name, format }, running.rows());
      if (outcome === 'aborted') running.body.destroy();
    });
    try {
      await started(running.body);
    } catch (err) {
      failed = true;
      if (req.raw.socket.destroyed) return reply.hijack(); // the client left: no one to answer
      // Answered once the key's slot is free (a bounded wait): a client that retries at once is not a second export.
      await Promise.race([running.released, sleep(RELEASE_WAIT_MS, undefined, { ref: false })]);
      throw err;
    }
    let body: Readable = running.body;
    if (coding !== 'identity') {
      // The fastest levels: at the defaults (zstd 3, gzip 6) compressing 1M NDJSON rows took ~5 s
      // of CPU, more than PostgreSQL writing them (bench/README.md "Streaming exports").
      const compress =
        coding === 'zstd'
          ? zlib.createZstdCompress({ params: { [zlib.constants.ZSTD_c_compressionLevel]: 1 } })
          : zlib.createGzip({ level: zlib.constants.Z_BEST_SPEED });
      body = pipeline(running.body, compress, () => {});
      reply.header('content-encoding', coding);
    }
    return representation().header('svc-consistent-through', running.watermark).send(body);
  };

  for (const name of EXPORTS) {
    api.get(
      `/exports/${name}`,
      {
        schema: {
          summary: `Export ${name}`,
          description:
            `${DOCS[name]} One snapshot, streamed; the watermark is \`Svc-Consistent-Through\`: pass it as \`updated_since\` next ` +
            'time for the rows changed since. One export at a time per API key.',
          tags: ['exports'],
          operationId: `export_${name.replace('-', '_')}`,
          security: [{ bearerKey: [] }, { headerKey: [] }],
          querystring: EXPORT_QUERY,
          response: {
            200: {
              description: 'The rows: NDJSON (one JSON object a line), CSV (header row) or Parquet.',
              content: {
                'application/x-ndjson': { schema: NDJSON_BODY },
                'text/csv': { schema: CSV_BODY },
                'application/vnd.apache.parquet': { schema: PARQUET_BODY },
              },
            },
            ...errors,
            406: errorJson('`not_acceptable`: `Accept` allows no format an export has, or refuses `format`; or `Accept-Encoding` refuses every coding.'),
          },
        },
      },
      handler(name),
    );
  }
}

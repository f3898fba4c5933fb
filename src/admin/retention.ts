/**
 * Retention (issue #23): per tenant, how long model-ledger request bodies, artifact content and
 * tombstones are kept (`retention_settings`, migration 0161), and the sweep that removes what is
 * older.
 *
 * | window | default | what the sweep does past it |
 * |---|---|---|
 * | `model_bodies` | 90 days | deletes `model_requests` bodies stored before the cutoff and used by no call since; the calls keep their counts, `request_sha256` set null |
 * | `artifact_content` | forever | sets `artifacts.content` null for artifacts submitted before the cutoff; the verdict and the result stay |
 * | `tombstones` | 30 days | deletes `deletions` rows older than the cutoff — a partner syncing less often than this must do a full pull |
 *
 * Days are whole positive numbers, or `forever` (stored null). The sweep works in batches of
 * `RETENTION_BATCH` rows, each its own short transaction (no long lock on a busy table), for every
 * tenant or one; sweeps of several processes may overlap safely (each batch locks its rows with
 * `FOR UPDATE SKIP LOCKED`). `now` is injectable so a
 * test can move the clock forward. `svc retention run` runs it now; the server runs it hourly as a
 * scheduled job of the job queue (`retentionQueue`, src/jobs).
 */
import type { Db, Queryable } from '../db/index.ts';
import { defineQueue } from '../jobs/index.ts';

/** A window in days, or null for forever. */
export type Days = number | null;

export interface RetentionSettings {
  artifact_content_days: Days;
  model_bodies_days: Days;
  tombstones_days: Days;
}

/** The defaults of a tenant without settings (issue #23). */
export const RETENTION_DEFAULTS: RetentionSettings = { artifact_content_days: null, model_bodies_days: 90, tombstones_days: 30 };

/** Rows per batch (each batch one transaction). */
export const RETENTION_BATCH = 500;

/** The settings of tenant `tenantId` (the defaults when it has none). */
export async function retentionOf(q: Queryable, tenantId: string): Promise<RetentionSettings> {
  const [row] = await q.query<RetentionSettings>(
    'select artifact_content_days, model_bodies_days, tombstones_days from retention_settings where tenant_id = $1',
    [tenantId],
  );
  return row ?? { ...RETENTION_DEFAULTS };
}

/** Change some windows of tenant `tenantId` (the others keep their value); returns the settings after. */
export async function setRetention(q: Queryable, tenantId: string, change: Partial<RetentionSettings>): Promise<RetentionSettings> {
  const next = { ...(await retentionOf(q, tenantId)), ...change };
  await q.query(
    `insert into retention_settings (tenant_id, artifact_content_days, model_bodies_days, tombstones_days) values ($1, $2, $3, $4)
     on conflict (tenant_id) do update set artifact_content_days = excluded.artifact_content_days,
       model_bodies_days = excluded.model_bodies_days, tombstones_days = excluded.tombstones_days, updated_at = clock_timestamp()`,
    [tenantId, next.artifact_content_days, next.model_bodies_days, next.tombstones_days],
  );
  return next;
}

/** What one sweep removed, summed over the tenants it covered. */
export interface SweepCounts {
  tenants: number;
  model_bodies: number;
  artifact_contents: number;
  tombstones: number;
}

const cutoff = (now: Date, days: Days) => (days === null ? null : new Date(now.getTime() - days * 86_400_000).toISOString());

/** Repeat `batch` (one transaction each) until it removes fewer than a full batch; the total. */
async function inBatches(db: Db, batch: (tx: Queryable) => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await db.transaction(batch);
    total += n;
    if (n < RETENTION_BATCH) return total;
  }
}

/** Run the sweep for `tenantId` (undefined: every tenant) as of `now`; returns what it removed. */
export async function runRetention(db: Db, options: { tenantId?: string; now?: Date } = {}): Promise<SweepCounts> {
  const now = options.now ?? new Date();
  const tenants = await db.query<{ id: string }>('select id from tenants where $1::uuid is null or id = $1::uuid order by id', [options.tenantId ?? null]);
  const counts: SweepCounts = { tenants: tenants.length, model_bodies: 0, artifact_contents: 0, tombstones: 0 };
  for (const { id } of tenants) {
    const s = await retentionOf(db, id);
    const bodies = cutoff(now, s.model_bodies_days);
    if (bodies) {
      counts.model_bodies += await inBatches(db, async (tx) => {
        const shas = (
          await tx.query<{ sha256: string }>(
            `select r.sha256 from model_requests r where r.tenant_id = $1 and r.created_at < $2::timestamptz
                and not exists (select 1 from model_calls c where c.tenant_id = r.tenant_id and c.request_sha256 = r.sha256 and c.started_at >= $2::timestamptz)
              limit ${RETENTION_BATCH} for update skip locked`,
            [id, bodies],
          )
        ).map((r) => r.sha256);
        if (!shas.length) return 0;
        await tx.query('update model_calls set request_sha256 = null where tenant_id = $1 and request_sha256 = any($2::text[])', [id, shas]);
        return (await tx.query('delete from model_requests where tenant_id = $1 and sha256 = any($2::text[]) returning sha256', [id, shas])).length;
      });
    }
    const content = cutoff(now, s.artifact_content_days);
    if (content) {
      counts.artifact_contents += await inBatches(
        db,
        async (tx) =>
          (
            await tx.query(
              `update artifacts set content = null where tenant_id = $1 and id in (
               select id from artifacts where tenant_id = $1 and created_at < $2::timestamptz and content is not null
               limit ${RETENTION_BATCH} for update skip locked)
             returning id`,
              [id, content],
            )
          ).length,
      );
    }
    const tombstones = cutoff(now, s.tombstones_days);
    if (tombstones) {
      counts.tombstones += await inBatches(
        db,
        async (tx) =>
          (
            await tx.query(
              `delete from deletions where tenant_id = $1 and (deleted_at, id) in (
               select deleted_at, id from deletions where tenant_id = $1 and deleted_at < $2::timestamptz
               order by deleted_at limit ${RETENTION_BATCH} for update skip locked)
             returning id`,
              [id, tombstones],
            )
          ).length,
      );
    }
  }
  return counts;
}

/** The retention sweep's job queue (src/jobs). */
export const RETENTION_QUEUE = 'retention-sweep';
/** When the sweep runs: at minute 0 of every hour (UTC). */
export const RETENTION_CRON = '0 * * * *';

/**
 * The hourly sweep as a scheduled job: one job per tick across all processes (pg-boss's cron),
 * run by whichever process takes it, one run at a time (`stately`: one queued, one running; a
 * tick while a sweep still runs queues at most one more). A run lasts at most an hour; a failed
 * run is retried twice, a minute apart, then waits for the next tick. The clock is the process's
 * (`deps.now`), so a test can move it.
 */
export const retentionQueue = defineQueue<{ tenant_id?: string }>({
  name: RETENTION_QUEUE,
  schedule: { cron: RETENTION_CRON },
  pollSeconds: 10, // an hourly job: a few seconds late costs nothing, fewer idle queries
  options: { policy: 'stately', retryLimit: 2, retryDelay: 60, expireInSeconds: 3600, retentionDays: 7 },
  handler: async (job, { deps, log }) => {
    const counts = await runRetention(deps.db, { tenantId: job.data.tenant_id, now: deps.now() });
    if (counts.model_bodies + counts.artifact_contents + counts.tombstones > 0) log.info({ retention: counts }, 'retention sweep');
    return counts;
  },
});

/**
 * The read replica (DATABASE_READ_URL, docs/scaling.md): reachable, a standby in recovery, and its
 * replay lag (`now() - pg_last_xact_replay_timestamp()`). A replica down or behind is a warning,
 * not an error: reads fall back to the primary (src/db/replica.ts). Lag is meaningful only while
 * the primary writes; an idle primary makes it grow without harm, hence the generous bound.
 */
import { openDb } from '../../db/index.ts';
import { redactUrl } from './database.ts';
import { ok, reason, warning, type DoctorContext, type Finding } from './types.ts';

/** Replay lag, in seconds, above which the replica is reported as behind. */
export const LAG_WARNING_SECONDS = 60;

export async function checkReplica({ config, timeoutMs }: DoctorContext): Promise<Finding | undefined> {
  if (!config.databaseReadUrl) return undefined;
  const where = redactUrl(config.databaseReadUrl);
  const db = await openDb({ databaseUrl: config.databaseReadUrl, dbPoolSize: 2, dbAcquireTimeoutMs: timeoutMs, dbStatementTimeoutMs: timeoutMs });
  try {
    const [row] = await db.query<{ standby: boolean; lag: number | null }>(
      'select pg_is_in_recovery() as standby, extract(epoch from now() - pg_last_xact_replay_timestamp())::float8 as lag',
    );
    if (!row!.standby)
      return warning(
        'replica',
        `${where} is not a standby (not in recovery): it is a primary`,
        'point DATABASE_READ_URL at a streaming replica of DATABASE_URL',
      );
    if (row!.lag !== null && row!.lag > LAG_WARNING_SECONDS) {
      return warning(
        'replica',
        `${where} replays ${Math.round(row!.lag)} s behind the primary (reads fall back to the primary when stale)`,
        "check the replica's replication (pg_stat_wal_receiver) and its load",
      );
    }
    return ok('replica', `${where}: a standby, ${row!.lag === null ? 'nothing replayed yet' : `${row!.lag.toFixed(1)} s behind`}`);
  } catch (err) {
    return warning(
      'replica',
      `cannot reach ${where} (${reason((err as { cause?: unknown }).cause ?? err)}); reads go to the primary meanwhile`,
      'start the replica, or correct DATABASE_READ_URL',
    );
  } finally {
    await db.close().catch(() => {});
  }
}

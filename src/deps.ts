/**
 * What every surface is built from: the validated config, the database (and its read replica), and an injectable
 * clock (seconds since the epoch for JWTs, a Date for everything else), so tests can move time.
 */
import type { Config } from './config.ts';
import type { Db } from './db/index.ts';

export interface Deps {
  config: Config;
  db: Db;
  /**
   * A streaming read replica of `db` (DATABASE_READ_URL), or undefined. Only reads that may lag
   * take it, through `fromReplica` (src/db/replica.ts): the results API and the learner reads.
   */
  readDb?: Db;
  /** The current time; tests may replace it. */
  now: () => Date;
}

/** Unix time in whole seconds (JWT `iat`/`exp`, RFC 7519 §2 NumericDate). */
export const epochSeconds = (d: Date) => Math.floor(d.getTime() / 1000);

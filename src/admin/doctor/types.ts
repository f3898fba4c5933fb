/**
 * `svc doctor`'s shapes (issue #25): a check's finding is `ok`, `warning` (works, but should be
 * changed) or `error` (the service cannot run or serve this part), with the fix in one sentence.
 */
import type { Config } from '../../config.ts';
import type { Env } from '../../config/parse.ts';
import type { Db } from '../../db/index.ts';

export type Status = 'ok' | 'warning' | 'error';

export interface Finding {
  /** What was checked: `config`, `database`, `judge`, `idp acme`, … */
  check: string;
  status: Status;
  /** What was found, one line. */
  message: string;
  /** What to do about it (warnings and errors). */
  fix?: string;
}

/** What the checks read: the raw environment, its parse, the config, and the open database (when it could be opened). */
export interface DoctorContext {
  source: NodeJS.ProcessEnv;
  env: Env;
  config: Config;
  db?: Db;
  /** Time cap of one network check, milliseconds. */
  timeoutMs: number;
}

export const ok = (check: string, message: string): Finding => ({ check, status: 'ok', message });
export const warning = (check: string, message: string, fix: string): Finding => ({ check, status: 'warning', message, fix });
export const error = (check: string, message: string, fix: string): Finding => ({ check, status: 'error', message, fix });

/** The reason of a failed network call in a few words: its code (ECONNREFUSED), a timeout, or its message. */
export function reason(err: unknown): string {
  const e = err as { name?: string; code?: string; cause?: { code?: string; message?: string }; message?: string };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return 'no answer in time';
  return e?.cause?.code ?? e?.code ?? e?.cause?.message ?? e?.message ?? String(err);
}

/**
 * Where a CLI command runs (DESIGN §6, "Admin CLI"):
 *
 * - `DATABASE_URL` set → directly against PostgreSQL (migrations applied first, idempotent).
 * - embedded, folder free → the CLI locks the PGlite folder, opens it, runs, closes, unlocks.
 * - embedded, folder held by a running server → the command is sent to that server's
 *   `POST /admin/v1/ops/:op` with the service-role key from the folder's secrets.json,
 *   so the CLI never opens a folder another process has open.
 *
 * Throws `AdminError` (what the operation refused) or `CliError` (cannot reach a target).
 */
import type { Config } from '../config.ts';
import { isDataDirLocked, lockDataDir, readServerInfo } from '../db/data-dir-lock.ts';
import { migrate, openDb, type Db } from '../db/index.ts';
import { AdminError, runOp, withBaseUrl, type OpName } from '../admin/ops.ts';

export class CliError extends Error {}

export interface Target {
  /** Human description: "PostgreSQL", "embedded folder …" or "running server at …". */
  describe: string;
  run(op: OpName, args: Record<string, unknown>): Promise<unknown>;
  /** Apply migrations; returns the versions applied now (a running server applied its own). */
  migrate(): Promise<number[]>;
}

async function direct(config: Config): Promise<Target> {
  const withDb = async <T>(fn: (db: Db) => Promise<T>): Promise<T> => {
    const unlock = config.dataDir ? await lockDataDir(config.dataDir) : async () => {};
    try {
      const db = await openDb(config);
      try {
        return await fn(db);
      } finally {
        await db.close();
      }
    } finally {
      await unlock();
    }
  };
  return {
    describe: config.databaseUrl ? 'PostgreSQL (DATABASE_URL)' : `embedded folder ${config.dataDir}`,
    run: (op, args) =>
      withDb(async (db) => {
        await migrate(db);
        return runOp(db, op, withBaseUrl(op, args, config.baseUrl));
      }),
    migrate: () => withDb(migrate),
  };
}

function viaServer(url: string, serviceRoleKey: string): Target {
  return {
    describe: `running server at ${url}`,
    async run(op, args) {
      let res: Response;
      try {
        res = await fetch(`${url}/admin/v1/ops/${op}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${serviceRoleKey}`, 'content-type': 'application/json' },
          body: JSON.stringify(args),
        });
      } catch {
        throw new CliError(`the data folder is held by a server at ${url}, but it does not answer`);
      }
      const body = (await res.json().catch(() => ({}))) as { data?: unknown; error?: { code: string; message: string } };
      if (res.ok) return body.data;
      const code = body.error?.code;
      if (code === 'not_found' || code === 'conflict' || code === 'invalid') throw new AdminError(code, body.error!.message);
      throw new CliError(`the server answered ${res.status}: ${body.error?.message ?? 'no details'}`);
    },
    migrate: async () => [],
  };
}

export async function resolveTarget(config: Config): Promise<Target> {
  if (config.databaseUrl || !(await isDataDirLocked(config.dataDir!))) return direct(config);
  const server = readServerInfo(config.dataDir!);
  if (!server) throw new CliError(`the data folder ${config.dataDir} is in use by another process; try again when it ends`);
  return viaServer(server.url, config.serviceRoleKey);
}

/**
 * A throwaway PostgreSQL cluster for fault tests (issue #11): made with Debian's
 * postgresql-common (`pg_createcluster`) on a free port, trusting local connections, with
 * durability off (fsync) since nothing in it outlives the test; stopped, started, restarted and
 * dropped by the test. Never the shared server on 5432.
 *
 * Needs the `pg_createcluster` tools and the right to use them (root or the postgres user):
 * `clusterUnavailable` says why not, so suites can `describe.skipIf` with that message.
 * A cluster left behind by a test process that died (its name carries the pid) is dropped
 * by the next `createCluster`.
 */
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { alive } from './pids.ts';

const PREFIX = 'svc_faults_';

/** The newest installed PostgreSQL major version (e.g. "15"), if any. */
function majorVersion(): string | undefined {
  if (!existsSync('/usr/lib/postgresql')) return undefined;
  return readdirSync('/usr/lib/postgresql')
    .filter((v) => /^\d+$/.test(v))
    .sort((a, b) => Number(b) - Number(a))[0];
}

/** Why a throwaway cluster cannot be made here, or undefined when it can. */
export const clusterUnavailable: string | undefined = !existsSync('/usr/bin/pg_createcluster')
  ? 'pg_createcluster (postgresql-common) is not installed'
  : !majorVersion()
    ? 'no PostgreSQL server binaries under /usr/lib/postgresql'
    : process.getuid?.() !== 0
      ? 'making a throwaway cluster needs root (pg_createcluster)'
      : undefined;

/** A free TCP port on loopback. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

const run = (cmd: string, args: string[]) => execFileSync(cmd, args, { stdio: 'pipe', timeout: 60_000 }).toString();
/** The same without blocking the event loop: an app under test in this process keeps serving. */
const runAsync = async (cmd: string, args: string[]) => (await promisify(execFile)(cmd, args, { timeout: 60_000 })).stdout;

/** Drop clusters of this helper whose test process is gone. */
function dropOrphans(version: string): void {
  for (const line of run('pg_lsclusters', ['-h']).split('\n')) {
    const [v, name] = line.trim().split(/\s+/);
    const pid = Number(name?.startsWith(PREFIX) ? name.slice(PREFIX.length).split('_')[0] : NaN);
    if (v === version && name && Number.isInteger(pid) && !alive(pid)) {
      try {
        run('pg_dropcluster', [version, name, '--stop']);
      } catch {
        // another test process got there first
      }
    }
  }
}

export interface Cluster {
  port: number;
  /** `postgres://postgres@127.0.0.1:<port>/<database>` */
  url(database?: string): string;
  stop(): Promise<void>;
  start(): Promise<void>;
  restart(): Promise<void>;
  /** Stop and delete the cluster (safe to call twice). */
  drop(): void;
}

export async function createCluster(): Promise<Cluster> {
  const version = majorVersion()!;
  dropOrphans(version);
  const name = `${PREFIX}${process.pid}_${randomBytes(3).toString('hex')}`;
  const port = await freePort();
  run('pg_createcluster', [
    version,
    name,
    '-p',
    String(port),
    '--start',
    '-o', 'fsync=off',
    '-o', 'synchronous_commit=off',
    '-o', 'full_page_writes=off',
    '-o', 'max_connections=60',
    '--',
    '--auth-host=trust',
    '--auth-local=trust',
  ]);
  let dropped = false;
  const ctl = async (action: string, ...extra: string[]) => void (await runAsync('pg_ctlcluster', [version, name, action, ...extra]));
  return {
    port,
    url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`,
    stop: () => ctl('stop', '-m', 'fast'),
    start: () => ctl('start'),
    restart: () => ctl('restart', '-m', 'fast'),
    drop() {
      if (dropped) return;
      dropped = true;
      run('pg_dropcluster', [version, name, '--stop']);
    },
  };
}

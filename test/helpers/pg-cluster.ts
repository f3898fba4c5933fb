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
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import { migrate, openDb, type Db } from '../../src/db/index.ts';
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

/** Why a streaming replica cannot be made here (`createReplica`), or undefined when it can. */
export const replicaUnavailable: string | undefined =
  clusterUnavailable ?? (!existsSync('/usr/bin/pg_basebackup') ? 'pg_basebackup (postgresql-client) is not installed' : undefined);

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
  /** postgresql-common's name of the cluster (`pg_lsclusters`). */
  name: string;
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
    '-o',
    'fsync=off',
    '-o',
    'synchronous_commit=off',
    '-o',
    'full_page_writes=off',
    '-o',
    'max_connections=60',
    '--',
    '--auth-host=trust',
    '--auth-local=trust',
  ]);
  return handle(version, name, port);
}

/** The `Cluster` of an existing cluster `version`/`name` on `port`. */
function handle(version: string, name: string, port: number): Cluster {
  let dropped = false;
  // Without systemd's redirect: the cluster is this test's, started and stopped by pg_ctl directly.
  const ctl = async (action: string, ...extra: string[]) =>
    void (await runAsync('pg_ctlcluster', ['--skip-systemctl-redirect', version, name, action, ...extra]));
  return {
    name,
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

/**
 * Create the database `svc` on `cluster` and open it migrated, with `options` (openDb's pool size
 * and timeouts, src/db/index.ts). The caller closes it.
 */
export async function createSvcDb(cluster: Cluster, options: Omit<Parameters<typeof openDb>[0], 'databaseUrl' | 'dataDir'> = {}): Promise<Db> {
  const admin = new pg.Client({ connectionString: cluster.url() });
  await admin.connect();
  try {
    await admin.query('create database svc');
  } finally {
    await admin.end();
  }
  const db = await openDb({ databaseUrl: cluster.url('svc'), ...options });
  await migrate(db);
  return db;
}

/**
 * A streaming replica of `primary` (a hot standby, issue #15): a cluster on another free port
 * whose data folder is a `pg_basebackup -R` of the primary (so it starts as a standby that
 * streams from it). Dropped like any other cluster of this helper.
 */
export async function createReplica(primary: Cluster): Promise<Cluster> {
  const version = majorVersion()!;
  const name = `${PREFIX}${process.pid}_${randomBytes(3).toString('hex')}`;
  const port = await freePort();
  run('pg_createcluster', [version, name, '-p', String(port), '-o', 'fsync=off', '-o', 'max_connections=60', '--', '--auth-host=trust', '--auth-local=trust']);
  const replica = handle(version, name, port);
  try {
    // Replace the new cluster's files (not its folder, which postgres owns) by a base backup.
    const dataDir = run('pg_conftool', ['-s', version, name, 'show', 'data_directory']).trim();
    for (const entry of readdirSync(dataDir)) rmSync(join(dataDir, entry), { recursive: true, force: true });
    await runAsync('runuser', [
      '-u',
      'postgres',
      '--',
      'pg_basebackup',
      '-h',
      '127.0.0.1',
      '-p',
      String(primary.port),
      '-U',
      'postgres',
      '-D',
      dataDir,
      '-R',
      '-X',
      'stream',
      '-c',
      'fast',
    ]);
    await replica.start();
  } catch (err) {
    replica.drop();
    throw err;
  }
  return replica;
}

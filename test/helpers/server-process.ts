/**
 * The real server as an operator runs it: a child process (`node --import tsx src/main.ts`, or
 * `npm start`) on loopback, port 0, with a fresh database of the suite's backend — an embedded
 * folder in a temp directory (PGlite), or a fresh PostgreSQL database (TEST_DATABASE_URL).
 * `startServerProcess` resolves once the server logs that it listens, and throws with its output
 * when it exits first.
 */
import { spawn, type ChildProcess, type SpawnOptions as NodeSpawnOptions } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { backend, freshDb, useServer } from './harness.ts';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Secrets a server on PostgreSQL requires (embedded servers make their own). */
const SECRETS = {
  SVC_JWT_SECRET: 'server-process-test-jwt-secret-0123456789-abcdefgh',
  SVC_ANON_KEY: 'sb_publishable_server_process_0123456789',
  SVC_SERVICE_ROLE_KEY: 'sb_secret_server_process_0123456789abcdef',
};

export interface SpawnedServer {
  child: ChildProcess;
  /** Everything the process wrote so far (stdout and stderr). */
  output(): string;
  /** Settles when the process exits, with its code or signal and the time since `start`. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
  /** The server's URL once it listens; rejects with its output when it exits first. */
  listening: Promise<string>;
}

export interface ServerProcess extends SpawnedServer {
  url: string;
}

export interface ServerDatabase {
  /** The variables that point a server at this database. */
  env: Record<string, string>;
  /** The embedded folder (PGlite backend only). */
  dataDir?: string;
  drop(): Promise<void>;
}

/** An embedded data folder in a temp directory. */
export function embeddedDatabase(): ServerDatabase {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-ops-'));
  return { env: { SVC_DATA_DIR: dataDir }, dataDir, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
}

/** A database of the suite's backend for server processes. */
export async function serverDatabase(): Promise<ServerDatabase> {
  if (backend === 'pglite') return embeddedDatabase();
  const { db, url, drop } = await freshDb();
  await db.close();
  return { env: { DATABASE_URL: url!, ...SECRETS }, drop };
}

export interface SpawnOptions {
  /** Run `npm start` instead of node. */
  npm?: boolean;
  /** In a process group of its own (the child's pid is the group's id), as a service manager starts it. */
  group?: boolean;
}

/** Spawn the server with `env` (added to PATH, HOME, loopback, port 0, info logs). */
export function spawnServer(env: Record<string, string>, options: SpawnOptions = {}): SpawnedServer {
  const start = Date.now();
  // The child's environment is built explicitly (vitest puts BASE_URL='/' into process.env).
  const childEnv = { PATH: process.env.PATH, HOME: process.env.HOME, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env };
  const how: NodeSpawnOptions = { cwd: ROOT, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'], detached: options.group ?? false };
  const child: ChildProcess = options.npm ? spawn('npm', ['start', '--silent'], how) : spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], how);
  let output = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() - start })),
  );
  const listening = new Promise<string>((resolve, reject) => {
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const m = /service listening on (http:\/\/[^"\s]+)/.exec(output);
      if (m) resolve(m[1]!);
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    void exited.then(({ code, signal }) => reject(new Error(`server exited (${code ?? signal}) before listening:\n${output}`)));
  });
  listening.catch(() => {});
  return { child, output: () => output, exited, listening };
}

/** Spawn the server and wait until it listens. */
export async function startServerProcess(env: Record<string, string>, options: SpawnOptions = {}): Promise<ServerProcess> {
  const server = spawnServer(env, options);
  return { ...server, url: await server.listening };
}

/** Kill what is still running (test cleanup). */
export function killAll(servers: SpawnedServer[]): void {
  for (const s of servers) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
}

/**
 * A server process on a database of its own (`serverDatabase`) for a test file or `describe`
 * block, instead of a `beforeAll`/`afterAll` pair: started before the block's tests with the
 * variables `env()` gives (it runs in the hook, so it may use what earlier hooks set up), killed
 * after them (SIGKILL, its exit awaited) and its database dropped. `timeout` (ms) bounds the
 * start. The handle forwards to the `ServerProcess`.
 */
export function useServerProcess(
  env: () => Record<string, string> | Promise<Record<string, string>> = () => ({}),
  options: SpawnOptions = {},
  timeout = 120_000,
): ServerProcess {
  return useServer(async () => {
    const database = await serverDatabase();
    let server: ServerProcess;
    try {
      server = await startServerProcess({ ...database.env, ...(await env()) }, options);
    } catch (err) {
      await database.drop();
      throw err;
    }
    return {
      ...server,
      close: async () => {
        killAll([server]);
        await server.exited;
        await database.drop();
      },
    };
  }, timeout);
}

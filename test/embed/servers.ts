/**
 * Loopback servers for the artifact-reading tests: a static site (routes → bodies) and a git
 * repository served over smart HTTP by `git http-backend` (the CGI program that ships with git),
 * behind a small node:http server. Both listen on 127.0.0.1, port 0.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export interface Loopback {
  url: string;
  /** Requests received, as `METHOD path`. */
  hits: string[];
  close(): Promise<void>;
}

async function listen(server: Server, hits: string[], extra: () => void = () => {}): Promise<Loopback> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
        extra();
      }),
  };
}

/** A route's answer: a body with a content type, a redirect, or a handler. */
export type Route =
  | { type: string; body: string | Buffer; status?: number }
  | { redirect: string; status?: number }
  | ((req: IncomingMessage, res: ServerResponse) => void);

/** Serve `routes` (path → answer); anything else is 404. */
export function startSite(routes: Record<string, Route>): Promise<Loopback> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    hits.push(`${req.method} ${path}`);
    const route = routes[path];
    if (!route) return void res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    if (typeof route === 'function') return route(req, res);
    if ('redirect' in route) return void res.writeHead(route.status ?? 302, { location: route.redirect }).end();
    res.writeHead(route.status ?? 200, { 'content-type': route.type }).end(route.body);
  });
  return listen(server, hits);
}

/**
 * A git repository with `files` (path → content) in one commit, served at `<url>/repo.git` by
 * `git http-backend`. `allowFilter` lets clients ask for a partial clone (`--filter`).
 */
export async function startGitServer(files: Record<string, string | Buffer>, options: { allowFilter?: boolean } = {}): Promise<Loopback> {
  const root = mkdtempSync(join(tmpdir(), 'svc-git-'));
  const work = join(root, 'work');
  mkdirSync(work);
  const git = (args: string[], cwd: string) =>
    execFileSync('git', args, {
      cwd,
      env: {
        PATH: process.env.PATH,
        HOME: root,
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_AUTHOR_NAME: 'Learner',
        GIT_AUTHOR_EMAIL: 'learner@example.test',
        GIT_COMMITTER_NAME: 'Learner',
        GIT_COMMITTER_EMAIL: 'learner@example.test',
      },
    });
  git(['init', '-q', '-b', 'main'], work);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(work, path)), { recursive: true });
    writeFileSync(join(work, path), content);
  }
  git(['add', '-A'], work);
  git(['commit', '-q', '-m', 'work'], work);
  git(['clone', '-q', '--bare', work, join(root, 'repo.git')], root);
  if (options.allowFilter ?? true) git(['config', 'uploadpack.allowFilter', 'true'], join(root, 'repo.git'));

  const hits: string[] = [];
  const server = createServer((req, res) => {
    const [path, query = ''] = (req.url ?? '/').split('?');
    hits.push(`${req.method} ${path}`);
    const cgi = spawn('git', ['http-backend'], {
      env: {
        PATH: process.env.PATH,
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: path,
        QUERY_STRING: query,
        REQUEST_METHOD: req.method,
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        GIT_PROTOCOL: String(req.headers['git-protocol'] ?? ''),
        REMOTE_ADDR: '127.0.0.1',
      },
    });
    req.pipe(cgi.stdin);
    const out: Buffer[] = [];
    cgi.stdout.on('data', (c: Buffer) => out.push(c));
    cgi.on('close', () => {
      const all = Buffer.concat(out);
      const split = all.indexOf('\r\n\r\n') >= 0 ? all.indexOf('\r\n\r\n') : all.indexOf('\n\n');
      const sep = all.indexOf('\r\n\r\n') >= 0 ? 4 : 2;
      const headers: Record<string, string> = {};
      let status = 200;
      for (const line of all.subarray(0, split).toString().split(/\r?\n/)) {
        const i = line.indexOf(':');
        if (i < 0) continue;
        const name = line.slice(0, i).trim().toLowerCase();
        const value = line.slice(i + 1).trim();
        if (name === 'status') status = Number(value.split(' ')[0]);
        else headers[name] = value;
      }
      if (!res.destroyed) res.writeHead(status, headers).end(all.subarray(split + sep));
    });
  });
  return listen(server, hits, () => rmSync(root, { recursive: true, force: true }));
}

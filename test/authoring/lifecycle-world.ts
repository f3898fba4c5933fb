/**
 * The world of the lifecycle tests (archive, rubric versions, moves): the real app graded by the
 * loopback test model, tenant `acme` trusting the test IdP, an author of `acme` (who is also an
 * author of `globex`, for cross-tenant refusals) on the MCP SDK client, a Results API key of
 * `acme`, and learners who sign in through the IdP and submit to the embed judge.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { post, startEmbedWorld, type EmbedWorld } from '../embed/fixtures.ts';
import { useServer } from '../helpers/harness.ts';
import { connect, ok, signIn, type Structured } from './helpers.ts';

export interface LifecycleWorld {
  w: EmbedWorld;
  /** The author of acme and globex, and their access token. */
  author: Client;
  authorToken: string;
  /** An author of globex only. */
  outsider: Client;
  apiKey: string;
  close(): Promise<void>;
}

export async function startLifecycleWorld(): Promise<LifecycleWorld> {
  const w = await startEmbedWorld();
  const t = w.t;
  await t.op('tenant.create', { slug: 'globex' });
  const password = 'correct horse battery';
  for (const email of ['author@acme.test', 'author@globex.test']) await t.op('user.create', { email, password });
  await t.op('author.grant', { tenant: 'acme', email: 'author@acme.test' });
  await t.op('author.grant', { tenant: 'globex', email: 'author@acme.test' });
  await t.op('author.grant', { tenant: 'globex', email: 'author@globex.test' });
  const authorToken = await signIn(t, 'author@acme.test', password);
  const author = await connect(t, authorToken);
  const outsider = await connect(t, await signIn(t, 'author@globex.test', password));
  const apiKey = (await t.op('key.create', { tenant: 'acme', name: 'dashboard' })).key as string;
  return {
    w,
    author,
    authorToken,
    outsider,
    apiKey,
    close: async () => {
      await Promise.all([author.close(), outsider.close()]);
      await w.close();
    },
  };
}

/** The lifecycle world of a test file or `describe` block: started before its tests, closed after them. */
export function useLifecycleWorld(): LifecycleWorld {
  return useServer(startLifecycleWorld);
}

/** A learner of `tenant` (IdP subject `sub`): their session token (also usable on /mcp). */
export async function learnerSession(w: EmbedWorld, sub: string, tenant = 'acme'): Promise<string> {
  const res = await post(w.t, '/v1/embed/session', { tenant, idp_token: await w.idp.sign({ sub }) });
  return res.body.access_token as string;
}

/** Submit a document to the judge as the learner of `token`: the status and body. */
export const submit = (w: EmbedWorld, token: string, activityId: string, content = 'A fine note.') =>
  post(w.t, '/v1/embed/judge', { tenant: 'acme', activity_id: activityId, artifact: { kind: 'document', content } }, { authorization: `Bearer ${token}` });

/** GET `path` with a bearer token: the status and parsed body. */
export async function get(w: EmbedWorld, path: string, token: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${w.t.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: await res.json() };
}

const doc = (title: string) => ({ title, kind: 'document', spec: `Write ${title}`, rubric: [{ criterion: 'States the problem' }] });

/**
 * Import a program into `tenant` with `units` units × `lessons` lessons × `activities` document
 * activities (titles U1, U1.L1, U1.L1.A1 …); returns get_program's tree.
 */
export async function importTree(client: Client, tenant: string, units = 2, lessons = 2, activities = 2): Promise<Structured> {
  const range = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
  const imported = await ok(client, 'import_program', {
    tenant,
    external_id: `tree-${Math.random()}`,
    title: `Program of ${tenant}`,
    units: range(units).map((u) => ({
      title: `U${u}`,
      lessons: range(lessons).map((l) => ({ title: `U${u}.L${l}`, activities: range(activities).map((a) => doc(`U${u}.L${l}.A${a}`)) })),
    })),
  });
  return ok(client, 'get_program', { id: imported.id });
}

/**
 * Results-API keys: format and entropy, what is stored, constant-time lookup by prefix,
 * last_used_at written in batches (not once per request), `svc key list`, and revocation
 * reaching the process through LISTEN/NOTIFY rather than cache expiry.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { findLiveKey } from '../../src/results/api-keys.ts';
import { backend, freshDb, startApp, useApp, useFixture } from '../helpers/harness.ts';
import { expectError, get, getJson, seedTenant } from './fixtures.ts';

const t = useApp();
const a = useFixture(() => seedTenant(t, 'alpha'));

describe('key format and storage', () => {
  it('is svc_<12 base62>_<40 base62>, all distinct, and only the prefix and sha256 are stored', async () => {
    const keys: { key: string; prefix: string; id: string }[] = [];
    for (let i = 0; i < 24; i++) keys.push(await t.op('key.create', { tenant: 'alpha', name: `k${i}` }));
    const seen = new Set<string>();
    for (const k of keys) {
      expect(k.key).toMatch(/^svc_[0-9A-Za-z]{12}_[0-9A-Za-z]{40}$/);
      expect(k.key.slice(4, 16)).toBe(k.prefix);
      seen.add(k.key.slice(17));
    }
    expect(seen.size).toBe(keys.length);
    // The secrets use the whole alphabet (a CSPRNG over 62 symbols, not hex or a clock).
    const alphabet = new Set([...seen].join(''));
    expect(alphabet.size).toBeGreaterThan(50);
    const rows = await t.db.query<Record<string, unknown>>('select * from api_keys where id = any($1::uuid[])', [keys.map((k) => k.id)]);
    for (const row of rows) {
      const k = keys.find((x) => x.id === row.id)!;
      expect(row.key_hash).toBe(createHash('sha256').update(k.key).digest('hex'));
      expect(JSON.stringify(row)).not.toContain(k.key.slice(17));
    }
  });

  it('finds a key by prefix and refuses any other secret with that prefix', async () => {
    const k = await t.op('key.create', { tenant: 'alpha', name: 'lookup' });
    expect(await findLiveKey(t.db, k.key)).toMatchObject({ id: k.id, tenantId: a.id, prefix: k.prefix });
    const secret = k.key.slice(17);
    for (const other of [`${secret.slice(0, -1)}${secret.at(-1) === 'A' ? 'B' : 'A'}`, `${secret[0] === 'A' ? 'B' : 'A'}${secret.slice(1)}`, 'A'.repeat(40)]) {
      expect(await findLiveKey(t.db, `svc_${k.prefix}_${other}`)).toBeUndefined();
    }
    await expectError(await get(t, '/v1/progress', `svc_${k.prefix}_${'A'.repeat(40)}`), 401, 'unauthorized');
  });

  it('`svc key list` shows name, prefix, created, last used, revoked — never the key or its hash', async () => {
    const listed = await t.op('key.list', { tenant: 'alpha' });
    for (const k of listed) {
      expect(Object.keys(k).sort()).toEqual(['created_at', 'id', 'last_used_at', 'name', 'prefix', 'rate_limit', 'revoked_at', 'tenant_id']);
    }
    expect(listed.find((k: any) => k.prefix === a.keyPrefix)).toMatchObject({ name: 'dashboard', revoked_at: null });
  });
});

describe.skipIf(backend !== 'postgres')('svc key list on the command line (PostgreSQL: the CLI opens the database itself)', () => {
  it('prints the columns', async () => {
    const fresh = await freshDb();
    try {
      const app = await startApp({}, { db: fresh.db });
      try {
        await app.op('tenant.create', { slug: 'cli' });
        const k = await app.op('key.create', { tenant: 'cli', name: 'dashboard' });
        await getJson(app, '/v1/progress', k.key);
        await app.op('key.revoke', { prefix: k.prefix });
      } finally {
        await app.close(); // writes last_used_at
      }
      const root = fileURLToPath(new URL('../../', import.meta.url));
      const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'key', 'list', 'cli'], {
        cwd: root,
        env: { PATH: process.env.PATH, DATABASE_URL: fresh.url!, LOG_LEVEL: 'silent' },
      });
      const [header, row] = stdout.trim().split('\n');
      expect(header!.split(/\s+/)).toEqual(['prefix', 'name', 'created_at', 'last_used_at', 'revoked_at', 'rate_limit']);
      const cells = row!.split(/\s{2,}/);
      expect(cells[1]).toBe('dashboard');
      expect(cells[3]).not.toBe('-'); // last used
      expect(cells[4]).not.toBe('-'); // revoked
    } finally {
      await fresh.drop();
    }
  });
});

describe('last_used_at', () => {
  it('is written in one batch, not once per request', async () => {
    // A second app on the same database whose flush would only run on close.
    const app = await startApp({ results: { ...t.deps.config.results, keyUsageFlushMs: 3_600_000 } }, { db: t.db });
    const k = await app.op('key.create', { tenant: 'alpha', name: 'usage' });
    // Count UPDATE statements on api_keys from here on.
    await t.db.exec(`
      create table if not exists key_update_log (at timestamptz default clock_timestamp());
      create or replace function test_key_update_log() returns trigger language plpgsql as $$
        begin insert into key_update_log default values; return null; end $$;
      drop trigger if exists key_update_log on api_keys;
      create trigger key_update_log after update on api_keys for each statement execute function test_key_update_log();
    `);
    try {
      const before = new Date();
      for (let i = 0; i < 30; i++) await getJson(app, '/v1/activity-results?limit=1', k.key);
      const count = async () => (await t.db.query<{ n: number }>('select count(*)::int as n from key_update_log'))[0]!.n;
      expect(await count()).toBe(0);
      const lastUsed = async () =>
        (await t.db.query<{ last_used_at: string | null }>(`select to_json(last_used_at) #>> '{}' as last_used_at from api_keys where id = $1`, [k.id]))[0]!
          .last_used_at;
      expect(await lastUsed()).toBeNull();
      await app.close(); // the pending batch is written on close
      expect(await count()).toBe(1);
      const used = await lastUsed();
      expect(used).not.toBeNull();
      expect(Date.parse(used!)).toBeGreaterThanOrEqual(before.getTime() - 1000);
    } finally {
      await t.db.exec('drop trigger if exists key_update_log on api_keys; drop table if exists key_update_log; drop function if exists test_key_update_log()');
    }
  });

  it('is written periodically by a running server', async () => {
    const app = await startApp({ results: { ...t.deps.config.results, keyUsageFlushMs: 100 } }, { db: t.db });
    try {
      const k = await app.op('key.create', { tenant: 'alpha', name: 'periodic' });
      await getJson(app, '/v1/progress', k.key);
      await expect
        .poll(async () => (await t.db.query<{ ok: boolean }>('select last_used_at is not null as ok from api_keys where id = $1', [k.id]))[0]!.ok, {
          timeout: 5000,
          interval: 20,
        })
        .toBe(true);
    } finally {
      await app.close();
    }
  });
});

describe('revocation in a running process', () => {
  it('takes effect through the NOTIFY, long before a (deliberately long) cache entry would expire', async () => {
    const app = await startApp({ results: { ...t.deps.config.results, keyCacheTtlMs: 600_000 } }, { db: t.db });
    try {
      const k = await app.op('key.create', { tenant: 'alpha', name: 'notify' });
      await getJson(app, '/v1/progress', k.key); // cached now, for ten minutes
      await getJson(app, '/v1/progress', k.key);
      // Revoked straight in SQL, as an operator would: the trigger sends the notice.
      await t.db.query('update api_keys set revoked_at = now() where id = $1', [k.id]);
      await expect.poll(async () => (await get(app, '/v1/progress', k.key)).status === 401, { timeout: 5000, interval: 20 }).toBe(true);
      await expectError(await get(app, '/v1/progress', k.key), 401, 'unauthorized');
      // Another key of the tenant keeps working from the cache.
      await getJson(app, '/v1/progress', a.key);
    } finally {
      await app.close();
    }
  });

  it('also when the key row is deleted', async () => {
    const app = await startApp({ results: { ...t.deps.config.results, keyCacheTtlMs: 600_000 } }, { db: t.db });
    try {
      const k = await app.op('key.create', { tenant: 'alpha', name: 'deleted' });
      await getJson(app, '/v1/progress', k.key);
      await t.db.query('delete from api_keys where id = $1', [k.id]);
      await expect.poll(async () => (await get(app, '/v1/progress', k.key)).status === 401, { timeout: 5000, interval: 20 }).toBe(true);
    } finally {
      await app.close();
    }
  });
});

/**
 * Every key of tenant data leads with tenant_id (DESIGN §4; issue #15, docs/scaling.md): what
 * distributing the tables by tenant_id on Citus requires — a primary key or unique constraint
 * (or unique index) must contain the distribution column, and a foreign key between two
 * distributed tables must match on it. Read from the catalog of the migrated schema, so a new
 * table or constraint that breaks it fails here.
 *
 * A table is tenant-owned when it has a NOT NULL tenant_id column, except the reference tables
 * below (Citus copies those to every node). Tables whose tenant_id may be null are listed with the
 * reason; they are held to the same rule for their unique keys, and only their primary key is (id).
 */
import { describe, expect, it } from 'vitest';
import { useFreshDb } from '../helpers/harness.ts';

/** Tenant-carrying tables that stay whole on every node (Citus reference tables), and why. */
const REFERENCE: Record<string, string> = {
  'public.api_keys': 'a key is looked up by its prefix before its tenant is known (unique prefix and key_hash)',
  'public.lti_platforms': 'an LTI launch finds its registration by issuer + client id before its tenant is known (unique issuer, client_id)',
  'public.lti_registration_codes': 'the platform opens /lti/v1/register/<code>: the code is found by its hash before its tenant is known (unique code_sha256)',
};

/** Tables whose tenant_id may be null (so it cannot be in their primary key), and why. */
const TENANT_OPTIONAL: Record<string, string> = {
  'public.programs': 'catalog programs have no tenant (DESIGN §4)',
  'public.units': 'units of catalog programs',
  'public.lessons': 'lessons of catalog programs',
  'public.activities': 'activities of catalog programs',
  'auth.sessions': 'a session is a user’s; tenant_id only binds an embed session to the tenant that minted it',
};

const store = useFreshDb();

interface TableRow {
  name: string;
  not_null: boolean;
}
interface KeyRow {
  table_name: string;
  key_name: string;
  kind: 'primary key' | 'unique' | 'unique index';
  columns: string[];
}
interface ForeignKeyRow {
  table_name: string;
  key_name: string;
  columns: string[];
  referenced: string;
  referenced_columns: string[];
}

/** Tables (schema-qualified) with a tenant_id column, and whether it is NOT NULL. */
const tenantTables = () =>
  store.db.query<TableRow>(
    `select format('%s.%s', n.nspname, c.relname) as name, a.attnotnull as not_null
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
       join pg_attribute a on a.attrelid = c.oid and a.attname = 'tenant_id' and not a.attisdropped
      where c.relkind in ('r', 'p') and n.nspname not in ('pg_catalog', 'information_schema')
      order by 1`,
  );

/** Primary keys, unique constraints and other unique indexes of `tables`, with their columns in order. */
const keysOf = (tables: string[]) =>
  store.db.query<KeyRow>(
    `select format('%s.%s', n.nspname, c.relname) as table_name, ic.relname as key_name,
            case when i.indisprimary then 'primary key' when con.oid is not null then 'unique' else 'unique index' end as kind,
            array(select a.attname::text from unnest(i.indkey) with ordinality k(attnum, ord)
                    join pg_attribute a on a.attrelid = c.oid and a.attnum = k.attnum order by k.ord) as columns
       from pg_index i
       join pg_class c on c.oid = i.indrelid join pg_namespace n on n.oid = c.relnamespace
       join pg_class ic on ic.oid = i.indexrelid
       left join pg_constraint con on con.conindid = i.indexrelid and con.contype in ('p', 'u')
      where i.indisunique and format('%s.%s', n.nspname, c.relname) = any($1::text[])
      order by 1, 2`,
    [tables],
  );

/** Foreign keys from one of `tables` to another of them. */
const foreignKeysAmong = (tables: string[]) =>
  store.db.query<ForeignKeyRow>(
    `select format('%s.%s', n.nspname, c.relname) as table_name, con.conname as key_name,
            array(select a.attname::text from unnest(con.conkey) with ordinality k(attnum, ord)
                    join pg_attribute a on a.attrelid = con.conrelid and a.attnum = k.attnum order by k.ord) as columns,
            format('%s.%s', rn.nspname, r.relname) as referenced,
            array(select a.attname::text from unnest(con.confkey) with ordinality k(attnum, ord)
                    join pg_attribute a on a.attrelid = con.confrelid and a.attnum = k.attnum order by k.ord) as referenced_columns
       from pg_constraint con
       join pg_class c on c.oid = con.conrelid join pg_namespace n on n.oid = c.relnamespace
       join pg_class r on r.oid = con.confrelid join pg_namespace rn on rn.oid = r.relnamespace
      where con.contype = 'f' and format('%s.%s', n.nspname, c.relname) = any($1::text[])
        and format('%s.%s', rn.nspname, r.relname) = any($1::text[])
      order by 1, 2`,
    [tables],
  );

describe('keys lead with tenant_id (what distributing by tenant_id on Citus requires)', () => {
  it('lists exactly the tables whose tenant_id may be null', async () => {
    const optional = (await tenantTables()).filter((t) => !t.not_null).map((t) => t.name);
    expect(optional).toEqual(Object.keys(TENANT_OPTIONAL).sort());
  });

  it('gives every tenant-owned table a primary key that leads with tenant_id', async () => {
    const owned = (await tenantTables()).filter((t) => t.not_null && !REFERENCE[t.name]).map((t) => t.name);
    expect(owned.length).toBeGreaterThan(10);
    const keys = await keysOf(owned);
    const wrong = owned.flatMap((table) => {
      const pk = keys.find((k) => k.table_name === table && k.kind === 'primary key');
      return pk?.columns[0] === 'tenant_id' ? [] : [`${table}: ${pk ? `primary key (${pk.columns.join(', ')})` : 'no primary key'}`];
    });
    expect(wrong).toEqual([]);
  });

  it('makes every unique constraint and unique index of tenant data lead with tenant_id', async () => {
    const tables = (await tenantTables()).filter((t) => !REFERENCE[t.name]).map((t) => t.name);
    const wrong = (await keysOf(tables))
      .filter((k) => k.columns[0] !== 'tenant_id' && !(k.kind === 'primary key' && TENANT_OPTIONAL[k.table_name]))
      .map((k) => `${k.table_name}: ${k.kind} ${k.key_name} (${k.columns.join(', ')})`);
    expect(wrong).toEqual([]);
  });

  it('matches foreign keys between tenant-owned tables on tenant_id', async () => {
    const owned = (await tenantTables()).filter((t) => t.not_null && !REFERENCE[t.name]).map((t) => t.name);
    const wrong = (await foreignKeysAmong(owned))
      .filter((fk) => fk.columns[0] !== 'tenant_id' || fk.referenced_columns[0] !== 'tenant_id')
      .map((fk) => `${fk.table_name}.${fk.key_name}: (${fk.columns.join(', ')}) → ${fk.referenced} (${fk.referenced_columns.join(', ')})`);
    expect(wrong).toEqual([]);
  });

  it('refuses a row that points at another tenant’s row', async () => {
    const [t1, t2] = await store.db.query<{ id: string }>(`insert into tenants (slug, name) values ('keys-a', 'A'), ('keys-b', 'B') returning id`);
    const [program] = await store.db.query<{ id: string }>(`insert into programs (tenant_id, title) values ($1, 'P') returning id`, [t1!.id]);
    const [unit] = await store.db.query<{ id: string }>(`insert into units (program_id, title) values ($1, 'U') returning id`, [program!.id]);
    const [lesson] = await store.db.query<{ id: string }>(`insert into lessons (unit_id, title) values ($1, 'L') returning id`, [unit!.id]);
    const [activity] = await store.db.query<{ id: string }>(
      `insert into activities (lesson_id, title, kind, spec) values ($1, 'A', 'site', 's') returning id`,
      [lesson!.id],
    );
    const [auth] = await store.db.query<{ id: string }>(`insert into auth.users (email) values ('keys@example.test') returning id`);
    const [user] = await store.db.query<{ id: string }>(`insert into users (auth_user_id) values ($1) returning id`, [auth!.id]);
    const [result] = await store.db.query<{ id: string }>(
      `insert into activity_results (tenant_id, activity_id, lesson_id, program_id, user_id, status)
       values ($1, $2, $3, $4, $5, 'in_progress') returning id`,
      [t1!.id, activity!.id, lesson!.id, program!.id, user!.id],
    );
    const artifact = (tenantId: string) =>
      store.db.query(`insert into artifacts (tenant_id, result_id, activity_id, user_id, kind) values ($1, $2, $3, $4, 'site')`, [
        tenantId,
        result!.id,
        activity!.id,
        user!.id,
      ]);
    await expect(artifact(t2!.id)).rejects.toMatchObject({ code: '23503' });
    await expect(artifact(t1!.id)).resolves.toBeDefined();
  });
});

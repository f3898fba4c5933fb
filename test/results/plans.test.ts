/**
 * Every page statement of the Results API keeps its plan whatever the tenant's size: the
 * statement functions force the generic plan (so PostgreSQL does not re-plan each call), and each
 * shape's generic plan — planned on a loaded database, as svc_results under RLS — reads its table
 * through an index in keyset order: no sequential scan of it, and no sort except of one learner's
 * rows (a `user_id` filter in the updated_since feed: one row per activity).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { allStatements, installStatements, statementFunction, type PageStatement } from '../../src/results/queries.ts';
import { useFreshDb } from '../helpers/harness.ts';
import { genericPlan, planNodes, type PlanNode } from '../helpers/plans.ts';
import { loadResults } from '../helpers/results-load.ts';

const store = useFreshDb();
let bigTenant: string;
beforeAll(async () => {
  await installStatements(store.db);
  await loadResults(store.db, { rows: 20_000, tenants: 5 });
  [{ id: bigTenant }] = (await store.db.query<{ id: string }>('select tenant_id as id from activity_results group by 1 order by count(*) desc limit 1')) as [
    { id: string },
  ];
}, 120_000);

/** Each listed table by the noun in its statements' names, with its keyset columns (order key of the feed, row id). */
const TABLE_OF_NOUN = {
  activity_result: { table: 'activity_results', feedKey: 'updated_at', id: 'id' },
  artifact: { table: 'artifacts', feedKey: 'updated_at', id: 'id' },
  progress: { table: 'progress', feedKey: 'updated_at', id: 'id' },
  learner: { table: 'memberships', feedKey: 'updated_at', id: 'user_id' },
  program: { table: 'programs', feedKey: 'updated_at', id: 'id' },
  deletion: { table: 'deletions', feedKey: 'deleted_at', id: 'id' },
  // The audit log (issue #23): a listing in (at, id) order only.
  audit_event: { table: 'audit_events', feedKey: 'at', id: 'id', createdKey: 'at' },
} as const;
const TABLES = Object.values(TABLE_OF_NOUN).map((t) => t.table);
/** The table a statement lists or reads, by its name (results_list_artifacts, results_get_artifact, …). */
const infoOf = (statement: PageStatement) => Object.entries(TABLE_OF_NOUN).find(([noun]) => new RegExp(`^results_(list|get)_${noun}`).test(statement.name))![1];
const tableOf = (statement: PageStatement) => infoOf(statement).table;
/** The columns a statement filters on by equality, besides the tenant (and the id of a get). */
const filtersOf = (statement: PageStatement) =>
  [...statement.text.matchAll(/t\.(\w+) = p_args\[\d+\]::(?:uuid|text)/g)]
    .map((m) => m[1]!)
    .filter((c) => c !== 'tenant_id' && !(statement.name.startsWith('results_get_') && c === infoOf(statement).id));

describe('page statements', () => {
  it('force the generic plan in every statement function', async () => {
    const names = allStatements().map((s) => statementFunction(s).name);
    const rows = await store.db.query<{ proname: string; proconfig: string[] | null }>(
      `select proname, proconfig from pg_proc where pronamespace = 'svc'::regnamespace and proname = any($1::text[])`,
      [names],
    );
    expect(rows).toHaveLength(names.length);
    for (const row of rows) expect(row.proconfig ?? [], row.proname).toContain('plan_cache_mode=force_generic_plan');
  });

  it('have a keyset index for each filter, except the documented ones (migration 0050)', async () => {
    const indexes = await store.db.query<{ table: string; columns: string[] }>(
      `select c.relname as table, array(select a.attname::text from unnest(i.indkey) with ordinality k(n, o)
                                         join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.n order by k.o) as columns
         from pg_index i join pg_class c on c.oid = i.indrelid
        where c.relname = any($1::text[]) and c.relnamespace = 'public'::regnamespace`,
      [TABLES],
    );
    const has = (table: string, columns: string[]) => indexes.some((i) => i.table === table && i.columns.join() === columns.join());
    // Filters that scan another index instead: a learner's rows are few (one per activity), `status`
    // has two values, and progress feeds walk the sync index from updated_since.
    const UNINDEXED_IN_FEED: Record<string, string[]> = {
      activity_results: ['user_id', 'status'],
      artifacts: ['user_id'],
      progress: ['user_id', 'program_id'],
      deletions: ['resource'],
    };
    const missing: string[] = [];
    for (const statement of allStatements().filter((s) => s.name.startsWith('results_list_'))) {
      const { table, feedKey, id } = infoOf(statement);
      const info = infoOf(statement) as { createdKey?: string };
      const key = statement.sync ? feedKey : (info.createdKey ?? 'created_at');
      const filters = filtersOf(statement);
      const wanted = [[], ...filters.filter((f) => !(statement.sync && UNINDEXED_IN_FEED[table]?.includes(f))).map((f) => [f])];
      for (const cols of wanted) if (!has(table, ['tenant_id', ...cols, key, id])) missing.push(`${table} (tenant_id, ${[...cols, key].join(', ')}, ${id})`);
    }
    expect([...new Set(missing)]).toEqual([]);
  });

  for (const statement of allStatements()) {
    const filters = filtersOf(statement);
    it(`${statement.name} (${filters.join(', ') || 'no filter'}): an index scan of its table, in keyset order`, async () => {
      const plan = await genericPlan(store.db, { ...statement, args: [bigTenant, ...statement.args.slice(1)] });
      const table = tableOf(statement);
      const nodes = planNodes(plan);
      expect(
        nodes.filter((n) => n['Relation Name'] === table).map((n) => n['Node Type']),
        JSON.stringify(plan),
      ).toEqual(['Index Scan']);
      // Sorts of the table's rows before the LIMIT (not the one of a row's artifact_ids, nor
      // PostgreSQL 17's sort of the page's ≤ limit + 1 rows for the outer json_agg).
      const readsUnlimited = (n: PlanNode): boolean => n['Relation Name'] === table || (n['Node Type'] !== 'Limit' && (n.Plans ?? []).some(readsUnlimited));
      const sorts = nodes.filter((n) => /Sort/.test(n['Node Type']) && readsUnlimited(n));
      // Sorted: one learner's rows in the feed, and the learner of one IdP subject (by primary key).
      const fewRows = (statement.sync && filters.includes('user_id')) || statement.text.includes('results_learners_by_subject');
      if (!fewRows) expect(sorts, JSON.stringify(plan)).toEqual([]);
    });
  }
});

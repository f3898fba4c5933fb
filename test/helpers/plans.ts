/**
 * The generic plan of a Results-API page statement, as its statement function runs it: the
 * statement prepared with `p_args` as its one text[] parameter, planned with
 * `plan_cache_mode = force_generic_plan` as the role `svc_results` with the tenant set (so the
 * RLS policies are in the plan). Used by test/results/plans.test.ts.
 */
import { asResultsTenant, type Db } from '../../src/db/index.ts';
import type { PageStatement } from '../../src/results/queries.ts';

/** A node of PostgreSQL's `EXPLAIN (FORMAT JSON)` output (the fields read here). */
export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

/** Every node of a plan, depth first. */
export function planNodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(planNodes)];
}

/** The generic plan of `statement` (its arguments bound as the function binds them). */
export async function genericPlan(db: Db, statement: PageStatement): Promise<PlanNode> {
  const text = statement.text.replace(/p_args/g, '$1').replace(/\bhorizon\b/g, 'now()');
  return asResultsTenant(db, statement.args[0]!, async (tx) => {
    await tx.exec(`set local plan_cache_mode = force_generic_plan; prepare svc_plan_check (text[]) as ${text}`);
    try {
      const [row] = await tx.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] | string }>(
        `explain (format json) execute svc_plan_check ('${arrayLiteral(statement.args)}'::text[])`,
      );
      const plan = row!['QUERY PLAN'];
      return (typeof plan === 'string' ? JSON.parse(plan) : plan)[0].Plan;
    } finally {
      await tx.exec('deallocate svc_plan_check');
    }
  });
}

/**
 * PostgreSQL's text form of an array of `values` (`{"a","b"}`, each element quoted and escaped),
 * for arguments bound without a driver: EXECUTE here, pgbench's `-D` in bench/results-api.ts.
 */
export const arrayLiteral = (values: readonly string[]) => `{${values.map((v) => `"${v.replace(/["\\]/g, (c) => `\\${c}`)}"`).join(',')}}`;

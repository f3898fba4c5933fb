/**
 * A tool call whose transaction PostgreSQL aborts as a deadlock victim (40P01) or for
 * serialization (40001) runs again — at most RERUNS more times — and answers as if nothing happened;
 * any other failure answers at once, without a rerun (src/authoring/tool.ts `invoke`). The tool
 * here writes a row, then fails with the given SQLSTATE on its first runs: the rows left show that
 * every failed run was rolled back. The concurrent case that needs it: moves.test.ts.
 */
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { verifySession } from '../../src/identity/index.ts';
import { defineTool, invoke, CREATE, type ToolContext } from '../../src/authoring/tool.ts';
import { RERUNS } from '../../src/db/rerun.ts';
import { seedAuthor, useApp } from '../helpers/harness.ts';
import { signIn } from './helpers.ts';

const t = useApp();

/** A tool that creates a program named `title`, failing with `code` on its first `failures` runs. */
function flakyTool(code: string, failures: number) {
  let runs = 0;
  const tool = defineTool({
    name: 'flaky',
    title: 'Flaky',
    description: 'test',
    input: z.strictObject({ tenant_id: z.string(), title: z.string() }),
    output: z.object({ runs: z.number() }),
    annotations: CREATE,
    run: async (args, tx) => {
      runs++;
      await tx.query('insert into programs (tenant_id, title) values ($1, $2)', [args.tenant_id, args.title]);
      if (runs <= failures) throw Object.assign(new Error(`simulated ${code}`), { code });
      return { structured: { runs }, summary: `ran ${runs} times` };
    },
  });
  return { tool, runs: () => runs };
}

/**
 * Invoke a flaky tool (failing with `code` on its first `failures` runs) as a new author of tenant
 * `rerun-<name>`; returns the answer, how many runs it took, and how many programs it left.
 */
async function callFlaky(name: string, code: string, failures: number) {
  const seeded = await seedAuthor(t, `rerun-${name}`);
  const session = await verifySession(t.deps, await signIn(t, seeded.email, seeded.password));
  const ctx: ToolContext = { deps: t.deps, session, log: t.app.log };
  const flaky = flakyTool(code, failures);
  const title = `rerun ${name}`;
  const result = await invoke(flaky.tool, ctx, { tenant_id: seeded.tenant.id, title });
  const [row] = await t.db.query<{ n: number }>('select count(*)::int as n from programs where title = $1', [title]);
  return { result, runs: flaky.runs(), programs: row!.n };
}

describe('tool calls rerun after a deadlock or serialization failure', () => {
  it.each(['40P01', '40001'])('%s: run again, the failed runs rolled back, the answer the last run’s', async (code) => {
    const { result, programs } = await callFlaky(code.toLowerCase(), code, RERUNS);
    expect(result.isError).toBeUndefined();
    expect(result.structuredContent).toEqual({ runs: RERUNS + 1 });
    expect(programs).toBe(1);
  });

  it.each([
    { what: `gives up after ${RERUNS} reruns`, name: 'give-up', code: '40P01', failures: RERUNS + 3, runs: RERUNS + 1 },
    { what: 'does not rerun other failures', name: 'other', code: '23505', failures: 1, runs: 1 },
  ])('$what', async ({ name, code, failures, runs }) => {
    const called = await callFlaky(name, code, failures);
    expect(called.result.isError).toBe(true);
    expect(called.runs).toBe(runs);
    expect(called.programs).toBe(0);
  });
});

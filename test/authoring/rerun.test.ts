/**
 * A tool call whose transaction PostgreSQL aborts as a deadlock victim (40P01) or for
 * serialization (40001) runs again — at most twice more — and answers as if nothing happened;
 * any other failure answers at once, without a rerun (src/authoring/tool.ts `invoke`). The tool
 * here writes a row, then fails with the given SQLSTATE on its first runs: the rows left show that
 * every failed run was rolled back. The concurrent case that needs it: moves.test.ts.
 */
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { verifySession } from '../../src/identity/index.ts';
import { defineTool, invoke, CREATE, type ToolContext } from '../../src/authoring/tool.ts';
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

async function context(slug: string): Promise<{ ctx: ToolContext; tenantId: string }> {
  const seeded = await seedAuthor(t, slug);
  const session = await verifySession(t.deps, await signIn(t, seeded.email, seeded.password));
  return { ctx: { deps: t.deps, session, log: t.app.log }, tenantId: seeded.tenant.id };
}

const programs = async (title: string) => (await t.db.query<{ n: number }>('select count(*)::int as n from programs where title = $1', [title]))[0]!.n;

describe('tool calls rerun after a deadlock or serialization failure', () => {
  it.each(['40P01', '40001'])('%s: run again, the failed runs rolled back, the answer the last run’s', async (code) => {
    const { ctx, tenantId } = await context(`rerun-${code.toLowerCase()}`);
    const flaky = flakyTool(code, 2);
    const result = await invoke(flaky.tool, ctx, { tenant_id: tenantId, title: `rerun ${code}` });
    expect(result.isError).toBeUndefined();
    expect(result.structuredContent).toEqual({ runs: 3 });
    expect(await programs(`rerun ${code}`)).toBe(1);
  });

  it('gives up after two reruns', async () => {
    const { ctx, tenantId } = await context('rerun-give-up');
    const flaky = flakyTool('40P01', 5);
    const result = await invoke(flaky.tool, ctx, { tenant_id: tenantId, title: 'rerun give up' });
    expect(result.isError).toBe(true);
    expect(flaky.runs()).toBe(3);
    expect(await programs('rerun give up')).toBe(0);
  });

  it('does not rerun other failures', async () => {
    const { ctx, tenantId } = await context('rerun-other');
    const flaky = flakyTool('23505', 1);
    const result = await invoke(flaky.tool, ctx, { tenant_id: tenantId, title: 'rerun other' });
    expect(result.isError).toBe(true);
    expect(flaky.runs()).toBe(1);
    expect(await programs('rerun other')).toBe(0);
  });
});

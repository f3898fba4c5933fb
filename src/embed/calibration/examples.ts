/**
 * Calibration examples: graded work an instructor vouches for (issue #21). Every function here
 * runs in the caller's transaction under RLS (migration 0141: only authors of the example's
 * tenant select, insert or delete examples; learners, embed sessions without an author grant and
 * API keys see none), so a foreign or unknown id is simply not found.
 *
 * An example's artifact obeys the judge's limits (../judge.ts: `kind` equal to the activity's,
 * `content` at most MAX_CONTENT_BYTES UTF-8 bytes, http(s) URLs that src/http/outbound.ts `refuseUrl`
 * accepts); its expected criteria name criteria of the activity's rubric (../grading/prompt.ts
 * `rubricCriteria`). `adversarial` work must fail: it is stored with `expected.passed` false.
 * Failures throw `CalibrationInputError` naming the field; nothing is written.
 */
import type { Queryable } from '../../db/index.ts';
import { refuseUrl } from '../../http/outbound.ts';
import { MAX_CONTENT_BYTES } from '../judge.ts';
import { rubricCriteria } from '../grading/prompt.ts';
import type { ArtifactKind } from '../../lib/artifact-kinds.ts';

/** Bad input for a calibration tool: `field` is the argument at fault (`artifact.content`, `expected.criteria[0].id`, …). */
export class CalibrationInputError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

/** An unknown (or another tenant's, or invisible) activity, example or report. */
export class CalibrationNotFound extends Error {}

export interface ExampleInput {
  activity_id: string;
  artifact: { kind: ArtifactKind; content?: string; ref_url?: string; repo_url?: string };
  expected: { passed: boolean; score?: number; criteria?: { id: string; met: boolean }[] };
  adversarial?: boolean;
  note?: string;
}

/** An example as the tools answer it. */
export interface Example {
  id: string;
  activity_id: string;
  artifact: { kind: string; content: string | null; ref_url: string | null; repo_url: string | null };
  expected: { passed: boolean; score: number | null; criteria: { id: string; met: boolean }[] };
  adversarial: boolean;
  note: string | null;
  created_at: string;
}

const EXAMPLE_JSON = `json_build_object(
  'id', e.id, 'activity_id', e.activity_id,
  'artifact', json_build_object('kind', e.kind, 'content', e.content, 'ref_url', e.ref_url, 'repo_url', e.repo_url),
  'expected', json_build_object('passed', e.expected_passed, 'score', e.expected_score::float8, 'criteria', e.expected_criteria),
  'adversarial', e.adversarial, 'note', e.note, 'created_at', to_json(e.created_at) #>> '{}')`;

/** The activity `activityId` as the caller sees it (RLS), or CalibrationNotFound. */
export async function visibleActivity(
  tx: Queryable,
  activityId: string,
): Promise<{ id: string; tenant_id: string; kind: string; rubric: unknown; rubric_version: number }> {
  const [a] = await tx.query<{ id: string; tenant_id: string | null; kind: string; rubric: unknown; rubric_version: number }>(
    // the caller's tenants where they are an author: a learner of the tenant gets "not found" too
    'select id, tenant_id, kind, rubric, rubric_version from activities where id = $1 and tenant_id in (select public.current_author_tenant_ids())',
    [activityId],
  );
  if (!a?.tenant_id) throw new CalibrationNotFound(`activity_id: activity ${activityId} not found`);
  return a as { id: string; tenant_id: string; kind: string; rubric: unknown; rubric_version: number };
}

/** Check `input` against the activity and the judge's limits (header); throws CalibrationInputError. */
function checkExample(input: ExampleInput, activity: { kind: string; rubric: unknown }, allowPrivate: boolean): void {
  const { artifact, expected } = input;
  if (artifact.kind !== activity.kind) throw new CalibrationInputError('artifact.kind', `this activity expects a ${activity.kind}, not a ${artifact.kind}`);
  if (artifact.content === undefined && artifact.ref_url === undefined && artifact.repo_url === undefined) {
    throw new CalibrationInputError('artifact', 'give at least one of content, ref_url, repo_url');
  }
  if (artifact.content !== undefined) {
    if (artifact.content.trim() === '') throw new CalibrationInputError('artifact.content', 'is empty');
    if (Buffer.byteLength(artifact.content, 'utf8') > MAX_CONTENT_BYTES)
      throw new CalibrationInputError('artifact.content', `must be at most ${MAX_CONTENT_BYTES} bytes`);
  }
  for (const field of ['ref_url', 'repo_url'] as const) {
    const value = artifact[field];
    if (value === undefined) continue;
    if (!URL.canParse(value) || !/^https?:$/.test(new URL(value).protocol)) throw new CalibrationInputError(`artifact.${field}`, 'must be an http(s) URL');
    const refusal = refuseUrl(new URL(value), allowPrivate);
    if (refusal) throw new CalibrationInputError(`artifact.${field}`, refusal);
  }
  if (input.adversarial && expected.passed)
    throw new CalibrationInputError('expected.passed', 'an adversarial example is work that must fail: expected.passed must be false');
  const ids = new Set(rubricCriteria(activity.rubric).map((c) => c.id));
  const seen = new Set<string>();
  (expected.criteria ?? []).forEach((c, i) => {
    if (!ids.has(c.id))
      throw new CalibrationInputError(`expected.criteria[${i}].id`, `"${c.id}" is not a criterion of the activity's rubric (${[...ids].join(', ')})`);
    if (seen.has(c.id)) throw new CalibrationInputError(`expected.criteria[${i}].id`, `"${c.id}" is given twice`);
    seen.add(c.id);
  });
}

/** Store an example (after `checkExample`), as the caller. */
export async function addExample(tx: Queryable, input: ExampleInput, allowPrivate: boolean): Promise<Example> {
  const activity = await visibleActivity(tx, input.activity_id);
  checkExample(input, activity, allowPrivate);
  const [row] = await tx.query<{ example: Example }>(
    `insert into calibration_examples as e (tenant_id, activity_id, kind, content, ref_url, repo_url, expected_passed, expected_score,
                                            expected_criteria, adversarial, note, created_by)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9::text::jsonb, $10, $11, public.current_itera_user_id())
     returning ${EXAMPLE_JSON} as example`,
    [
      activity.tenant_id,
      activity.id,
      input.artifact.kind,
      input.artifact.content ?? null,
      input.artifact.ref_url ?? null,
      input.artifact.repo_url ?? null,
      input.expected.passed,
      input.expected.score ?? null,
      JSON.stringify(input.expected.criteria ?? []),
      input.adversarial ?? false,
      input.note ?? null,
    ],
  );
  return row!.example;
}

/** The examples of activity `activityId`, oldest first, as the caller sees them. */
export async function listExamples(tx: Queryable, activityId: string): Promise<Example[]> {
  await visibleActivity(tx, activityId);
  const rows = await tx.query<{ example: Example }>(
    `select ${EXAMPLE_JSON} as example from calibration_examples e where e.activity_id = $1 order by e.created_at, e.id`,
    [activityId],
  );
  return rows.map((r) => r.example);
}

/** Delete example `id` as the caller; CalibrationNotFound when the caller cannot see it. Returns it with its tenant. */
export async function deleteExample(tx: Queryable, id: string): Promise<{ id: string; activity_id: string; tenant_id: string }> {
  const [row] = await tx.query<{ id: string; activity_id: string; tenant_id: string }>(
    'delete from calibration_examples where id = $1 returning id, activity_id, tenant_id',
    [id],
  );
  if (!row) throw new CalibrationNotFound(`id: calibration example ${id} not found`);
  return row;
}

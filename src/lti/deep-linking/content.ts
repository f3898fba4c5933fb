/**
 * What an instructor may place through Deep Linking: the registration's tenant's content —
 * programs → units → lessons → activities, in course order, archived records left out (migration
 * 0110: `archived` is true when the record or one above it is archived). Read by the service
 * itself with the tenant named in every query, like the launch's activity check (resource-link.ts):
 * another tenant's activity is simply not there.
 */
import type { Queryable } from '../../db/index.ts';

/** At most this many activities are listed in a picker (a tenant's whole catalogue, in practice). */
export const MAX_LISTED = 2000;
/** At most this many activities placed by one deep link. */
export const MAX_PICKS = 50;

/** One placeable activity with where it sits. */
export interface PickableActivity {
  id: string;
  title: string;
  kind: string;
  /** The spec's first words as plain text (the content item's `text`). */
  summary: string;
  program_id: string;
  program_title: string;
  unit_id: string;
  unit_title: string;
  lesson_id: string;
  lesson_title: string;
}

const COLUMNS = `a.id, a.title, a.kind, left(a.spec, 2000) as spec,
       p.id as program_id, p.title as program_title, u.id as unit_id, u.title as unit_title, l.id as lesson_id, l.title as lesson_title
  from activities a
  join lessons l on l.id = a.lesson_id
  join units u on u.id = l.unit_id
  join programs p on p.id = a.program_id`;

type Row = Omit<PickableActivity, 'summary'> & { spec: string };
const withSummary = ({ spec, ...row }: Row): PickableActivity => ({ ...row, summary: summaryOf(spec) });

/** The tenant's placeable activities in course order (at most `MAX_LISTED`). */
export async function pickableActivities(q: Queryable, tenantId: string): Promise<PickableActivity[]> {
  const rows = await q.query<Row>(
    `select ${COLUMNS}
      where a.tenant_id = $1 and not a.archived
      order by p.created_at, p.id, u.position, u.id, l.position, l.id, a.position, a.id
      limit ${MAX_LISTED}`,
    [tenantId],
  );
  return rows.map(withSummary);
}

/**
 * The activities `ids` of tenant `tenantId` that may be placed, in the order of `ids`; an id that
 * is another tenant's, archived or unknown is missing from the answer.
 */
export async function pickedActivities(q: Queryable, tenantId: string, ids: string[]): Promise<PickableActivity[]> {
  const rows = await q.query<Row>(`select ${COLUMNS} where a.tenant_id = $1 and a.id = any($2::uuid[]) and not a.archived`, [tenantId, ids]);
  const byId = new Map(rows.map((r) => [r.id, withSummary(r)]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

/** Longest `text` of a content item, in characters. */
const SUMMARY_CHARS = 280;

/** A spec's opening as one line of plain text: Markdown marks dropped, at most `SUMMARY_CHARS`. */
export function summaryOf(markdown: string): string {
  const text = markdown
    .replace(/```[\s\S]*?```/g, ' ')
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]*>/g, ' ')
    .replace(/^\s{0,3}(#{1,6}|>|[-*+]|\d+[.)])\s+/gm, '')
    .replace(/[*_`~]+/g, '')
    .replace(/\s+/g, ' ')
    .trim();
  return text.length > SUMMARY_CHARS ? `${text.slice(0, SUMMARY_CHARS - 1).trimEnd()}…` : text;
}

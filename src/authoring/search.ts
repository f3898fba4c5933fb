/**
 * search_content: find programs, units, lessons and activities by text, within the caller's
 * tenants (issue #16), so an assistant can reach one record of a large program without reading
 * the program.
 *
 * Matches are case-insensitive substrings (`ILIKE`, with `%`, `_` and `\` in the query taken
 * literally) of every record's title and of each activity's spec. The search runs as the caller:
 * it reads only rows of `current_member_tenant_ids()` (the service catalog is not searched; see
 * list_programs), and RLS applies on top. Results come in record order (programs, units, lessons,
 * activities), then by id, in keyset pages; an activity matched in its spec carries a snippet of
 * the text around the first match. A page is bounded like the reads (reads.ts, 100,000
 * characters; 100 matches with 500-character titles could pass it).
 */
import { z } from 'zod';
import { UUID_RE } from '../lib/ids.ts';
import { decodeCursor, NEXT_CURSOR, page, pageInput } from './cursor.ts';
import { bounded } from './reads.ts';
import { tenantIdBySlug, tenantSlug } from './records.ts';
import { defineTool, READ, type AnyTool } from './tool.ts';

const MAX_QUERY = 200;
const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 100;
/** Characters of spec shown before the match, and in all. */
const SNIPPET_BEFORE = 60;
const SNIPPET_LENGTH = 200;

const RECORDS = ['program', 'unit', 'lesson', 'activity'] as const;
const RANK_RE = /^[1-4]$/;

/**
 * $1 the ILIKE pattern, $2 the lowered query (for the snippet), $3 a tenant id or null, $4/$5 the
 * cursor (rank, id) or null, $6 rows to read.
 */
const SEARCH_SQL = `
  with scope as (select tenant_id from public.current_member_tenant_ids() as tenant_id where $3::uuid is null or tenant_id = $3::uuid)
  select m.rank, m.record, m.id, m.program_id, t.slug as tenant, m.title, m.position, m.kind, m.snippet
    from (
      select 1 as rank, 'program' as record, p.id, p.id as program_id, p.tenant_id, p.title, null::int as position, null::text as kind, null::text as snippet
        from programs p where p.tenant_id in (select tenant_id from scope) and p.title ilike $1
      union all
      select 2, 'unit', u.id, u.program_id, u.tenant_id, u.title, u.position, null, null
        from units u where u.tenant_id in (select tenant_id from scope) and u.title ilike $1
      union all
      select 3, 'lesson', l.id, l.program_id, l.tenant_id, l.title, l.position, null, null
        from lessons l where l.tenant_id in (select tenant_id from scope) and l.title ilike $1
      union all
      select 4, 'activity', a.id, a.program_id, a.tenant_id, a.title, a.position, a.kind,
             case when a.title ilike $1 then null
                  else substr(a.spec, greatest(1, strpos(lower(a.spec), $2) - ${SNIPPET_BEFORE}), ${SNIPPET_LENGTH}) end
        from activities a where a.tenant_id in (select tenant_id from scope) and (a.title ilike $1 or a.spec ilike $1)
    ) m join tenants t on t.id = m.tenant_id
   where $4::int is null or (m.rank, m.id) > ($4::int, $5::uuid)
   order by m.rank, m.id
   limit $6`;

/** The ILIKE pattern that matches `query` anywhere, its wildcards taken literally. */
const containing = (query: string) => `%${query.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

const Match = z.object({
  record: z.enum(RECORDS).describe('What kind of record matched'),
  id: z.string().describe('Its id: read it with get_program, get_unit, get_lesson or get_activity'),
  program_id: z.string().describe('The program it belongs to'),
  tenant: z.string().describe('Slug of its tenant'),
  title: z.string().describe('Its title'),
  position: z.number().int().nullable().describe('Position within its parent (null for programs)'),
  kind: z.string().nullable().describe('Kind of artifact (activities only)'),
  snippet: z.string().nullable().describe('For an activity matched in its spec: the text around the first match'),
});

const searchContent = defineTool({
  name: 'search_content',
  title: 'Search content',
  description:
    'Find programs, units, lessons and activities of your tenants whose title — or, for activities, spec — contains the text ' +
    '(case-insensitive). Returns ids to read with get_program, get_unit, get_lesson or get_activity. ' +
    'Pages: pass `next_cursor` back as `cursor`; it is null on the last page. The service catalog is not searched (see list_programs).',
  input: z.strictObject({
    query: z.string().trim().min(1).max(MAX_QUERY).describe(`Text to find (1–${MAX_QUERY} characters), matched literally`),
    tenant: tenantSlug('Search only this tenant (slug); omit for all your tenants').optional(),
    ...pageInput(DEFAULT_LIMIT, MAX_LIMIT),
  }),
  output: z.object({
    results: z.array(Match).describe('This page of matches: programs, then units, lessons, activities'),
    ...NEXT_CURSOR,
  }),
  annotations: READ,
  run: async ({ query, tenant, cursor, limit = DEFAULT_LIMIT }, tx) => {
    const after = cursor === undefined ? undefined : decodeCursor('search_content', cursor, [RANK_RE, UUID_RE]);
    const tenantId = tenant === undefined ? null : await tenantIdBySlug(tx, tenant);
    const rows = await tx.query<z.infer<typeof Match> & { rank: number }>(SEARCH_SQL, [
      containing(query),
      query.toLowerCase(),
      tenantId,
      after ? Number(after[0]) : null,
      after?.[1] ?? null,
      limit + 1,
    ]);
    const { items, next_cursor } = page(rows, limit, (r) => [String(r.rank), r.id]);
    const results = items.map(({ rank: _rank, ...match }) => match);
    const answer = {
      structured: { results, next_cursor },
      summary: `${results.length} match(es) for "${query}"${next_cursor ? ', more on the next page' : ''}`,
    };
    return bounded(answer, 'this page of matches', 'ask for a smaller limit');
  },
});

export const searchTools: AnyTool[] = [searchContent];

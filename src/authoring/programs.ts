/**
 * Program tools: list_programs, create_program, update_program, delete_program (get_program is
 * with the other bounded reads, reads.ts). Members of a tenant read its programs; everyone signed in reads the catalog
 * (programs with no tenant); only authors of the tenant write (RLS, migration 0001).
 */
import { z } from 'zod';
import { PG_TIMESTAMP_RE, UUID_RE } from '../lib/ids.ts';
import { decodeCursor, DEFAULT_LIMIT, NEXT_CURSOR, page, pageInput } from './cursor.ts';
import { deleteTool, updateTool } from './crud.ts';
import { externalId, insertRecord, NEW_FIELDS, ProgramRecord, recordJson, tenantIdBySlug, tenantSlug } from './records.ts';
import { CREATE, defineTool, READ, type AnyTool } from './tool.ts';

// ---------------------------------------------------------------------------------------------
// list_programs: keyset pages over (created_at, id), an opaque cursor
// ---------------------------------------------------------------------------------------------
const LIST_PROGRAMS_SQL = `
  select ${recordJson('p')} || jsonb_build_object('tenant', t.slug) as record
    from programs p left join tenants t on t.id = p.tenant_id
   where ($1::uuid is null or p.tenant_id = $1::uuid)
     and ($2::timestamptz is null or (p.created_at, p.id) > ($2::timestamptz, $3::uuid))
   order by p.created_at, p.id
   limit $4`;

const ListedProgram = ProgramRecord.extend({
  tenant: z.string().nullable().describe('Slug of the owning tenant; null for the catalog'),
});

export const listPrograms = defineTool({
  name: 'list_programs',
  title: 'List programs',
  description:
    'List the programs you can read, oldest first: those of your tenants and the service catalog (tenant null). ' +
    'Give `tenant` to list one tenant only. Pages: pass `next_cursor` back as `cursor`; it is null on the last page.',
  input: z.strictObject({
    tenant: tenantSlug('Only programs of this tenant (slug); omit for all you can read, the catalog included').optional(),
    ...pageInput(),
  }),
  output: z.object({
    programs: z.array(ListedProgram).describe('This page of programs'),
    ...NEXT_CURSOR,
  }),
  annotations: READ,
  run: async ({ tenant, cursor, limit = DEFAULT_LIMIT }, tx) => {
    const after = cursor === undefined ? undefined : decodeCursor('list_programs', cursor, [PG_TIMESTAMP_RE, UUID_RE]);
    const tenantId = tenant === undefined ? null : await tenantIdBySlug(tx, tenant);
    const rows = await tx.query<{ record: Record<string, unknown> }>(LIST_PROGRAMS_SQL, [tenantId, after?.[0] ?? null, after?.[1] ?? null, limit + 1]);
    const { items, next_cursor } = page(
      rows.map((r) => r.record),
      limit,
      (p) => [p.created_at as string, p.id as string],
    );
    return { structured: { programs: items, next_cursor }, summary: `${items.length} program(s)${next_cursor ? ', more on the next page' : ''}` };
  },
});

// ---------------------------------------------------------------------------------------------
// create / update / delete
// ---------------------------------------------------------------------------------------------
const createProgram = defineTool({
  name: 'create_program',
  title: 'Create a program',
  description:
    'Create an empty program in a tenant you are an author of. Returns the program with its id. ' +
    'To create a program with all its content in one call, use import_program.',
  input: z.strictObject({
    tenant: tenantSlug('Slug of the tenant that will own the program'),
    ...NEW_FIELDS.program,
    external_id: externalId('among the programs of the tenant').optional(),
  }),
  output: ProgramRecord,
  annotations: CREATE,
  run: async ({ tenant, title, description, external_id }, tx) => {
    const tenantId = await tenantIdBySlug(tx, tenant);
    const record = await insertRecord(tx, 'program', { tenant_id: tenantId, title, description, external_id });
    return { structured: record, summary: `created program ${record.id} in ${tenant}` };
  },
});

export const programTools: AnyTool[] = [listPrograms, createProgram, updateTool('program'), deleteTool('program')];

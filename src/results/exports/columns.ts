/**
 * The columns of each export: the fields of the list endpoints' `data` items (src/results/queries.ts
 * builds them; test/results/exports.test.ts checks that these names are exactly the objects' keys)
 * with the type each has in CSV and Parquet.
 *
 * Kinds: `uuid` and `string` (text), `int` (32-bit), `float` (double), `timestamp` (RFC 3339 UTC
 * with microseconds in JSON and CSV; INT64 TIMESTAMP(MICROS, UTC) in Parquet), `json` (a nested
 * value: JSON text in CSV, a JSON-annotated string in Parquet). Every column may be null.
 */
import type { Endpoint } from '../cursor.ts';

export type ColumnKind = 'uuid' | 'string' | 'int' | 'float' | 'timestamp' | 'json';
export interface Column {
  name: string;
  kind: ColumnKind;
}

/** The exports: `/v1/exports/<name>`, the list endpoint each mirrors. */
export const EXPORTS = ['activity-results', 'artifacts', 'progress', 'learners', 'deletions'] as const;
export type ExportName = (typeof EXPORTS)[number] & Endpoint;

const cols = (spec: string): Column[] =>
  spec.split(' ').map((c) => {
    const [name, kind] = c.split(':') as [string, ColumnKind];
    return { name, kind };
  });

export const COLUMNS: Record<ExportName, Column[]> = {
  'activity-results': cols(
    'id:uuid activity_id:uuid lesson_id:uuid svc_user_id:uuid program_id:uuid unit_id:uuid status:string score:float ' +
      'completed_at:timestamp created_at:timestamp updated_at:timestamp artifact_ids:json',
  ),
  artifacts: cols('id:uuid result_id:uuid kind:string ref_url:string repo_url:string verification:json created_at:timestamp updated_at:timestamp'),
  progress: cols('svc_user_id:uuid program_id:uuid completed_count:int total_count:int percent:int last_activity_at:timestamp updated_at:timestamp'),
  learners: cols('svc_user_id:uuid external_ids:json email:string created_at:timestamp updated_at:timestamp'),
  deletions: cols('resource:string id:uuid svc_user_id:uuid program_id:uuid deleted_at:timestamp'),
};

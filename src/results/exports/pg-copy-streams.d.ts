// The part of pg-copy-streams (no bundled types) that src/results/exports uses.
declare module 'pg-copy-streams' {
  import type { Readable } from 'node:stream';
  import type { Submittable } from 'pg';
  export interface CopyToStreamQuery extends Readable, Submittable {}
  export function to(text: string): CopyToStreamQuery;
}

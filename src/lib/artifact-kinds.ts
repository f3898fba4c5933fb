/**
 * The kinds of work a learner hands in — one list for every surface (authoring's activity
 * records, the judge, calibration examples, the results API's schemas, the learner reads). The
 * database checks the same list (`kind in ('diagram', 'document', 'site', 'repo')`, migrations
 * 0001 and 0141).
 */
export const ARTIFACT_KINDS = ['diagram', 'document', 'site', 'repo'] as const;
export type ArtifactKind = (typeof ARTIFACT_KINDS)[number];

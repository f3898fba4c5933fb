/**
 * Write the Results API's OpenAPI document, as the service generates it, to `openapi.json` (the
 * input of `npm run generate`, which turns it into `src/schema.d.ts` with openapi-typescript).
 * Builds the app on a throw-away in-memory database; `servers` is left out (it is the caller's
 * base URL). Run from the repository root: `npm run openapi -w @learning-svc/results-client`.
 */
import { writeFile } from 'node:fs/promises';
import { resultsDocument } from '../../../test/helpers/openapi-document.ts';

const doc = await resultsDocument();
await writeFile(new URL('../openapi.json', import.meta.url), `${JSON.stringify(doc, null, 2)}\n`);

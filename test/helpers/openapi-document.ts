/**
 * The Results API's OpenAPI document as a running app serves it, without `servers` (the base URL
 * of that app): the snapshot clients/js generates its types from, and what the client test
 * compares that snapshot with.
 */
import { startApp } from './harness.ts';

export async function resultsDocument(): Promise<Record<string, unknown>> {
  const t = await startApp();
  try {
    const { servers: _servers, ...doc } = (await (await fetch(`${t.url}/v1/openapi.json`)).json()) as Record<string, unknown>;
    return doc;
  } finally {
    await t.close();
  }
}

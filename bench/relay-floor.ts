/**
 * The floor of any Node.js server that relays a results page from PostgreSQL (bench/results-api.ts
 * runs it beside the API): `node:http` and a `pg` pool of the API's size, and per request nothing
 * but the API's own query — the same statement call, prepared, with the same arguments — and the
 * page sent back as `{"data": …, "next_cursor": null, "has_more": …}` in one Buffer. No API key,
 * rate limit, validation, cursor or request id: what is left is the cost of the relay itself
 * (HTTP parsing and sending, the driver, the ~26 KiB page read from one socket and written to
 * another), which the API cannot go below on the same machine.
 *
 * Run as `node bench/relay-floor.ts` (Node.js strips the types) with
 *   RELAY_DB     the database URL;
 *   RELAY_PORT   the port to listen on (127.0.0.1);
 *   RELAY_POOL   the pool's size (the API's: SVC_DB_POOL_SIZE's default);
 *   RELAY_ROUTES JSON `{"<request target>": {"text": "<SQL>", "values": [<args>]}}`, one entry per
 *                measured request (its path and query string, as the load generator sends them).
 * Prints `relay listening` once it answers. A request target it was not given gets a 404.
 */
import { createServer } from 'node:http';
import pg from 'pg';

const routes = new Map(Object.entries(JSON.parse(process.env.RELAY_ROUTES!) as Record<string, { text: string; values: unknown[] }>));
// Text as text: the page's JSON stays a string, as in the API (src/db/postgres.ts).
const pool = new pg.Pool({ connectionString: process.env.RELAY_DB, max: Number(process.env.RELAY_POOL) });
const names = new Map([...routes.keys()].map((target, i) => [target, `relay_${i}`]));

createServer(async (req, res) => {
  const route = routes.get(req.url ?? '');
  if (!route) return void res.writeHead(404).end();
  try {
    const { rows } = await pool.query<{ data: string; has_more: boolean }>({ name: names.get(req.url!), text: route.text, values: route.values });
    const body = Buffer.from(`{"data":${rows[0]!.data},"next_cursor":null,"has_more":${rows[0]!.has_more}}`);
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(body);
  } catch (err) {
    res.writeHead(500).end(String(err));
  }
}).listen(Number(process.env.RELAY_PORT), '127.0.0.1', () => console.log('relay listening'));

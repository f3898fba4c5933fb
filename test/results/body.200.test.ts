/**
 * Results API, the bytes of a page: list pages are sent as one Buffer encoded from PostgreSQL's
 * JSON text (routes.ts `jsonBuffer`, issue #24). Text outside ASCII — two-, three- and four-byte
 * UTF-8 — must arrive whole: `Content-Length` is the UTF-8 byte count, and the body parses to the
 * stored text (a length counted in UTF-16 units would cut the body short and fail here).
 */
import { describe, expect, it } from 'vitest';
import { useApp, useFixture } from '../helpers/harness.ts';
import { get, seedTenant } from './fixtures.ts';

const t = useApp();
const a = useFixture(async () => {
  const tenant = await seedTenant(t, 'bytes');
  const titles = ['Café — naïve', '日本語のプログラム', 'Rocket 🚀 launch', 'plain ascii'];
  for (const title of titles) {
    await t.db.query(`insert into programs (tenant_id, title, description) values ($1, $2, $3)`, [tenant.id, title, `${title} `.repeat(200)]);
  }
  return { ...tenant, titles };
});

/** GET `path`; the raw bytes, the Content-Length header and the parsed body. */
async function page(path: string, key: string) {
  const res = await get(t, path, key);
  const bytes = Buffer.from(await res.arrayBuffer());
  expect(res.status, bytes.toString()).toBe(200);
  expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
  return { res, bytes, length: Number(res.headers.get('content-length')), body: JSON.parse(bytes.toString('utf8')) };
}

describe('GET /v1/programs: a page of non-ASCII text', () => {
  it('is sent whole: Content-Length is its UTF-8 byte count and the titles come back unchanged', async () => {
    const { bytes, length, body } = await page('/v1/programs?limit=200', a.key);
    expect(length).toBe(bytes.length);
    expect(bytes.length).toBeGreaterThan(Buffer.byteLength(a.titles.join(''), 'utf8') * 200);
    const titles = body.data.map((p: { title: string }) => p.title);
    for (const title of a.titles) expect(titles).toContain(title);
    const rocket = body.data.find((p: { title: string }) => p.title.startsWith('Rocket'));
    expect(rocket.description).toBe('Rocket 🚀 launch '.repeat(200));
    expect(body.next_cursor).toBeNull();
    expect(body.has_more).toBe(false);
  });

  it('pages the same way: next_cursor and Link follow the data, and the next page is whole too', async () => {
    const first = await page('/v1/programs?limit=2', a.key);
    expect(first.length).toBe(first.bytes.length);
    expect(first.body.has_more).toBe(true);
    expect(first.res.headers.get('link')).toContain(`cursor=${first.body.next_cursor}`);
    const seen = first.body.data.map((p: { id: string }) => p.id);
    let cursor: string | null = first.body.next_cursor;
    while (cursor) {
      const next = await page(`/v1/programs?limit=2&cursor=${cursor}`, a.key);
      expect(next.length).toBe(next.bytes.length);
      seen.push(...next.body.data.map((p: { id: string }) => p.id));
      cursor = next.body.next_cursor;
    }
    const all = await page('/v1/programs?limit=200', a.key);
    expect(seen).toEqual(all.body.data.map((p: { id: string }) => p.id));
  });
});

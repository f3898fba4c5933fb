/**
 * Reading artifacts per kind (src/embed/read): pages, documents (HTML, Markdown, text, PDF),
 * diagrams (images, Mermaid, SVG, draw.io) and repositories (git over smart HTTP, archives),
 * against loopback servers, with the size caps, and the SSRF rules for every download.
 */
import { randomBytes } from 'node:crypto';
import { deflateRawSync, gzipSync } from 'node:zlib';
import tarStream from 'tar-stream';
import { describe, expect, it } from 'vitest';
import { isBlockedAddress } from '../../src/http/outbound.ts';
import { readArtifact, Unreadable, type ReadOptions } from '../../src/embed/read/index.ts';
import { makePdf, PNG_1X1 } from './fixtures.ts';
import { startGitServer, startSite } from './servers.ts';
import { useServer } from '../helpers/harness.ts';

const PAGE = `<!doctype html><html><head><title>Ada &amp; me</title><meta name="description" content="A page about Ada">
<link rel="stylesheet" href="/css/main.css"><link rel="icon" href="/favicon.ico"><link rel=stylesheet href='theme.css'>
<script src="/js/app.js"></script><script>console.log("inline secret")</script><style>body{color:red}</style></head>
<body><!-- hidden comment --><nav>Home | About</nav><h1>About&nbsp;Ada</h1><p>She wrote the <b>first</b> program.</p>
<img src="ada.png" alt="Portrait of Ada"><ul><li>One</li><li>Two</li></ul><noscript>enable JS</noscript></body></html>`;

const site = useServer(async () =>
  startSite({
    '/': { type: 'text/html; charset=utf-8', body: PAGE },
    '/notes.md': { type: 'text/markdown', body: '# Notes\n\n- point one\n' },
    '/notes.txt': { type: 'text/plain', body: 'plain notes' },
    '/doc.pdf': { type: 'application/pdf', body: makePdf(['Design note', 'Trade-offs: cost versus speed']) },
    '/diagram.png': { type: 'image/png', body: PNG_1X1 },
    '/binary': { type: 'application/zip', body: Buffer.from('PK\x03\x04') },
    '/to-private': { redirect: 'http://127.0.0.2:9/' },
    '/huge': (_req, res) => {
      // An endless page: 100 MB would come if the reader kept reading.
      res.writeHead(200, { 'content-type': 'text/html' });
      const chunk = Buffer.alloc(64 * 1024, '<p>x</p>');
      let sent = 0;
      const pump = () => {
        while (sent < 100 * 1024 * 1024 && res.write(chunk)) sent += chunk.length;
        if (sent < 100 * 1024 * 1024 && !res.destroyed) res.once('drain', pump);
        else res.end();
      };
      pump();
    },
    '/repo.tar.gz': { type: 'application/gzip', body: gzipSync(await tar({ 'proj-1/README.md': '# Archived project', 'proj-1/src/main.py': 'print("hi")' })) },
    // 3 KB to download, 8 MB unpacked: an archive bomb.
    '/bomb.tar.gz': { type: 'application/gzip', body: gzipSync(await tar({ 'README.md': '# Bomb', 'zeros.bin': Buffer.alloc(8 * 1024 * 1024) })) },
  }),
);
const repo = useServer(() =>
  startGitServer({
    'README.md': '# Shortener\nA URL shortener.',
    'src/index.js': 'export const shorten = (url) => url.slice(0, 8);',
    'src/util/hash.js': 'export const hash = (s) => s.length;',
    'test/index.test.js': 'test("x", () => {});',
    'node_modules/dep/index.js': 'module.exports = 1;',
    'package-lock.json': '{}',
    'assets/big.bin': randomBytes(2 * 1024 * 1024),
  }),
);
// No partial clone, and a pack bigger than the download cap used below.
const bigRepo = useServer(() => startGitServer({ 'README.md': '# big', 'data.bin': randomBytes(3 * 1024 * 1024) }, { allowFilter: false }));

/** A tar archive of `files` (`tar-stream`'s writer). */
async function tar(files: Record<string, string | Buffer>): Promise<Buffer> {
  const pack = tarStream.pack();
  for (const [name, content] of Object.entries(files)) pack.entry({ name }, content);
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const options = (over: Partial<ReadOptions> = {}): ReadOptions => ({
  allowPrivate: true,
  timeoutMs: 10_000,
  maxBytes: 1024 * 1024,
  inputBytes: 200_000,
  vision: true,
  ...over,
});
const text = (view: { parts: { heading: string; text: string }[] }) => view.parts.map((p) => `=== ${p.heading}\n${p.text}`).join('\n');

describe('site', () => {
  it('reads the readable text and the names of linked CSS and JS', async () => {
    const view = await readArtifact({ kind: 'site', ref_url: `${site.url}/` }, options());
    const t = text(view);
    expect(t).toContain('title: Ada & me');
    expect(t).toContain('description: A page about Ada');
    expect(t).toContain('stylesheets: /css/main.css, theme.css (+ 1 inline <style>)');
    expect(t).toContain('scripts: /js/app.js (+ 1 inline <script>)');
    expect(t).toContain('About Ada');
    expect(t).toContain('She wrote the first program.');
    expect(t).toContain('[image: Portrait of Ada]');
    for (const hidden of ['inline secret', 'color:red', 'hidden comment', 'enable JS', '<p>']) expect(t).not.toContain(hidden);
    expect(view.sources).toEqual([{ field: 'ref_url', ok: true, detail: expect.stringMatching(/^text\/html/) }]);
  });

  it('reads a 100 MB page only up to the download cap, and says so', async () => {
    const view = await readArtifact({ kind: 'site', ref_url: `${site.url}/huge` }, options({ maxBytes: 256 * 1024 }));
    expect(view.parts[0]!.heading).toMatch(/cut at 256\.0 KiB/);
  });

  it('reads HTML given as content', async () => {
    const view = await readArtifact({ kind: 'site', content: PAGE }, options());
    expect(text(view)).toContain('She wrote the first program.');
  });
});

describe('document', () => {
  it('reads Markdown and plain text, given or fetched', async () => {
    expect(text(await readArtifact({ kind: 'document', content: '# Title\n\nBody [link](x)' }, options()))).toContain('content: Markdown\n# Title');
    expect(text(await readArtifact({ kind: 'document', ref_url: `${site.url}/notes.md` }, options()))).toContain('- point one');
    expect(text(await readArtifact({ kind: 'document', ref_url: `${site.url}/notes.txt` }, options()))).toContain('plain notes');
  });

  it('reads the text of a PDF, fetched or as a data: URL', async () => {
    const fetched = text(await readArtifact({ kind: 'document', ref_url: `${site.url}/doc.pdf` }, options()));
    expect(fetched).toMatch(/PDF, 1 pages/);
    expect(fetched).toContain('Trade-offs: cost versus speed');
    const given = await readArtifact({ kind: 'document', content: `data:application/pdf;base64,${makePdf(['Inline PDF']).toString('base64')}` }, options());
    expect(text(given)).toContain('Inline PDF');
  });

  it('refuses a damaged PDF, a PDF over the cap and a binary type with a reason', async () => {
    await expect(readArtifact({ kind: 'document', content: 'data:application/pdf;base64,JVBERi0xLjQKZ2FyYmFnZQ==' }, options())).rejects.toThrow(
      /PDF could not be read/,
    );
    await expect(readArtifact({ kind: 'document', ref_url: `${site.url}/doc.pdf` }, options({ maxBytes: 100 }))).rejects.toThrow(/over the size limit/);
    await expect(readArtifact({ kind: 'document', ref_url: `${site.url}/binary` }, options())).rejects.toThrow(/application\/zip, which cannot be read here/);
  });
});

describe('diagram', () => {
  it('sends an image to the model as a data URL, fetched or given', async () => {
    const fetched = await readArtifact({ kind: 'diagram', ref_url: `${site.url}/diagram.png` }, options());
    expect(fetched.images).toEqual([
      { source: 'ref_url', mediaType: 'image/png', bytes: PNG_1X1.length, dataUrl: `data:image/png;base64,${PNG_1X1.toString('base64')}` },
    ]);
    expect(text(fetched)).toContain('attached after this section as image 1');
    const given = await readArtifact({ kind: 'diagram', content: `data:image/png;base64,${PNG_1X1.toString('base64')}` }, options());
    expect(given.images).toHaveLength(1);
  });

  it('explains that images cannot be graded when the model has no vision', async () => {
    await expect(readArtifact({ kind: 'diagram', ref_url: `${site.url}/diagram.png` }, options({ vision: false }))).rejects.toThrow(
      /submit the diagram as Mermaid, SVG or draw.io text/,
    );
  });

  it('reads Mermaid, SVG and draw.io (plain and compressed) as text', async () => {
    const mermaid = text(await readArtifact({ kind: 'diagram', content: '%% shortener\nflowchart LR\n  A[Client] --> B[API]' }, options()));
    expect(mermaid).toContain('Mermaid flowchart diagram');
    const svg = text(
      await readArtifact(
        {
          kind: 'diagram',
          content: '<svg xmlns="http://www.w3.org/2000/svg"><title>Flow</title><rect/><text x="1">Client</text><text>API &amp; DB</text></svg>',
        },
        options(),
      ),
    );
    expect(svg).toContain('title: Flow');
    expect(svg).toContain('- Client');
    expect(svg).toContain('- API & DB');
    const model =
      '<mxGraphModel><root><mxCell id="0"/><mxCell id="1" parent="0"/><mxCell id="a" value="Client" vertex="1" parent="1"/>' +
      '<mxCell id="b" value="&lt;b&gt;API&lt;/b&gt;" vertex="1" parent="1"/><mxCell id="e" value="calls" edge="1" source="a" target="b" parent="1"/></root></mxGraphModel>';
    const plain = text(await readArtifact({ kind: 'diagram', content: `<mxfile><diagram name="Flow">${model}</diagram></mxfile>` }, options()));
    expect(plain).toContain('Flow: 2 shapes, 1 connections');
    expect(plain).toContain('- "Client" → "API" (calls)');
    const packed = deflateRawSync(Buffer.from(encodeURIComponent(model))).toString('base64');
    const compressed = text(await readArtifact({ kind: 'diagram', content: `<mxfile><diagram name="P1">${packed}</diagram></mxfile>` }, options()));
    expect(compressed).toContain('- "Client" → "API" (calls)');
  });
});

describe('repo', () => {
  it('clones over smart HTTP and shows the tree, the README and the most relevant files', async () => {
    const view = await readArtifact({ kind: 'repo', repo_url: `${repo.url}/repo.git` }, options());
    const t = text(view);
    expect(view.sources[0]).toMatchObject({ field: 'repo_url', ok: true, detail: expect.stringMatching(/^git [0-9a-f]{12}, 7 files, \d+ shown$/) });
    expect(t).toContain('file tree (7 files)');
    expect(t).toMatch(/assets\/big\.bin \(\?, not shown: over the size limit \(1\.0 MiB\)\)/);
    expect(t).toContain('node_modules/dep/index.js (19 B, not shown: dependencies or build output)');
    expect(t).toContain('package-lock.json (2 B, not shown: lock file)');
    const order = ['--- file README.md', '--- file src/index.js', '--- file src/util/hash.js', '--- file test/index.test.js'].map((h) => t.indexOf(h));
    expect(order.every((i) => i > 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(t).toContain('export const shorten');
    expect(t).not.toContain('module.exports = 1');
    // Partial clone: the 2 MiB blob never came over the wire.
    expect(repo.hits.filter((h) => h.startsWith('POST'))).not.toHaveLength(0);
  });

  it('keeps to the budget, cutting files and saying so', async () => {
    const view = await readArtifact({ kind: 'repo', repo_url: `${repo.url}/repo.git` }, options({ inputBytes: 4096 }));
    expect(Buffer.byteLength(text(view))).toBeLessThan(4096 + 1024);
  });

  it('refuses a repository whose download is over the cap, a missing one, and a dumb URL', async () => {
    await expect(readArtifact({ kind: 'repo', repo_url: `${bigRepo.url}/repo.git` }, options({ maxBytes: 1024 * 1024 }))).rejects.toThrow(
      /over the size limit \(1\.0 MiB\)/,
    );
    await expect(readArtifact({ kind: 'repo', repo_url: `${repo.url}/nope.git` }, options())).rejects.toThrow(/could not be cloned/);
  });

  it('reads a .tar.gz archive', async () => {
    const t = text(await readArtifact({ kind: 'repo', repo_url: `${site.url}/repo.tar.gz` }, options()));
    expect(t).toContain('file tree (2 files)');
    expect(t).toContain('--- file README.md\n# Archived project');
    expect(t).toContain('print("hi")');
  });

  it('refuses an archive that unpacks to more than four times the download cap, while unpacking', async () => {
    await expect(readArtifact({ kind: 'repo', repo_url: `${site.url}/bomb.tar.gz` }, options({ maxBytes: 1024 * 1024 }))).rejects.toThrow(
      /unpacks to more than the size limit/,
    );
  });
});

describe('unreadable artifacts', () => {
  it('grades what can be read and notes what cannot', async () => {
    const view = await readArtifact({ kind: 'document', content: 'my notes', ref_url: `${site.url}/missing` }, options());
    expect(text(view)).toContain('ref_url: could not be read\nref_url could not be fetched: the page answered HTTP 404');
    expect(view.sources.map((s) => s.ok)).toEqual([true, false]);
  });

  it('throws Unreadable, with every reason, when nothing can be read', async () => {
    const err = await readArtifact({ kind: 'document', ref_url: `${site.url}/missing`, repo_url: `${repo.url}/nope.git` }, options()).catch((e) => e);
    expect(err).toBeInstanceOf(Unreadable);
    expect(err.message).toMatch(/HTTP 404; the repository could not be cloned/);
  });
});

describe('SSRF (every download)', () => {
  // In these tests 127.0.0.1 stands for the public internet and every other address keeps the
  // production rule, so a bypass could only ever reach loopback.
  const isBlocked = (ip: string) => ip !== '127.0.0.1' && isBlockedAddress(ip);
  const strict = (lookup?: ReadOptions['lookup']) => options({ allowPrivate: false, isBlocked, lookup });
  const resolvesTo = (address: string) => async () => [{ address, family: address.includes(':') ? 6 : 4 }];

  it('control: the "public" address is read', async () => {
    await expect(readArtifact({ kind: 'site', ref_url: `${site.url}/` }, strict())).resolves.toBeTruthy();
  });

  it('refuses literal private addresses, for pages and repositories', async () => {
    const port = new URL(site.url).port;
    for (const url of [`http://127.0.0.2:${port}/`, `http://[::1]:${port}/`, `http://localhost:${port}/`]) {
      await expect(readArtifact({ kind: 'site', ref_url: url }, strict())).rejects.toThrow(/private address/);
      await expect(readArtifact({ kind: 'repo', repo_url: `${url}repo.git` }, strict())).rejects.toThrow(/private address/);
    }
  });

  it('refuses a redirect to a private address', async () => {
    const before = site.hits.length;
    await expect(readArtifact({ kind: 'site', ref_url: `${site.url}/to-private` }, strict())).rejects.toThrow(/private address/);
    expect(site.hits.length - before).toBe(1); // the first hop only
  });

  it('refuses a host name that resolves to a private address, for pages and repositories', async () => {
    const sitePort = new URL(site.url).port;
    const repoPort = new URL(repo.url).port;
    const before = [site.hits.length, repo.hits.length];
    await expect(readArtifact({ kind: 'site', ref_url: `http://intranet.example:${sitePort}/` }, strict(resolvesTo('127.0.0.2')))).rejects.toThrow(
      /private address/,
    );
    await expect(readArtifact({ kind: 'repo', repo_url: `http://intranet.example:${repoPort}/repo.git` }, strict(resolvesTo('127.0.0.2')))).rejects.toThrow(
      /private address/,
    );
    expect([site.hits.length, repo.hits.length]).toEqual(before);
  });

  it('pins git to the address it checked (the host name is resolved once, by us)', async () => {
    const port = new URL(repo.url).port;
    const view = await readArtifact({ kind: 'repo', repo_url: `http://code.example:${port}/repo.git` }, strict(resolvesTo('127.0.0.1')));
    expect(text(view)).toContain('# Shortener');
  });

  it('reads private addresses when SVC_FETCH_ALLOW_PRIVATE is set (tests)', async () => {
    const port = new URL(site.url).port;
    await expect(readArtifact({ kind: 'site', ref_url: `http://localhost:${port}/` }, options())).resolves.toBeTruthy();
  });
});

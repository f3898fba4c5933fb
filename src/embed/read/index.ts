/**
 * Reading a submitted artifact for the grader, per kind (issue #6 "Reading the artifact"):
 *
 * | field      | site                         | document                        | diagram                                   | repo          |
 * |------------|------------------------------|---------------------------------|-------------------------------------------|---------------|
 * | `content`  | HTML → readable text, or text | HTML → text; Markdown, text; PDF as a `data:` URL | Mermaid, SVG, draw.io XML; image as a `data:` URL | text |
 * | `ref_url`  | fetched page → readable text + linked CSS/JS names | fetched HTML / Markdown / text / PDF | fetched image / SVG / draw.io / Mermaid / PDF | fetched text |
 * | `repo_url` | repository (repo.ts)         | repository                      | repository                                | repository    |
 *
 * Every given field is read. A field that cannot be read is noted in the section and the rest is
 * graded; when no field can be read, `readArtifact` throws `Unreadable` (the judge records a
 * `not_gradable` outcome with that reason, without calling the model). Downloads are SSRF-guarded
 * (src/http/outbound.ts), capped at `maxBytes` each and `timeoutMs` in all; the text is cut to the
 * `inputBytes` budget. Images go to the model as data URLs when `vision` is on.
 */
import { fetchResource, FetchRefused } from '../../http/outbound.ts';
import { describeDrawio, describeSvg, isDrawio, isSvg, mermaidType } from './diagram.ts';
import { looksLikeHtml, readHtml } from './html.ts';
import { pdfText } from './pdf.ts';
import { readRepo } from './repo.ts';
import { humanSize } from './repo-files.ts';
import {
  fetchBounds,
  Unreadable,
  type ArtifactImage,
  type ArtifactPart,
  type ArtifactView,
  type ReadOptions,
  type ReadSource,
  type SubmittedArtifact,
} from './types.ts';

export { Unreadable } from './types.ts';
export type { ArtifactImage, ArtifactPart, ArtifactView, ReadOptions, SubmittedArtifact } from './types.ts';

const IMAGE_TYPES = /^image\/(png|jpeg|gif|webp)$/;
const TEXT_TYPES = /^(text\/|application\/(json|xml|xhtml\+xml|ld\+json|javascript)|image\/svg\+xml)/;
const mimeOf = (contentType: string) => contentType.split(';')[0]!.trim().toLowerCase();

/** Which content types `ref_url` may have, per kind. */
function accepts(kind: string): (contentType: string) => boolean {
  return (contentType) => {
    const mime = mimeOf(contentType);
    if (!mime || TEXT_TYPES.test(mime)) return true;
    if (mime === 'application/pdf') return kind === 'document' || kind === 'diagram';
    if (IMAGE_TYPES.test(mime)) return kind === 'diagram';
    if (mime === 'application/octet-stream') return kind === 'document' || kind === 'diagram';
    return false;
  };
}

/** A `data:` URL split into media type and bytes, or undefined when `text` is not one. */
export function parseDataUrl(text: string): { mediaType: string; bytes: Buffer } | undefined {
  const m = /^data:([a-z0-9.+-]+\/[a-z0-9.+-]+)?((?:;[a-z0-9-]+=[^;,]*)*)(;base64)?,/i.exec(text.slice(0, 300));
  if (!m) return undefined;
  const data = text.slice(m[0].length);
  const bytes = m[3] ? Buffer.from(data, 'base64') : Buffer.from(decodeURIComponent(data), 'utf8');
  return { mediaType: (m[1] ?? 'text/plain').toLowerCase(), bytes };
}

/** What one piece of text shows, per kind: parts for the section. */
function readText(kind: string, text: string, mime: string, label: string): ArtifactPart[] {
  if ((mime === 'image/svg+xml' || isSvg(text)) && kind !== 'site') {
    return [{ heading: `${label}: SVG drawing`, text: `${describeSvg(text)}\nsource:\n${text}` }];
  }
  if (isDrawio(text)) return [{ heading: `${label}: draw.io diagram`, text: `${describeDrawio(text)}\nsource:\n${text}` }];
  if (kind === 'diagram') {
    const type = mermaidType(text);
    if (type) return [{ heading: `${label}: Mermaid ${type} diagram`, text }];
    if (/^\s*@start(uml|mindmap|gantt|wbs)/.test(text)) return [{ heading: `${label}: PlantUML diagram`, text }];
  }
  if (mime === 'text/html' || mime === 'application/xhtml+xml' || ((mime === '' || mime === 'text/plain') && looksLikeHtml(text))) {
    const page = readHtml(text);
    const lines = [
      page.title ? `title: ${page.title}` : undefined,
      page.description ? `description: ${page.description}` : undefined,
      `stylesheets: ${page.stylesheets.join(', ') || 'none'}${page.inlineStyles ? ` (+ ${page.inlineStyles} inline <style>)` : ''}`,
      `scripts: ${page.scripts.join(', ') || 'none'}${page.inlineScripts ? ` (+ ${page.inlineScripts} inline <script>)` : ''}`,
      'readable text:',
      page.text || '(none)',
    ];
    return [{ heading: `${label}: HTML page`, text: lines.filter((l) => l !== undefined).join('\n') }];
  }
  const what = mime === 'text/markdown' || /^#{1,6} |\n#{1,6} |\n[-*] |\]\(/.test(text) ? 'Markdown' : 'text';
  return [{ heading: `${label}: ${what}`, text }];
}

/** Bytes of a known media type → parts and images. Throws `Unreadable`. */
async function readBytes(
  kind: string,
  mime: string,
  bytes: Buffer,
  label: string,
  o: ReadOptions,
  images: ArtifactImage[],
): Promise<{ parts: ArtifactPart[]; detail: string }> {
  const isPdf = mime === 'application/pdf' || bytes.subarray(0, 5).toString('latin1') === '%PDF-';
  if (isPdf) {
    if (kind !== 'document' && kind !== 'diagram') throw new Unreadable(`${label} is a PDF, which is not read for a ${kind}`);
    const pdf = await pdfText(bytes, o.signal);
    const note = pdf.readPages < pdf.pages ? ` (first ${pdf.readPages} of ${pdf.pages} pages)` : '';
    if (!pdf.text.trim()) throw new Unreadable(`${label} is a PDF without text (a scan?): submit it as text or an image`);
    return { parts: [{ heading: `${label}: PDF, ${pdf.pages} pages${note}`, text: pdf.text }], detail: `PDF, ${pdf.pages} pages` };
  }
  if (IMAGE_TYPES.test(mime)) {
    if (kind !== 'diagram') throw new Unreadable(`${label} is an image, which is only read for a diagram`);
    if (!o.vision) throw new Unreadable('images cannot be graded here: submit the diagram as Mermaid, SVG or draw.io text');
    images.push({ source: label, mediaType: mime, bytes: bytes.length, dataUrl: `data:${mime};base64,${bytes.toString('base64')}` });
    return {
      parts: [
        { heading: `${label}: image ${images.length} (${mime}, ${humanSize(bytes.length)})`, text: `(attached after this section as image ${images.length})` },
      ],
      detail: `${mime}, ${humanSize(bytes.length)}`,
    };
  }
  if (mime && !TEXT_TYPES.test(mime) && mime !== 'application/octet-stream') throw new Unreadable(`${label} is ${mime}, which is not read for a ${kind}`);
  if (bytes.subarray(0, 8192).includes(0)) throw new Unreadable(`${label} is binary, not text`);
  const text = new TextDecoder().decode(bytes);
  return { parts: readText(kind, text, mime, label), detail: `${mime || 'text'}, ${humanSize(bytes.length)}` };
}

/** Read `artifact` as described in the header. Throws `Unreadable` when nothing can be read. */
export async function readArtifact(artifact: SubmittedArtifact, o: ReadOptions): Promise<ArtifactView> {
  const parts: ArtifactPart[] = [];
  const images: ArtifactImage[] = [];
  const sources: ReadSource[] = [];
  const failed = (field: ReadSource['field'], err: unknown) => {
    if (!(err instanceof Unreadable) && !(err instanceof FetchRefused)) throw err;
    sources.push({ field, ok: false, detail: err.message });
    parts.push({ heading: `${field}: could not be read`, text: err.message });
  };

  if (artifact.content !== undefined && artifact.content !== null) {
    try {
      const data = parseDataUrl(artifact.content);
      const read = data
        ? await readBytes(artifact.kind, data.mediaType, data.bytes, 'content', o, images)
        : { parts: readText(artifact.kind, artifact.content, '', 'content'), detail: `text, ${humanSize(Buffer.byteLength(artifact.content))}` };
      parts.push(...read.parts);
      sources.push({ field: 'content', ok: true, detail: read.detail });
    } catch (err) {
      failed('content', err);
    }
  }

  if (artifact.ref_url) {
    try {
      const res = await fetchResource(artifact.ref_url, {
        ...fetchBounds(o),
        accept: accepts(artifact.kind),
      });
      const mime = mimeOf(res.contentType);
      const binary = mime === 'application/pdf' || IMAGE_TYPES.test(mime) || mime === 'application/octet-stream';
      if (res.truncated && binary) throw new Unreadable(`ref_url is over the size limit (${humanSize(o.maxBytes)})`);
      const read = await readBytes(artifact.kind, mime, res.body, 'ref_url', o, images);
      const cut = res.truncated ? `, cut at ${humanSize(o.maxBytes)}` : '';
      parts.push(...read.parts.map((p, i) => (i === 0 ? { ...p, heading: `${p.heading} at ${res.url} (HTTP ${res.status}${cut})` } : p)));
      sources.push({ field: 'ref_url', ok: true, detail: `${read.detail}${cut}` });
    } catch (err) {
      failed('ref_url', err instanceof FetchRefused ? new Unreadable(`ref_url could not be fetched: ${err.message}`) : err);
    }
  }

  if (artifact.repo_url) {
    try {
      const used = parts.reduce((n, p) => n + Buffer.byteLength(p.text) + p.heading.length + 8, 0);
      const repo = await readRepo(artifact.repo_url, o, Math.max(4096, o.inputBytes - used));
      parts.push({ heading: `repo_url: ${artifact.repo_url} (${repo.detail})`, text: repo.text });
      sources.push({ field: 'repo_url', ok: true, detail: repo.detail });
    } catch (err) {
      failed('repo_url', err);
    }
  }

  if (!sources.some((s) => s.ok)) {
    throw new Unreadable(sources.map((s) => s.detail).join('; ') || 'the artifact has nothing to read');
  }
  return { parts: cutToBudget(parts, o.inputBytes), images, sources };
}

/** Cut the parts' text so that all of it fits `budget` bytes, noting where it was cut. */
function cutToBudget(parts: ArtifactPart[], budget: number): ArtifactPart[] {
  let left = budget;
  return parts.map((p) => {
    const size = Buffer.byteLength(p.text);
    if (size <= left) {
      left -= size;
      return p;
    }
    const keep = Math.max(0, left);
    left = 0;
    const text = new TextDecoder().decode(Buffer.from(p.text).subarray(0, keep)).replace(/\uFFFD$/, '');
    return { ...p, text: `${text}\n[… cut here: the rest is over the grader's input budget of ${humanSize(budget)}]` };
  });
}

/**
 * Text diagrams, summarised for the grader next to their source: Mermaid (the diagram type from
 * its first line), SVG (its title, description and text labels) and draw.io / diagrams.net XML
 * (its shapes and the connections between them, also from compressed `<diagram>` pages).
 */
import { inflateRawSync } from 'node:zlib';
import { decodeHTML } from 'entities';
import { attribute } from './html.ts';

const MERMAID_TYPES =
  /^(graph|flowchart|sequenceDiagram|classDiagram|stateDiagram(?:-v2)?|erDiagram|gantt|pie|journey|gitGraph|mindmap|timeline|quadrantChart|requirementDiagram|sankey-beta|xychart-beta|block-beta|packet-beta|architecture-beta|C4Context|C4Container|C4Component|C4Dynamic|C4Deployment)\b/;

/** The Mermaid diagram type of `text` (`flowchart`, `sequenceDiagram`, …), or undefined when it is not Mermaid. */
export function mermaidType(text: string): string | undefined {
  const fenced = /```mermaid\s*\n([\s\S]*?)```/.exec(text);
  const source = fenced ? fenced[1]! : text;
  for (const raw of source.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('%%') || line === '---' || /^[a-zA-Z]+:\s/.test(line)) continue; // blank, comment, front matter
    return MERMAID_TYPES.exec(line)?.[1];
  }
  return undefined;
}

/** True when `text` is an SVG document. */
export const isSvg = (text: string) => /^\s*(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*)*(<!DOCTYPE svg[^>]*>\s*)?<svg\b/i.test(text);

/** True when `text` is draw.io / diagrams.net XML. */
export const isDrawio = (text: string) => /^\s*(<\?xml[^>]*>\s*)?<(mxfile|mxGraphModel)\b/i.test(text);

const stripTags = (s: string) =>
  decodeHTML(s.replace(/<[^>]*>/g, ' '))
    .replace(/\s+/g, ' ')
    .trim();

/** Title, description and text labels of an SVG, one label per line. */
export function describeSvg(svg: string): string {
  const title = /<title\b[^>]*>([\s\S]*?)<\/title>/i.exec(svg)?.[1];
  const desc = /<desc\b[^>]*>([\s\S]*?)<\/desc>/i.exec(svg)?.[1];
  const labels = [...svg.matchAll(/<text\b[^>]*>([\s\S]*?)<\/text>/gi)].map((m) => stripTags(m[1]!)).filter(Boolean);
  const shapes = (svg.match(/<(rect|circle|ellipse|polygon|path|line|polyline)\b/gi) ?? []).length;
  return [
    title ? `title: ${stripTags(title)}` : undefined,
    desc ? `description: ${stripTags(desc)}` : undefined,
    `shapes: ${shapes}`,
    labels.length ? `text labels (${labels.length}):\n${labels.map((l) => `- ${l}`).join('\n')}` : 'text labels: none',
  ]
    .filter(Boolean)
    .join('\n');
}

/**
 * The graph models of a draw.io file: inline `<mxGraphModel>`s and compressed `<diagram>` pages
 * (base64 of raw-deflated, URI-encoded XML). Pages that cannot be decoded are skipped.
 */
function graphModels(xml: string): { name: string; model: string }[] {
  if (/^\s*(<\?xml[^>]*>\s*)?<mxGraphModel\b/i.test(xml)) return [{ name: 'page 1', model: xml }];
  const pages: { name: string; model: string }[] = [];
  for (const [i, m] of [...xml.matchAll(/<diagram\b([^>]*)>([\s\S]*?)<\/diagram>/gi)].entries()) {
    const name = attribute(m[1]!, 'name') || `page ${i + 1}`;
    const inner = m[2]!.trim();
    if (/<mxGraphModel\b/i.test(inner)) {
      pages.push({ name, model: inner });
      continue;
    }
    try {
      const inflated = inflateRawSync(Buffer.from(inner, 'base64'), { maxOutputLength: 8 * 1024 * 1024 }).toString('utf8');
      pages.push({ name, model: decodeURIComponent(inflated) });
    } catch {
      // not a page we can read; the source is still shown
    }
  }
  return pages;
}

/** Shapes (vertices with their labels) and connections (edges: source → target) of a draw.io file. */
export function describeDrawio(xml: string): string {
  const out: string[] = [];
  for (const page of graphModels(xml)) {
    const cells = [...page.model.matchAll(/<mxCell\b([^>]*?)\/?>/gi)].map((m) => ({
      id: attribute(m[1]!, 'id') ?? '',
      value: stripTags(attribute(m[1]!, 'value') ?? ''),
      vertex: attribute(m[1]!, 'vertex') === '1',
      edge: attribute(m[1]!, 'edge') === '1',
      source: attribute(m[1]!, 'source'),
      target: attribute(m[1]!, 'target'),
    }));
    // <UserObject label="…"><mxCell …/></UserObject> carries the label outside the cell.
    for (const m of page.model.matchAll(/<(UserObject|object)\b([^>]*)>\s*<mxCell\b([^>]*?)\/?>/gi)) {
      const id = attribute(m[2]!, 'id');
      const cell = cells.find((c) => c.id === id || (!c.id && attribute(m[3]!, 'vertex') === '1'));
      if (cell && !cell.value) cell.value = stripTags(attribute(m[2]!, 'label') ?? '');
      if (id && !cells.some((c) => c.id === id)) {
        cells.push({
          id,
          value: stripTags(attribute(m[2]!, 'label') ?? ''),
          vertex: attribute(m[3]!, 'vertex') === '1',
          edge: attribute(m[3]!, 'edge') === '1',
          source: attribute(m[3]!, 'source'),
          target: attribute(m[3]!, 'target'),
        });
      }
    }
    const label = (id: string | undefined) => {
      const c = cells.find((x) => x.id === id);
      return c?.value ? `"${c.value}"` : `#${id ?? '?'}`;
    };
    const vertices = cells.filter((c) => c.vertex);
    const edges = cells.filter((c) => c.edge);
    out.push(
      `${page.name}: ${vertices.length} shapes, ${edges.length} connections`,
      ...vertices.map((v) => `- shape ${label(v.id)}`),
      ...edges.map((e) => `- ${label(e.source)} → ${label(e.target)}${e.value ? ` (${e.value})` : ''}`),
    );
  }
  return out.length ? out.join('\n') : 'no readable pages';
}

/**
 * Readable text of an HTML page, for the grader: what a person would read, plus the names of the
 * page's stylesheets and scripts (a site's structure shows in them).
 *
 * Not a browser: a small tag-stripper that is good enough to grade. It drops comments and the
 * contents of `script`, `style`, `noscript`, `template`, `svg` and `head` (except `title` and the
 * meta description), turns block ends and `<br>` into line breaks, keeps image `alt` text as
 * `[image: …]`, decodes character references as a browser does (the `entities` library) and collapses blank runs. Linked CSS (`<link rel=stylesheet
 * href>`) and JS (`<script src>`) are listed by their URL as written in the page.
 */
import { decodeHTML, decodeHTMLAttribute } from 'entities';

export interface ReadablePage {
  title: string;
  description: string;
  /** `href` of each `<link rel="stylesheet">`, in page order, without duplicates. */
  stylesheets: string[];
  /** `src` of each `<script src>`, in page order, without duplicates. */
  scripts: string[];
  /** Inline `<style>` / `<script>` blocks counted (their text is not shown). */
  inlineStyles: number;
  inlineScripts: number;
  text: string;
}

/** The value of attribute `name` in the attribute text of one tag, decoded; undefined when absent. */
export function attribute(tag: string, name: string): string | undefined {
  const m = new RegExp(`(?:^|[\\s"'/])${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s"'>]+))`, 'i').exec(tag);
  return m ? decodeHTMLAttribute(m[1] ?? m[2] ?? m[3] ?? '') : undefined;
}

const unique = (values: string[]) => [...new Set(values.filter(Boolean))];

/** True when `text` looks like an HTML document or fragment rather than prose or Markdown. */
export function looksLikeHtml(text: string): boolean {
  const head = text.slice(0, 2000).trimStart().toLowerCase();
  if (head.startsWith('<!doctype html') || head.startsWith('<html')) return true;
  const tags = text.slice(0, 20_000).match(/<\/?(html|head|body|div|p|h[1-6]|ul|ol|li|table|section|article|main|nav|header|footer|span|a|img|form)\b[^>]*>/gi);
  return (tags?.length ?? 0) >= 3;
}

/** Read `html` as described in the header. */
export function readHtml(html: string): ReadablePage {
  const withoutComments = html.replace(/<!--[\s\S]*?(-->|$)/g, ' ');
  const tags = [...withoutComments.matchAll(/<(link|script|meta)\b([^>]*)>/gi)];
  const stylesheets = unique(
    tags.filter((m) => m[1]!.toLowerCase() === 'link' && /\bstylesheet\b/i.test(attribute(m[2]!, 'rel') ?? '')).map((m) => attribute(m[2]!, 'href') ?? ''),
  );
  const scriptTags = tags.filter((m) => m[1]!.toLowerCase() === 'script');
  const scripts = unique(scriptTags.map((m) => attribute(m[2]!, 'src') ?? ''));
  const inlineScripts = scriptTags.filter((m) => attribute(m[2]!, 'src') === undefined).length;
  const inlineStyles = (withoutComments.match(/<style\b/gi) ?? []).length;
  const description =
    tags
      .filter((m) => m[1]!.toLowerCase() === 'meta' && (attribute(m[2]!, 'name') ?? '').toLowerCase() === 'description')
      .map((m) => attribute(m[2]!, 'content') ?? '')[0] ?? '';
  const titleMatch = /<title\b[^>]*>([\s\S]*?)<\/title>/i.exec(withoutComments);
  const title = titleMatch ? collapse(decodeHTML(titleMatch[1]!.replace(/<[^>]*>/g, ''))) : '';

  let body = withoutComments
    .replace(/<head\b[\s\S]*?(<\/head>|$)/i, ' ')
    .replace(/<(script|style|noscript|template|svg|iframe|object)\b[\s\S]*?(<\/\1\s*>|$)/gi, ' ');
  body = body
    .replace(/<img\b([^>]*)>/gi, (_all, attrs: string) => {
      const alt = attribute(attrs, 'alt');
      return alt ? ` [image: ${alt}] ` : ' ';
    })
    .replace(/<(br|hr)\b[^>]*>/gi, '\n')
    .replace(
      /<\/?(p|div|section|article|main|header|footer|nav|aside|h[1-6]|li|ul|ol|dl|dt|dd|tr|table|blockquote|pre|form|fieldset|figure|figcaption)\b[^>]*>/gi,
      '\n',
    )
    .replace(/<\/?(td|th)\b[^>]*>/gi, ' \t ')
    .replace(/<[^>]*>/g, '');
  const text = decodeHTML(body)
    .split('\n')
    .map((line) => collapse(line))
    .filter((line, i, all) => line !== '' || (i > 0 && all[i - 1] !== ''))
    .join('\n')
    .trim();
  return { title, description: collapse(description), stylesheets, scripts, inlineStyles, inlineScripts, text };
}

const collapse = (s: string) => s.replace(/[ \t\r\f\v\u00a0]+/g, ' ').trim();

/**
 * An activity's `spec` (Markdown written by authors, possibly imported from elsewhere) as HTML
 * safe to put into the player's page: `marked` renders it (GitHub-flavoured), then
 * `sanitize-html` keeps only an allowlist of elements and attributes (no scripts, event
 * handlers, styles, iframes or forms; links and images http(s) only, links open in a new tab
 * with `rel="noopener noreferrer"`). Rendering happens on the server, so the player's script
 * carries neither library.
 */
import { marked } from 'marked';
import sanitizeHtml from 'sanitize-html';

const SANITIZE: sanitizeHtml.IOptions = {
  allowedTags: [...sanitizeHtml.defaults.allowedTags, 'img', 'del'],
  allowedAttributes: { a: ['href', 'title', 'target', 'rel'], img: ['src', 'alt', 'title'], code: ['class'], ol: ['start'], th: ['align'], td: ['align'] },
  allowedSchemes: ['http', 'https', 'mailto'],
  allowedSchemesByTag: { img: ['http', 'https'] },
  allowProtocolRelative: false,
  transformTags: { a: sanitizeHtml.simpleTransform('a', { target: '_blank', rel: 'noopener noreferrer' }) },
};

/** `markdown` rendered to sanitised HTML. */
export function markdownToSafeHtml(markdown: string): string {
  return sanitizeHtml(marked.parse(markdown, { async: false, gfm: true }), SANITIZE);
}

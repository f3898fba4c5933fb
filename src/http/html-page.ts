/**
 * The shell of the service's server-rendered HTML pages (the OAuth pages, the player): doctype,
 * `lang="en"`, UTF-8, a mobile viewport and `referrer: no-referrer` (the pages' URLs may carry
 * what a third party must not see), then the page's own title, head elements and body.
 */
import { escapeUTF8 } from 'entities';

/**
 * A whole HTML document. `title` is the plain text of `<title>` (escaped here); `head`, the
 * elements after it, and `body`, the content of `<body>`, are HTML inserted as given: escape what
 * comes from outside in them first.
 */
export function htmlPage(p: { title: string; head: string; body: string }): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeUTF8(p.title)}</title>
${p.head}
</head>
<body>
${p.body}
</body>
</html>
`;
}

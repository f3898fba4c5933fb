/**
 * Text of a PDF (the `unpdf` library: Mozilla's PDF.js built for servers). At most
 * `MAX_PDF_PAGES` pages are read; a PDF that cannot be parsed (damaged, encrypted) throws
 * `Unreadable`. PDF.js cannot be interrupted, so a PDF is read only after its download fitted the
 * size cap, and the result is awaited at most until `signal` fires.
 */
import { Unreadable } from './types.ts';

export const MAX_PDF_PAGES = 100;

/** `{pages, text}` of `bytes`, pages joined by blank lines. Throws `Unreadable`. */
export async function pdfText(bytes: Uint8Array, signal?: AbortSignal): Promise<{ pages: number; readPages: number; text: string }> {
  const { getDocumentProxy } = await import('unpdf');
  const work = (async () => {
    const pdf = await getDocumentProxy(new Uint8Array(bytes), { isEvalSupported: false, useSystemFonts: false, verbosity: 0 } as never);
    try {
      const readPages = Math.min(pdf.numPages, MAX_PDF_PAGES);
      const texts: string[] = [];
      for (let i = 1; i <= readPages; i++) {
        const page = await pdf.getPage(i);
        const content = await page.getTextContent();
        texts.push(
          content.items
            .map((item) => ('str' in item ? item.str + (item.hasEOL ? '\n' : '') : ''))
            .join('')
            .trim(),
        );
      }
      return { pages: pdf.numPages, readPages, text: texts.join('\n\n') };
    } finally {
      await pdf.destroy().catch(() => {});
    }
  })();
  const aborted = new Promise<never>((_, reject) => {
    if (!signal) return;
    const fail = () => reject(new Unreadable('the PDF took too long to read'));
    if (signal.aborted) fail();
    else signal.addEventListener('abort', fail, { once: true });
  });
  try {
    return await Promise.race([work, aborted]);
  } catch (err) {
    if (err instanceof Unreadable) throw err;
    throw new Unreadable(`the PDF could not be read (${(err as Error).name === 'PasswordException' ? 'it is encrypted' : 'it is damaged or not a PDF'})`);
  } finally {
    work.catch(() => {});
  }
}

// The part of negotiator 1.x (jshttp; no bundled types) that src/results/exports uses.
declare module 'negotiator' {
  export default class Negotiator {
    constructor(request: { headers: Record<string, string | string[] | undefined> });
    /** The acceptable of `available`, best first (RFC 9110 §12.5.1: most specific range, then q). */
    mediaTypes(available: string[]): string[];
    /** The acceptable of `available`, best first; ties by `preferred`'s order. */
    encodings(available: string[], options?: { preferred?: string[] }): string[];
  }
}

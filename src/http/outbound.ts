/**
 * The service's outbound guard (DESIGN §5 "Outbound fetches"): every request the service makes to
 * a URL it did not choose itself — a learner's `ref_url` for the judge, an OAuth client's metadata
 * document, an LTI platform's JWK set, token endpoint, line items and rosters.
 *
 * - http(s) only, no credentials in the URL;
 * - the host's addresses are resolved first and the request is refused when any of them is
 *   private, loopback, link-local, CGNAT, multicast, documentation, unspecified or an
 *   IPv4-mapped/NAT64/6to4 form of those (`isBlockedAddress`), unless `allowPrivate`
 *   (configuration `SVC_FETCH_ALLOW_PRIVATE`, tests only);
 * - the connection is pinned to the address that was checked (no second DNS answer can swap
 *   in an internal address: DNS rebinding);
 * - redirects are followed by hand, at most `maxRedirects`, each hop checked again;
 * - only the content types the caller accepts (`fetchPage`: text-like ones); the body is cut at
 *   `maxBytes`; the whole fetch, all hops, is bounded by `timeoutMs` (and the caller's `signal`).
 * Failures throw `FetchRefused` with a short reason that is safe to show the model and learner.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/**
 * A refused or failed outbound request; the message is short and safe to show. `status` is the
 * HTTP status when the other side answered one outside 2xx (so callers can tell a 4xx refusal
 * from a 5xx outage), else undefined (network error, timeout, rule refusal).
 */
export class FetchRefused extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  blocked.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 96],
  ['::ffff:0:0:0', 96],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  blocked.addSubnet(net, prefix, 'ipv6');

/**
 * True when `ip` (IPv4 or IPv6 text) must not be fetched from; anything unparseable counts.
 * IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`) are checked against the IPv4 rules (Node's
 * BlockList does that by itself).
 */
export function isBlockedAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 0) return true;
  return blocked.check(ip, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * Static check of a URL a learner submits, without DNS: a reason to refuse it, or undefined.
 * Refuses non-http(s) schemes, credentials, and (unless `allowPrivate`) `localhost` names and
 * literal addresses that `isBlockedAddress` refuses. The fetch re-checks resolved addresses.
 */
export function refuseUrl(url: URL, allowPrivate: boolean, isBlocked = isBlockedAddress): string | undefined {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http(s) URL';
  if (!url.hostname) return 'must name a host';
  if (url.username || url.password) return 'must not carry credentials';
  if (allowPrivate) return undefined;
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return 'must not point to a private address';
  if (isIP(host) && isBlocked(host)) return 'must not point to a private address';
  return undefined;
}

export interface FetchedPage {
  /** The URL of the last hop. */
  url: string;
  status: number;
  contentType: string;
  /** The body as UTF-8 text, at most `maxBytes` bytes of it. */
  text: string;
  truncated: boolean;
}

/** A fetched body as bytes (`fetchResource`). */
export interface FetchedResource {
  /** The URL of the last hop. */
  url: string;
  status: number;
  /** The `content-type` header as sent ('' when absent). */
  contentType: string;
  /** At most `maxBytes` bytes of the body. */
  body: Buffer;
  /** True when the body was longer than `maxBytes` and was cut. */
  truncated: boolean;
  /** The response headers of the last hop. */
  headers: http.IncomingHttpHeaders;
}

export interface FetchOptions {
  allowPrivate: boolean;
  /** Budget for the whole fetch, all redirects included, in milliseconds. */
  timeoutMs: number;
  /** Largest body read, in bytes (default 256 KiB). */
  maxBytes?: number;
  maxRedirects?: number;
  /** Resolver (tests inject one); default `dns.lookup` with `all: true`. */
  lookup?: (host: string) => Promise<{ address: string; family: number }[]>;
  /** Address rule (tests inject one); default `isBlockedAddress`. Ignored when `allowPrivate`. */
  isBlocked?: (address: string) => boolean;
  /** Aborts the fetch (for example the grading run's deadline). */
  signal?: AbortSignal;
  /** Extra trusted CA certificates, PEM (`Config.fetchCa`, tests only). */
  ca?: string;
  /** HTTP method (default GET). Redirects are followed for GET only; another method's 3xx is a failure. */
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Request body (for POST/PUT), sent with `content-length`. */
  body?: string | Buffer;
  /** Extra request headers (for example `authorization`, `content-type`). */
  headers?: Record<string, string>;
}

const TEXT_TYPES = /^(text\/|application\/(json|xml|xhtml\+xml|ld\+json|javascript)|image\/svg\+xml)/i;

/** Fetch `rawUrl` under the rules above, text content types only; throws `FetchRefused`. */
export async function fetchPage(rawUrl: string, options: FetchOptions): Promise<FetchedPage> {
  const r = await fetchResource(rawUrl, { ...options, accept: (type) => !type || TEXT_TYPES.test(type) });
  return { url: r.url, status: r.status, contentType: r.contentType, text: new TextDecoder().decode(r.body), truncated: r.truncated };
}

/**
 * Fetch `rawUrl` under the rules above and return its body as bytes. `accept(contentType)`
 * decides which content types are read (others throw `FetchRefused` without reading the body).
 */
export async function fetchResource(
  rawUrl: string,
  options: FetchOptions & { accept: (contentType: string) => boolean; acceptHeader?: string },
): Promise<FetchedResource> {
  const maxBytes = options.maxBytes ?? 256 * 1024;
  const maxRedirects = options.maxRedirects ?? 3;
  const signal = options.signal ? AbortSignal.any([options.signal, AbortSignal.timeout(options.timeoutMs)]) : AbortSignal.timeout(options.timeoutMs);
  let url = new URL(rawUrl);
  for (let hop = 0; ; hop++) {
    const refusal = refuseUrl(url, options.allowPrivate, options.isBlocked);
    if (refusal) throw new FetchRefused(`the URL ${refusal}`);
    const target = await resolveAllowed(url, options);
    let res: http.IncomingMessage;
    try {
      res = await send(url, target, signal, options);
    } catch (err) {
      throw new FetchRefused(
        signal.aborted ? 'the page did not answer in time' : `the page could not be reached (${(err as NodeJS.ErrnoException).code ?? 'network error'})`,
      );
    }
    const status = res.statusCode ?? 0;
    if (status >= 300 && status < 400 && res.headers.location && (options.method ?? 'GET') === 'GET') {
      res.resume();
      if (hop >= maxRedirects) throw new FetchRefused('too many redirects');
      if (!URL.canParse(res.headers.location, url)) throw new FetchRefused('the page redirects to a malformed URL');
      url = new URL(res.headers.location, url);
      continue;
    }
    if (status < 200 || status >= 300) {
      res.resume();
      throw new FetchRefused(`the page answered HTTP ${status}`, status);
    }
    const contentType = String(res.headers['content-type'] ?? '');
    if (!options.accept(contentType)) {
      res.destroy();
      throw new FetchRefused(contentType ? `the page is ${contentType.split(';')[0]}, which cannot be read here` : 'the page has no content type');
    }
    const declared = Number(res.headers['content-length']);
    const chunks: Buffer[] = [];
    let size = 0;
    let truncated = Number.isFinite(declared) && declared > maxBytes;
    try {
      for await (const chunk of res as AsyncIterable<Buffer>) {
        if (size + chunk.length > maxBytes) {
          chunks.push(chunk.subarray(0, maxBytes - size));
          truncated = true;
          break;
        }
        chunks.push(chunk);
        size += chunk.length;
      }
    } catch {
      throw new FetchRefused(signal.aborted ? 'the page did not answer in time' : 'the page could not be read');
    } finally {
      res.destroy();
    }
    return { url: url.toString(), status, contentType, body: Buffer.concat(chunks), truncated, headers: res.headers };
  }
}

/**
 * The address to connect to for `url`: its literal IP, or the first of its resolved ones; throws
 * `FetchRefused` when the name does not resolve or (unless `allowPrivate`) any answer is blocked.
 */
export async function resolveAllowed(url: URL, options: FetchOptions): Promise<{ address: string; family: number }> {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const family = isIP(host);
  if (family) return { address: host, family }; // already checked by refuseUrl
  let addresses: { address: string; family: number }[];
  try {
    addresses = await (options.lookup ?? ((h: string) => dnsLookup(h, { all: true, verbatim: true })))(host);
  } catch {
    throw new FetchRefused('the host name could not be resolved');
  }
  if (!addresses.length) throw new FetchRefused('the host name could not be resolved');
  const isBlocked = options.isBlocked ?? isBlockedAddress;
  if (!options.allowPrivate && addresses.some((a) => isBlocked(a.address))) {
    throw new FetchRefused('the URL must not point to a private address');
  }
  return addresses[0]!;
}

function send(
  url: URL,
  target: { address: string; family: number },
  signal: AbortSignal,
  options: FetchOptions & { acceptHeader?: string },
): Promise<http.IncomingMessage> {
  const { ca, body } = options;
  // Connect to the checked address only, whatever DNS would say now.
  const lookup = ((_host: string, opts: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (opts?.all) callback(null, [target]);
    else callback(null, target.address, target.family);
  }) as unknown as LookupFunction;
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.request(url, {
      method: options.method ?? 'GET',
      agent: false,
      lookup,
      signal,
      ...(ca && url.protocol === 'https:' && { ca: [...tls.rootCertificates, ca] }),
      headers: {
        accept: options.acceptHeader ?? 'text/html, text/*;q=0.9, application/json;q=0.8, */*;q=0.1',
        'user-agent': 'svc/1',
        ...(body !== undefined && { 'content-length': String(Buffer.byteLength(body)) }),
        ...options.headers,
      },
    });
    req.on('response', resolve);
    req.on('error', reject);
    req.end(body);
  });
}

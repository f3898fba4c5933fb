/**
 * A test identity provider: a plain node:http server on 127.0.0.1 (random port) that speaks
 * the real protocols, and signs tokens for tests and demos.
 *
 *   GET /.well-known/jwks.json               the public keys (JWKS, RFC 7517), with `kid`, `alg`, `use`
 *   GET /.well-known/openid-configuration    OIDC discovery: {issuer, jwks_uri, …}
 *
 * `issuer` is the server's base URL (`http://127.0.0.1:<port>`, no trailing slash). Keys are
 * RS256 (default), ES256 or EdDSA (Ed25519); `jwksRequests` / `discoveryRequests` count fetches.
 *
 * `sign(claims, options)` makes a JWT: `iss` = issuer, `iat` = now, `exp` = now + 5 minutes,
 * `aud` = options.audience, then `claims` on top (so `claims.iss` overrides the issuer,
 * `claims.nbf` adds a not-before, `claims.exp` sets an absolute expiry).
 * Options:
 * - `audience`: the `aud` claim;
 * - `expiresIn`: seconds from now as a number (negative = already expired), or a span string
 *   relative to now: `[-]N` + `s|m|h|d|w`, optionally ` ago` (`'2h'`, `'-2m'`, `'10s ago'`);
 * - `kid`: sign with that key if it is one of ours (an older key after `rotate()`); otherwise
 *   sign with the current key but put this `kid` in the header (an unknown key id);
 * - `alg`: override the algorithm. `'none'` makes an unsecured JWT (no signature);
 *   `'HS256'`/`'HS384'`/`'HS512'` HMAC-sign with the current *public* key's PEM as the secret
 *   (the classic RS/HS key-confusion forgery). Both must be refused by a verifier.
 *
 * `rotate()` adds a new key with a new `kid` that signs from then on; older keys stay
 * published (as a real rotation overlaps). `remove(kid)` takes a key out of the published set
 * (a compromised or retired key) while `sign({…}, {kid})` can still sign with it; `kids` lists
 * the published key ids, oldest first.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';

interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
  publicPem: string;
}

export interface TestIdp {
  issuer: string;
  jwksUrl: string;
  discoveryUrl: string;
  /** How many times the JWKS and the discovery document were fetched. */
  jwksRequests: number;
  discoveryRequests: number;
  sign(
    claims: Record<string, unknown> & { sub: string },
    options?: { audience?: string; expiresIn?: string | number; kid?: string; alg?: string },
  ): Promise<string>;
  rotate(): Promise<void>;
  remove(kid: string): void;
  readonly kids: string[];
  close(): Promise<void>;
}

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };

/** Seconds of a span: a number, or `[-]N<s|m|h|d|w>` with an optional ` ago` (`'5m'`, `'-2m'`, `'10s ago'`). */
function spanSeconds(span: string | number): number {
  if (typeof span === 'number') return Math.trunc(span);
  const m = /^(-?\d+)\s*(s|sec|secs|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|w|weeks?)(\s+ago)?$/i.exec(span.trim());
  if (!m) throw new TypeError(`unsupported time span "${span}"`);
  const seconds = Number(m[1]) * UNIT_SECONDS[m[2]![0]!.toLowerCase()]!;
  return m[3] ? -seconds : seconds;
}

export async function startTestIdp(options: { alg?: 'RS256' | 'ES256' | 'EdDSA' } = {}): Promise<TestIdp> {
  const alg = options.alg ?? 'RS256';
  const counts = { jwks: 0, discovery: 0 };
  const keys: SigningKey[] = [];
  const removed: SigningKey[] = [];
  const newKey = async (): Promise<SigningKey> => {
    const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true });
    return {
      kid: `test-${randomBytes(6).toString('hex')}`,
      privateKey,
      publicJwk: await exportJWK(publicKey),
      publicPem: await exportSPKI(publicKey),
    };
  };
  keys.push(await newKey());

  let issuer = '';
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    let body: unknown;
    if (req.method === 'GET' && path === '/.well-known/jwks.json') {
      counts.jwks++;
      body = { keys: keys.map((k) => ({ ...k.publicJwk, kid: k.kid, alg, use: 'sig' })) };
    } else if (req.method === 'GET' && path === '/.well-known/openid-configuration') {
      counts.discovery++;
      body = {
        issuer,
        jwks_uri: `${issuer}/.well-known/jwks.json`,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        response_types_supported: ['code', 'id_token'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: [alg],
      };
    }
    if (body === undefined) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not_found"}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    issuer,
    jwksUrl: `${issuer}/.well-known/jwks.json`,
    discoveryUrl: `${issuer}/.well-known/openid-configuration`,
    get jwksRequests() {
      return counts.jwks;
    },
    get discoveryRequests() {
      return counts.discovery;
    },

    async sign(claims, signOptions = {}) {
      const current = keys[keys.length - 1]!;
      const key = [...keys, ...removed].find((k) => k.kid === signOptions.kid) ?? current;
      const kid = signOptions.kid ?? key.kid;
      const useAlg = signOptions.alg ?? alg;
      const now = Math.floor(Date.now() / 1000);
      const payload = {
        iss: issuer,
        iat: now,
        exp: now + spanSeconds(signOptions.expiresIn ?? 300),
        ...(signOptions.audience ? { aud: signOptions.audience } : {}),
        ...claims,
      };
      if (useAlg === 'none' || /^HS(256|384|512)$/.test(useAlg)) {
        // Hand-built, because jose (rightly) refuses to make these.
        const input = `${b64url({ alg: useAlg, typ: 'JWT', kid })}.${b64url(payload)}`;
        if (useAlg === 'none') return `${input}.`;
        return `${input}.${createHmac(`sha${useAlg.slice(2)}`, key.publicPem)
          .update(input)
          .digest('base64url')}`;
      }
      return new SignJWT(payload).setProtectedHeader({ alg: useAlg, typ: 'JWT', kid }).sign(key.privateKey);
    },

    async rotate() {
      keys.push(await newKey());
    },

    remove(kid) {
      const i = keys.findIndex((k) => k.kid === kid);
      if (i >= 0) removed.push(...keys.splice(i, 1));
    },

    get kids() {
      return keys.map((k) => k.kid);
    },

    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}

/**
 * Hostile variants of a valid session token, for tests that every verifier refuses them.
 * Each entry is [description, token]. `claims` are the decoded claims of a real token.
 */
import { SignJWT, generateKeyPair, base64url } from 'jose';

const enc = (v: object) => base64url.encode(JSON.stringify(v));

export async function forgedTokens(realToken: string, secret: string): Promise<[string, string][]> {
  const [header, payload, signature] = realToken.split('.');
  const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
  const key = new TextEncoder().encode(secret);
  const now = Math.floor(Date.now() / 1000);
  const sign = (c: object, alg = 'HS256', k: Uint8Array | CryptoKey = key) => new SignJWT({ ...c }).setProtectedHeader({ alg, typ: 'JWT' }).sign(k);
  const { privateKey } = await generateKeyPair('RS256');
  const { exp: _exp, ...withoutExp } = claims;
  return [
    ['alg none', `${enc({ alg: 'none', typ: 'JWT' })}.${payload}.`],
    ['HS256 signed with another secret', await sign(claims, 'HS256', new TextEncoder().encode('another-project-secret-of-32-chars!!'))],
    ['HS512 with the right secret', await sign(claims, 'HS512')],
    ['RS256 header over the HS256 signature', `${enc({ alg: 'RS256', typ: 'JWT' })}.${payload}.${signature}`],
    ['RS256 signed with a real RSA key', await sign(claims, 'RS256', privateKey)],
    ['expired', await sign({ ...claims, iat: now - 7200, exp: now - 3600 })],
    ['missing exp', await sign(withoutExp)],
    ['wrong aud', await sign({ ...claims, aud: 'someone-else' })],
    ['tampered payload', `${header}.${enc({ ...claims, sub: '00000000-0000-7000-8000-000000000000' })}.${signature}`],
    ['garbage', 'not-a-jwt'],
  ];
}

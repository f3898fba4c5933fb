/** The one RFC 6750 bearer parser (src/http/bearer.ts): what is a bearer credential and what is not. */
import { describe, expect, it } from 'vitest';
import { bearerToken } from '../../src/http/bearer.ts';

describe('bearerToken', () => {
  it.each([
    ['Bearer abc.DEF-_~+/123', 'abc.DEF-_~+/123'],
    ['bearer svc_abc_def', 'svc_abc_def'],
    ['BEARER  token==', 'token=='],
  ])('%s → the token', (header, token) => {
    expect(bearerToken(header)).toBe(token);
  });

  it.each([
    ['no header', undefined],
    ['another scheme', 'Basic dXNlcjpwYXNz'],
    ['no token', 'Bearer'],
    ['an empty token', 'Bearer '],
    ['two tokens', 'Bearer aaa bbb'],
    ['a tab instead of a space', 'Bearer\taaa'],
    ['a character outside b64token', 'Bearer a"b'],
    ['padding inside the token', 'Bearer ab=c'],
    ['a repeated header', ['Bearer aaa', 'Bearer bbb']],
  ])('%s → not a bearer credential', (_name, header) => {
    expect(bearerToken(header as string | string[] | undefined)).toBeUndefined();
  });
});

/** sha256 of a UTF-8 string as 64 lower-case hex digits: stored token and code hashes, content addresses, audit targets. */
import { createHash } from 'node:crypto';

export const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

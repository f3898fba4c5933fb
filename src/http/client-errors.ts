/**
 * Answers to requests Node's HTTP parser refuses before Fastify sees them (Fastify's
 * `clientErrorHandler`): a request line plus headers over `http.maxHeaderSize` (16 KiB unless
 * Node is started with `--max-http-header-size`) — a very long URL, typically — or bytes that are
 * not HTTP. Node's own answer is a bare `431` or `400` with no body; this one is a 400 with the
 * `/v1` error body (`invalid_request`, src/http/api-errors.ts) and an `X-Request-Id`, and closes
 * the connection. No path is known at that point, so every surface gets this body.
 */
import { randomUUID } from 'node:crypto';
import { maxHeaderSize } from 'node:http';
import type { Duplex } from 'node:stream';
import { errorBody } from './api-errors.ts';

export function clientErrorHandler(err: Error & { code?: string }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const requestId = randomUUID();
  const message =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? `the request line and headers are larger than ${maxHeaderSize} bytes (a URL that long is refused)`
      : 'malformed HTTP request';
  const body = JSON.stringify(errorBody('invalid_request', message, requestId));
  socket.end(
    'HTTP/1.1 400 Bad Request\r\n' +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${requestId}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}

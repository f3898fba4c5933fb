/**
 * The access log (issue #15): one structured line per request at `info`, written when the
 * response is done —
 *
 *   {"level":30,"reqId":"…","method":"GET","route":"/v1/results","status":200,"duration_ms":3.42,"msg":"request"}
 *
 * `route` is the route *template* (`/v1/learners/:id`), never the raw URL, so query strings
 * (OAuth codes, `?token=`) and ids do not reach the log; requests no route matched log
 * `route: null`. No header, key, token or body is ever logged. `reqId` is the request id the
 * client sent or we made (src/app.ts). `duration_ms` is Fastify's elapsed time, in milliseconds.
 * `SVC_ACCESS_LOG=off` turns it off; Fastify's own incoming/completed lines stay off (they log raw URLs).
 */
import type { FastifyInstance } from 'fastify';

export function accessLog(app: FastifyInstance): void {
  app.addHook('onResponse', (req, reply, done) => {
    req.log.info(
      { method: req.method, route: req.routeOptions.url ?? null, status: reply.statusCode, duration_ms: Math.round(reply.elapsedTime * 100) / 100 },
      'request',
    );
    done();
  });
}

/**
 * The metrics listener (issue #15): Prometheus text exposition format 0.0.4 at `GET /metrics` on
 * its own port (`SVC_METRICS_PORT`, host `SVC_METRICS_HOST`, default `HOST`), so the public port
 * never shows it and a network policy can keep it for the scraper. Anything else: 404.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { registry } from './metrics.ts';

export interface MetricsServer {
  /** `http://host:port` it listens on. */
  url: string;
  close(): Promise<void>;
}

export async function startMetricsServer(options: { port: number; host: string }): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found: GET /metrics\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' }).end(req.method === 'HEAD' ? undefined : text),
      () => res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics unavailable\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  return {
    url: `http://${address.includes(':') ? `[${address}]` : address}:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

// `/metrics` on a listener of its own (VERIFIER_METRICS_LISTEN), so a Prometheus scrape port can
// be opened to the monitoring namespace while the auth endpoint stays reachable only by NGINX.
// Low traffic by nature, so plain node:http; it answers GET /metrics and 404 to everything else.
import { createServer } from 'node:http';
import type { Listen } from '../config/model.js';
import type { Answer } from '../decision/plugins.js';
import { listenNodeServer } from './transport.js';

export interface MetricsListener {
  /** Resolves with the bound TCP port (0 for a unix socket). */
  listen(listen: Listen): Promise<number>;
  close(): Promise<void>;
}

export function createMetricsListener(
  metrics: () => Promise<Answer>,
  notFound: () => Answer,
): MetricsListener {
  const server = createServer((req, res) => {
    const write = (answer: Answer) =>
      res.writeHead(answer.status, answer.headers.flat()).end(answer.body);
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/metrics' && (req.method === 'GET' || req.method === 'HEAD'))
      void metrics().then(write);
    else write(notFound());
  });
  return {
    listen(listen) {
      return listenNodeServer(server, listen);
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

// What each path answers, independent of the HTTP library. Transports translate requests into
// these calls and write the results verbatim.
import type { Authorize } from './authorize.js';
import type { Header } from './verify-answer.js';
import type { Metrics } from './metrics.js';

export interface Answer {
  readonly status: number;
  readonly headers: readonly Header[];
  readonly body: string;
}

export interface Routes {
  /** GET /verify: the decision; the transport renders it (only ever 204, 401 or 403, no body). */
  readonly verify: Authorize;
  /** GET /healthz: the process is alive. */
  healthz(): Answer;
  /** GET /readyz: 200 once every issuer's key set has loaded (and is not too stale). */
  readyz(): Answer;
  /** GET /metrics: Prometheus text format; 404 when metrics have a listener of their own. */
  metrics(): Promise<Answer>;
  /** The metrics answer whatever the listener (for the metrics listener). */
  scrape(): Promise<Answer>;
  notFound(): Answer;
}

const TEXT: Header = ['Content-Type', 'text/plain; charset=utf-8'];
const NO_STORE: Header = ['Cache-Control', 'no-store'];

export function createRoutes(parts: {
  authorize: Authorize;
  isReady: () => boolean;
  metrics: Metrics;
  /** False when VERIFIER_METRICS_LISTEN moves `/metrics` to its own listener. */
  metricsOnMain?: boolean;
}): Routes {
  const ok: Answer = { status: 200, headers: [TEXT, NO_STORE], body: 'ok\n' };
  const notReady: Answer = {
    status: 503,
    headers: [TEXT, NO_STORE],
    body: 'key sets not loaded\n',
  };
  const notFound: Answer = { status: 404, headers: [TEXT], body: 'not found\n' };
  const scrape = async (): Promise<Answer> => ({
    status: 200,
    headers: [['Content-Type', parts.metrics.registry.contentType], NO_STORE],
    body: await parts.metrics.render(),
  });
  const onMain = parts.metricsOnMain ?? true;
  return {
    verify: parts.authorize,
    healthz: () => ok,
    readyz: () => (parts.isReady() ? ok : notReady),
    metrics: onMain ? scrape : () => Promise.resolve(notFound),
    scrape,
    notFound: () => notFound,
  };
}

export const STATUS_TEXT: Readonly<Record<number, string>> = {
  200: '200 OK',
  204: '204 No Content',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  503: '503 Service Unavailable',
};

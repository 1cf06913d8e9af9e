// What each path answers, independent of the HTTP library. Transports translate requests into
// these calls and write the results verbatim.
import { STATUS_CODES } from 'node:http';
import type { Authorize } from '../decision/authorize.js';
import type { Header } from '../decision/decision.js';
import type { Answer, Receiver } from '../decision/plugins.js';
import type { Metrics } from '../metrics.js';

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
  /** POST receivers by path (`/backchannel-logout`, `/ssf/events`); only the ones switched on. */
  readonly receivers: ReadonlyMap<string, Receiver>;
  /** A receiver path asked with another method. */
  methodNotAllowed(): Answer;
  /** A receiver body over the cap. */
  bodyTooLarge(): Answer;
}

const TEXT: Header = ['Content-Type', 'text/plain; charset=utf-8'];
const NO_STORE: Header = ['Cache-Control', 'no-store'];

export function createRoutes(parts: {
  authorize: Authorize;
  isReady: () => boolean;
  metrics: Metrics;
  /** False when VERIFIER_METRICS_LISTEN moves `/metrics` to its own listener. */
  metricsOnMain?: boolean;
  receivers?: ReadonlyMap<string, Receiver>;
  /** A line /readyz adds to its answer (e.g. the revocation store is unreachable). */
  readinessNote?: () => string | undefined;
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
  const readyz = (): Answer => {
    const note = parts.readinessNote?.();
    const base = parts.isReady() ? ok : notReady;
    if (note === undefined) return base;
    const body = base === ok ? `ok; ${note}\n` : `${base.body}${note}\n`;
    return { ...base, body };
  };
  const json = (status: number, body: unknown): Answer => ({
    status,
    headers: [['Content-Type', 'application/json'], NO_STORE],
    body: JSON.stringify(body),
  });
  return {
    verify: parts.authorize,
    healthz: () => ok,
    readyz,
    receivers: parts.receivers ?? new Map(),
    methodNotAllowed: () => json(405, { error: 'invalid_request' }),
    bodyTooLarge: () =>
      json(413, { error: 'invalid_request', error_description: 'the body is too large' }),
    metrics: onMain ? scrape : () => Promise.resolve(notFound),
    scrape,
    notFound: () => notFound,
  };
}

/** Status lines as uWS writes them (`204 No Content`), built once from node:http's reason phrases. */
export const STATUS_TEXT: Readonly<Record<number, string>> = Object.fromEntries(
  Object.entries(STATUS_CODES).map(([code, reason]) => [code, `${code} ${reason}`]),
);

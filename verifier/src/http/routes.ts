// What each path answers; transport.ts reads a request into these calls and writes the results
// verbatim (/verify's decision through verify-answer.ts).
import type { Authorize } from '../decision/authorize.js';
import type { Header } from '../decision/decision.js';
import type { Answer, Receiver } from '../decision/plugins.js';
import type { Metrics } from '../metrics.js';

/** A GET page: health, readiness, metrics. */
type Page = () => Answer | Promise<Answer>;

export interface Routes {
  /** /verify, any method (auth_request keeps the client's); absent on the metrics listener. */
  readonly verify?: Authorize;
  /** Asked before /verify does any token work; false: answered LIMITED (call-limit.ts). */
  readonly admit?: (clientKey: string | undefined) => boolean;
  /** GET pages by path (`/healthz`, `/readyz`, `/metrics` unless it has a listener of its own). */
  readonly pages: ReadonlyMap<string, Page>;
  /** POST receivers by path (`/backchannel-logout`, `/ssf/events`); only the ones switched on. */
  readonly receivers: ReadonlyMap<string, Receiver>;
}

const TEXT: Header = ['Content-Type', 'text/plain; charset=utf-8'];
const NO_STORE: Header = ['Cache-Control', 'no-store'];
const json = (status: number, body: unknown): Answer => ({
  status,
  headers: [['Content-Type', 'application/json'], NO_STORE],
  body: JSON.stringify(body),
});

export const NOT_FOUND: Answer = { status: 404, headers: [TEXT], body: 'not found\n' };
/** A receiver path asked with another method than POST. */
export const METHOD_NOT_ALLOWED = json(405, { error: 'invalid_request' });
/** A receiver body over the cap. */
export const BODY_TOO_LARGE = json(413, {
  error: 'invalid_request',
  error_description: 'the body is too large',
});

export function createRoutes(parts: {
  authorize: Authorize;
  admit?: Routes['admit'];
  isReady: () => boolean;
  metrics: Metrics;
  /** False when VERIFIER_METRICS_LISTEN moves `/metrics` to its own listener. */
  metricsOnMain?: boolean;
  receivers?: ReadonlyMap<string, Receiver>;
  /** A line /readyz adds to its answer (e.g. the revocation store is unreachable). */
  readinessNote?: () => string | undefined;
}): Routes & { readyz(): Answer; readonly metricsOnly: Routes } {
  const ok: Answer = { status: 200, headers: [TEXT, NO_STORE], body: 'ok\n' };
  const notReady: Answer = { ...ok, status: 503, body: 'key sets not loaded\n' };
  const scrape = async (): Promise<Answer> => ({
    status: 200,
    headers: [['Content-Type', parts.metrics.registry.contentType], NO_STORE],
    body: await parts.metrics.render(),
  });
  /** 200 once every issuer's key set has loaded (and is not too stale). */
  const readyz = (): Answer => {
    const note = parts.readinessNote?.();
    const base = parts.isReady() ? ok : notReady;
    if (note === undefined) return base;
    return { ...base, body: base === ok ? `ok; ${note}\n` : `${base.body}${note}\n` };
  };
  const pages = new Map<string, Page>([
    ['/healthz', () => ok],
    ['/readyz', readyz],
  ]);
  if (parts.metricsOnMain ?? true) pages.set('/metrics', scrape);
  return {
    verify: parts.authorize,
    admit: parts.admit,
    readyz,
    pages,
    receivers: parts.receivers ?? new Map<string, Receiver>(),
    // The metrics listener answers GET /metrics and 404 to everything else.
    metricsOnly: { pages: new Map([['/metrics', scrape]]), receivers: new Map() },
  };
}

import { afterEach, describe, expect, it } from 'vitest';
import { buildService } from '../testing/service.js';

const env = { VERIFIER_ISSUER: 'https://idp.test', VERIFIER_AUDIENCE: 'secret-gate-api' };
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

async function start(extra: Record<string, string>) {
  // The configured address only switches the mode; the test binds free ports (port 0).
  const { service } = buildService({ ...env, ...extra });
  const any = { kind: 'tcp', host: '127.0.0.1', port: 0 } as const;
  const bound = await service.listen(any, extra.VERIFIER_METRICS_LISTEN ? any : undefined);
  stops.push(() => service.stop(0));
  return {
    main: `http://127.0.0.1:${bound.port}`,
    metrics: `http://127.0.0.1:${bound.metricsPort ?? 0}`,
  };
}

describe('/metrics', () => {
  it('is served on the main listener when no metrics listener is set', async () => {
    const { main } = await start({});
    const answer = await fetch(`${main}/metrics`);
    expect(answer.status).toBe(200);
    expect(await answer.text()).toContain('verifier_decisions_total');
  });

  it('moves to its own listener when VERIFIER_METRICS_LISTEN is set: 404 on the auth listener', async () => {
    const { main, metrics } = await start({ VERIFIER_METRICS_LISTEN: '127.0.0.1:1' });
    expect((await fetch(`${main}/metrics`)).status).toBe(404);
    const scraped = await fetch(`${metrics}/metrics`);
    expect(scraped.status).toBe(200);
    expect(scraped.headers.get('cache-control')).toBe('no-store');
    expect(await scraped.text()).toContain('verifier_decisions_total');
    // The metrics listener answers nothing else: no auth decisions, no health endpoints.
    expect((await fetch(`${metrics}/verify`)).status).toBe(404);
    expect((await fetch(`${metrics}/healthz`)).status).toBe(404);
    // The auth listener keeps its health endpoints.
    expect((await fetch(`${main}/healthz`)).status).toBe(200);
  });
});

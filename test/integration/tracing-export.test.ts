// The export side of verifier/src/tracing/otel.ts against OTLP endpoints that fail: decisions never wait for
// an export, and every span that is not delivered is counted.
import { createServer, type Server } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { freePort } from '../../stack/ports.js';
import { allow } from '../../verifier/src/decision/decision.js';
import type { Authorize } from '../../verifier/src/decision/authorize.js';
import { createMetrics } from '../../verifier/src/metrics.js';
import { startTracing, type Tracing } from '../../verifier/src/tracing/otel.js';

const identity = { sub: 'alice', client: 'spa-demo', scopes: [], issuer: 'https://idp' };
const decide: Authorize = () => Promise.resolve(allow(identity));
const SAMPLED = (i: number) => `00-${String(i + 1).padStart(32, 'a')}-00f067aa0ba902b7-01`;

async function dropped(metrics: ReturnType<typeof createMetrics>, why: string): Promise<number> {
  const metric = await metrics.registry
    .getSingleMetric('verifier_trace_spans_dropped_total')
    ?.get();
  return metric?.values.find((v) => v.labels.why === why)?.value ?? 0;
}

async function tracingAt(endpoint: string): Promise<Tracing> {
  vi.stubEnv('OTEL_EXPORTER_OTLP_ENDPOINT', endpoint);
  vi.stubEnv('OTEL_BSP_MAX_QUEUE_SIZE', '8');
  vi.stubEnv('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', '4');
  vi.stubEnv('OTEL_BSP_SCHEDULE_DELAY', '10');
  vi.stubEnv('OTEL_EXPORTER_OTLP_TIMEOUT', '60000');
  const tracing = await startTracing({ protocol: 'http/json', serviceName: 'test' });
  vi.unstubAllEnvs();
  return tracing;
}

describe('an OTLP endpoint that is down or slow', () => {
  let silent: Server;
  let silentPort: number;
  beforeAll(async () => {
    silentPort = await freePort();
    // Takes the export and never answers.
    silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(silentPort, '127.0.0.1', resolve));
  });
  afterAll(() => {
    silent.closeAllConnections();
    silent.close();
  });

  it('never delays a decision, and counts what the full queue drops (a slow endpoint)', async () => {
    const tracing = await tracingAt(`http://127.0.0.1:${silentPort}`);
    const metrics = createMetrics({ size: 0, bytes: 0 }, new Map(), false);
    const authorize = tracing.traceAuthorize(decide, metrics);
    const started = performance.now();
    for (let i = 0; i < 200; i++)
      expect((await authorize({ traceparent: SAMPLED(i) })).outcome).toBe('allow');
    expect(performance.now() - started).toBeLessThan(5_000);
    await sleep(100);
    expect(await dropped(metrics, 'queue_full')).toBeGreaterThan(150);
    void tracing.shutdown().catch(() => undefined);
  });

  it('counts the spans of a failed export (an endpoint that refuses them)', async () => {
    const refusing = createServer((_req, res) => res.writeHead(400).end());
    const port = await freePort();
    await new Promise<void>((resolve) => refusing.listen(port, '127.0.0.1', resolve));
    const tracing = await tracingAt(`http://127.0.0.1:${port}`);
    const metrics = createMetrics({ size: 0, bytes: 0 }, new Map(), false);
    const authorize = tracing.traceAuthorize(decide, metrics);
    for (let i = 0; i < 4; i++) await authorize({ traceparent: SAMPLED(i) });
    for (let i = 0; i < 100 && (await dropped(metrics, 'export_failed')) < 4; i++) await sleep(50);
    expect(await dropped(metrics, 'export_failed')).toBe(4);
    await tracing.shutdown().catch(() => undefined);
    refusing.close();
  });
});

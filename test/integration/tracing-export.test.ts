// The export side of verifier/src/tracing/otel.ts against OTLP endpoints that fail (slow, refusing
// the export, or not listening at all): decisions never wait for an export, and every span that is
// not delivered is counted. And the sampler's say: a request NGINX marked unsampled makes no span
// under a parent-based sampler, and still does under one that is not.
import { createServer, type Server } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { freePort } from '../../stack/ports.js';
import { allow } from '../../verifier/src/decision/decision.js';
import type { Authorize } from '../../verifier/src/decision/authorize.js';
import { createMetrics } from '../../verifier/src/metrics.js';
import { startTracing, type Tracing } from '../../verifier/src/tracing/otel.js';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.js';

const identity = { sub: 'alice', client: 'spa-demo', scopes: [], issuer: 'https://idp' };
const decide: Authorize = () => Promise.resolve(allow(identity));
const SAMPLED = (i: number) => `00-${String(i + 1).padStart(32, 'a')}-00f067aa0ba902b7-01`;

async function dropped(metrics: ReturnType<typeof createMetrics>, why: string): Promise<number> {
  const metric = await metrics.registry
    .getSingleMetric('verifier_trace_spans_dropped_total')
    ?.get();
  return metric?.values.find((v) => v.labels.why === why)?.value ?? 0;
}

/** Tracing exporting to `endpoint` in batches of 4, 8 spans queued at most; `env` overrides. */
async function tracingAt(endpoint: string, env: Record<string, string> = {}): Promise<Tracing> {
  vi.stubEnv('OTEL_EXPORTER_OTLP_ENDPOINT', endpoint);
  vi.stubEnv('OTEL_BSP_MAX_QUEUE_SIZE', '8');
  vi.stubEnv('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', '4');
  vi.stubEnv('OTEL_BSP_SCHEDULE_DELAY', '10');
  vi.stubEnv('OTEL_EXPORTER_OTLP_TIMEOUT', '60000');
  for (const [name, value] of Object.entries(env)) vi.stubEnv(name, value);
  const tracing = await startTracing({ protocol: 'http/json', serviceName: 'test' });
  vi.unstubAllEnvs();
  return tracing;
}

/**
 * Tracing exporting to `endpoint` at once (OTEL_BSP_SCHEDULE_DELAY 10 ms) with `env` (the
 * sampler, its ratio), and its authorize over `decide`.
 */
async function tracedAt(endpoint: string, env: Record<string, string | undefined> = {}) {
  vi.stubEnv('OTEL_EXPORTER_OTLP_ENDPOINT', endpoint);
  vi.stubEnv('OTEL_BSP_SCHEDULE_DELAY', '10');
  for (const [name, value] of Object.entries(env)) if (value !== undefined) vi.stubEnv(name, value);
  const tracing = await startTracing({ protocol: 'http/json', serviceName: 'test' });
  vi.unstubAllEnvs();
  const authorize = tracing.traceAuthorize(
    decide,
    createMetrics({ size: 0, bytes: 0 }, new Map(), false),
  );
  return { tracing, authorize };
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

  it('answers every decision at once when nothing listens at the endpoint, and counts the failed export', async () => {
    // A port the kernel handed out and took back: every connection to it is refused.
    const closedPort = await freePort();
    // The exporter retries a refused connection until this timeout: one second, not ten.
    const tracing = await tracingAt(`http://127.0.0.1:${closedPort}`, {
      OTEL_EXPORTER_OTLP_TIMEOUT: '1000',
    });
    const metrics = createMetrics({ size: 0, bytes: 0 }, new Map(), false);
    const authorize = tracing.traceAuthorize(decide, metrics);
    const started = performance.now();
    for (let i = 0; i < 4; i++)
      expect(await authorize({ traceparent: SAMPLED(i) })).toMatchObject({
        outcome: 'allow',
        identity,
      });
    expect(performance.now() - started).toBeLessThan(500);
    for (let i = 0; i < 100 && (await dropped(metrics, 'export_failed')) < 4; i++) await sleep(50);
    expect(await dropped(metrics, 'export_failed')).toBe(4);
    expect(await dropped(metrics, 'queue_full')).toBe(0);
    await tracing.shutdown().catch(() => undefined);
  });
});

describe('a parent NGINX marked unsampled', () => {
  let receiver: OtlpReceiver;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
  });
  afterAll(() => receiver.close());
  const traceOf = (n: number) => String(n).padStart(32, 'c');
  const parent = (n: number, flags: string) => `00-${traceOf(n)}-00f067aa0ba902b7-${flags}`;

  async function exported(sampler: string | undefined, n: number): Promise<string[]> {
    const { tracing, authorize } = await tracedAt(receiver.endpoint, {
      OTEL_TRACES_SAMPLER: sampler,
    });
    expect((await authorize({ traceparent: parent(n, '00') })).outcome).toBe('allow');
    expect((await authorize({ traceparent: parent(n + 1, '01') })).outcome).toBe('allow');
    await receiver.serverSpan(traceOf(n + 1));
    await tracing.shutdown();
    return receiver
      .spans()
      .map((s) => s.traceId)
      .filter((id) => id === traceOf(n) || id === traceOf(n + 1));
  }

  it('is decided without a span under the default parent-based sampler, a sampled one is exported', async () => {
    expect(await exported(undefined, 10)).toEqual([traceOf(11)]);
  });

  it('still gets its span when the sampler ignores the parent (always_on)', async () => {
    expect((await exported('always_on', 20)).sort()).toEqual([traceOf(20), traceOf(21)]);
  });

  it('has the transport read what only a span reads (DPoP, X-Original-*) for the decisions it records', async () => {
    const recorded = async (sampler: string | undefined) => {
      if (sampler !== undefined) vi.stubEnv('OTEL_TRACES_SAMPLER', sampler);
      const tracing = await startTracing({ protocol: 'http/json', serviceName: 'test' });
      vi.unstubAllEnvs();
      const headers = [
        parent(40, '00'),
        parent(41, '01'),
        parent(42, '00').toUpperCase(),
        undefined,
      ];
      const answers = headers.map((header) => tracing.recordsDecision(header));
      await tracing.shutdown();
      return answers;
    };
    // Unsampled at the edge: no span; sampled, malformed (a fresh root) or absent: a span.
    expect(await recorded(undefined)).toEqual([false, true, true, true]);
    expect(await recorded('always_on')).toEqual([true, true, true, true]);
  });

  it('still records a root span for a malformed header whose flags read unsampled', async () => {
    const { tracing, authorize } = await tracedAt(receiver.endpoint);
    const before = receiver.spans().length;
    // Upper-case hex is not a traceparent (W3C §3.2): no parent said "unsampled", so the default
    // sampler records a span of a fresh trace, never the header's.
    const malformed = parent(30, '00').toUpperCase();
    expect((await authorize({ traceparent: malformed })).outcome).toBe('allow');
    await tracing.shutdown();
    const fresh = receiver.spans().slice(before);
    expect(fresh).toHaveLength(1);
    expect(fresh[0]!.traceId).not.toBe(traceOf(30));
    expect(fresh[0]!.parentSpanId).toBeUndefined();
  });

  /** The spans exported for `headers`, under `sampler` (and its ratio). */
  async function exportedFor(headers: string[], sampler: string, ratio?: string) {
    const { tracing, authorize } = await tracedAt(receiver.endpoint, {
      OTEL_TRACES_SAMPLER: sampler,
      OTEL_TRACES_SAMPLER_ARG: ratio,
    });
    const before = receiver.spans().length;
    for (const header of headers)
      expect((await authorize({ traceparent: header })).outcome).toBe('allow');
    await tracing.shutdown();
    return receiver.spans().slice(before);
  }

  it('samples the fresh root of a malformed header at the ratio, whatever its flags read', async () => {
    // Upper-case hex is no traceparent: each such request is a root the ratio decides, none
    // continuing the header's trace; a valid unsampled header makes no span at all.
    const malformed = (flags: string, from: number) =>
      Array.from({ length: 100 }, (_, i) => parent(from + i, flags).toUpperCase());
    const valid = Array.from({ length: 100 }, (_, i) => parent(300 + i, '00'));
    for (const headers of [malformed('00', 100), malformed('01', 200)]) {
      const spans = await exportedFor([...headers, ...valid], 'parentbased_traceidratio', '0.5');
      // Binomial(100, 0.5): 50 ± 5; 25..75 is five deviations either side.
      expect(spans.length).toBeGreaterThan(25);
      expect(spans.length).toBeLessThan(75);
      const headerTraces = new Set([...headers, ...valid].map((h) => h.slice(3, 35).toLowerCase()));
      for (const span of spans) {
        expect(headerTraces.has(span.traceId)).toBe(false);
        expect(span.parentSpanId).toBeUndefined();
      }
    }
  });

  it('draws a malformed header’s root once per request, as the transport asks and then its span', async () => {
    const { tracing, authorize } = await tracedAt(receiver.endpoint, {
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.5',
    });
    const before = receiver.spans().length;
    let readWhole = 0;
    for (let i = 0; i < 100; i++) {
      const header = parent(600 + i, '00').toUpperCase();
      // transport.ts: what it reads of the request, then the decision.
      if (tracing.recordsDecision(header)) readWhole++;
      expect((await authorize({ traceparent: header })).outcome).toBe('allow');
    }
    await tracing.shutdown();
    const spans = receiver.spans().slice(before);
    // One draw a request (two would sample a quarter), and the transport read whole exactly the
    // requests whose span records.
    expect(spans.length).toBeGreaterThan(25);
    expect(spans.length).toBeLessThan(75);
    expect(readWhole).toBe(spans.length);
  });

  it.each([
    ['0', 0],
    ['1', 100],
  ])('samples a malformed header’s root at ratio %s exactly', async (ratio, expected) => {
    const headers = Array.from({ length: 100 }, (_, i) => parent(700 + i, '00').toUpperCase());
    expect(await exportedFor(headers, 'parentbased_traceidratio', ratio)).toHaveLength(expected);
  });

  it('records only what NGINX sampled when roots are never sampled (parentbased_always_off)', async () => {
    const spans = await exportedFor(
      [
        parent(500, '00'),
        parent(501, '00').toUpperCase(),
        parent(502, '01').toUpperCase(),
        parent(503, '01'),
      ],
      'parentbased_always_off',
    );
    expect(spans.map((s) => s.traceId)).toEqual([traceOf(503)]);
  });
});

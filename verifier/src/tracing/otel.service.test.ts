import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AUDIENCE,
  ISSUER,
  mintToken,
  startJwksServer,
  type JwksServer,
} from '../testing/fixtures.js';
import { buildService, type TestService } from '../testing/service.js';
import { startTracing, type Tracing } from './otel.js';

// Tracing through the real decision path with the default parent-based sampler: the header of a
// request NGINX left unsampled is checked only to tell it from a malformed one, yet every decision
// log line written for it still names its trace, and a malformed one still starts a fresh trace.

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';
const header = (flags: string, traceId = TRACE) => `00-${traceId}-${PARENT}-${flags}`;

let jwks: JwksServer;
let exporter: InMemorySpanExporter;
let tracing: Tracing;
let gate: TestService;
let token: string;
beforeAll(async () => {
  jwks = await startJwksServer(['rsaA']);
  exporter = new InMemorySpanExporter();
  tracing = await startTracing({ protocol: 'http/protobuf', serviceName: 'test' }, exporter);
  gate = buildService(
    {},
    {
      file: {
        issuers: [{ issuer: ISSUER, audience: AUDIENCE, jwksUri: jwks.url }],
        policies: { default: { issuers: [ISSUER] } },
      },
      tracing,
    },
  );
  await gate.service.start();
  token = await mintToken();
  // Cached from here on: each decision below is made within its call.
  expect((await gate.service.authorize({ authorization: `Bearer ${token}` })).outcome).toBe(
    'allow',
  );
});
afterAll(async () => {
  await gate?.service.stop(0);
  await tracing.shutdown();
  await jwks.close();
});

/** Decides a cached request with `traceparent`; its decision log line and the spans it made. */
async function decide(traceparent: string) {
  // Spans of earlier decisions out of the way first.
  await tracing.forceFlush();
  exporter.reset();
  gate.lines.length = 0;
  const decision = gate.service.authorize({ authorization: `Bearer ${token}`, traceparent });
  expect(decision).not.toBeInstanceOf(Promise);
  expect((await decision).outcome).toBe('allow');
  await tracing.forceFlush();
  const lines = gate.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  const logged = lines.filter((line) => line.decision_log !== undefined);
  expect(logged).toHaveLength(1);
  return { line: logged[0]!, spans: exporter.getFinishedSpans() };
}

describe('a cached decision traced with the default sampler', () => {
  it('writes the trace id of a header NGINX left unsampled on its log line, and makes no span', async () => {
    const { line, spans } = await decide(header('00'));
    expect(line.trace_id).toBe(TRACE);
    expect(line.parent_span_id).toBe(PARENT);
    expect(spans).toEqual([]);
  });

  it('writes the trace id of a sampled header on its log line and on its span', async () => {
    const { line, spans } = await decide(header('01'));
    expect(line.trace_id).toBe(TRACE);
    expect(spans.map((span) => span.spanContext().traceId)).toEqual([TRACE]);
    expect(spans[0]!.parentSpanContext?.spanId).toBe(PARENT);
  });

  it.each([
    ['upper-case hex, flags unsampled', header('00', TRACE.toUpperCase())],
    ['upper-case hex, flags sampled', header('01', TRACE.toUpperCase())],
    ['a dash inside the parent id', `00-${TRACE}-00f067aa0ba90-b7-00`],
    ['an all-zero trace id', header('00', '0'.repeat(32))],
  ])('ignores a header with %s: a fresh root span, no trace id on the line', async (_, value) => {
    const { line, spans } = await decide(value);
    expect(line.trace_id).toBeUndefined();
    expect(spans).toHaveLength(1);
    expect(spans[0]!.spanContext().traceId).not.toBe(TRACE);
    expect(spans[0]!.parentSpanContext).toBeUndefined();
  });
});

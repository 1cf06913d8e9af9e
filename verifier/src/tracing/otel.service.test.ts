import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
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
// A request that waits for another's verification of the same token is `coalesced`; the discovery
// and introspection calls a decision makes are CLIENT spans under its SERVER span.

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

/** The spans exported since `from` ran, once `from`'s decisions are made. */
async function spansOf(from: () => Promise<unknown>): Promise<ReadableSpan[]> {
  await tracing.forceFlush();
  exporter.reset();
  await from();
  await tracing.forceFlush();
  return exporter.getFinishedSpans();
}
const serverSpanOf = (spans: ReadableSpan[], traceId: string) =>
  spans.find((s) => s.kind === SpanKind.SERVER && s.spanContext().traceId === traceId);

describe('two requests that bring one new token at once', () => {
  it('records the first as a cache miss and the one that waits for its verification as coalesced', async () => {
    // Not started: the key set is fetched by the first request, so its verification is still in
    // flight when the second, made in the same tick, looks the token up.
    const fresh = buildService(
      {},
      {
        file: {
          issuers: [{ issuer: ISSUER, audience: AUDIENCE, jwksUri: jwks.url }],
          policies: { default: { issuers: [ISSUER] } },
        },
        tracing,
      },
    );
    const newToken = await mintToken({ claims: { sub: 'coalesced-user' } });
    const traces = ['c1'.padStart(32, 'c'), 'c2'.padStart(32, 'c')] as const;
    const spans = await spansOf(async () => {
      // Both calls made before either settles: Promise.resolve only wraps what each returned.
      const decisions = await Promise.all(
        traces.map((traceId) =>
          Promise.resolve(
            fresh.service.authorize({
              authorization: `Bearer ${newToken}`,
              traceparent: header('01', traceId),
            }),
          ),
        ),
      );
      expect(decisions.map((d) => d.outcome)).toEqual(['allow', 'allow']);
    });
    await fresh.service.stop(0);
    const cacheOf = (traceId: string) =>
      serverSpanOf(spans, traceId)?.attributes['secret_gate.token_cache'];
    expect(cacheOf(traces[0])).toBe('miss');
    expect(cacheOf(traces[1])).toBe('coalesced');
  });
});

describe('an introspection issuer found by discovery', () => {
  let idp: Server;
  let issuer: string;
  const active = new Set<string>();
  beforeAll(async () => {
    idp = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const answer =
          req.url === '/.well-known/openid-configuration'
            ? { issuer, introspection_endpoint: `${issuer}/introspect` }
            : active.has(new URLSearchParams(body).get('token') ?? '')
              ? {
                  active: true,
                  sub: 'opaque-user',
                  client_id: 'spa-demo',
                  scope: 'secrets:read',
                  aud: AUDIENCE,
                  exp: Math.floor(Date.now() / 1000) + 600,
                }
              : { active: false };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
      });
    });
    await new Promise<void>((resolve) => idp.listen(0, '127.0.0.1', resolve));
    issuer = `http://127.0.0.1:${(idp.address() as { port: number }).port}`;
  });
  afterAll(() => new Promise((resolve) => idp.close(resolve)));

  it("records the discovery and the introspection as CLIENT children of the decision's span, never the token", async () => {
    const opaque = buildService(
      {},
      {
        file: {
          // No `endpoint`: the first decision reads it from the issuer's discovery document.
          issuers: [
            {
              type: 'introspection',
              issuer,
              clientId: 'secret-gate',
              clientSecret: 'introspection-client-secret',
              audience: AUDIENCE,
            },
          ],
          policies: { default: { issuers: [issuer] } },
        },
        tracing,
      },
    );
    const token = randomBytes(32).toString('base64url');
    active.add(token);
    const traceId = 'd1'.padStart(32, 'd');
    const spans = await spansOf(async () => {
      const decision = await opaque.service.authorize({
        authorization: `Bearer ${token}`,
        traceparent: header('01', traceId),
      });
      expect(decision.outcome).toBe('allow');
    });
    await opaque.service.stop(0);
    const server = serverSpanOf(spans, traceId)!;
    expect(server.attributes['secret_gate.issuer']).toBe(issuer);
    const calls = spans.filter((s) => s.kind === SpanKind.CLIENT);
    expect(calls.map((s) => [s.name, s.attributes['url.full']])).toEqual([
      ['GET', `${issuer}/.well-known/openid-configuration`],
      ['POST', `${issuer}/introspect`],
    ]);
    for (const call of calls) {
      expect(call.spanContext().traceId).toBe(traceId);
      expect(call.parentSpanContext?.spanId).toBe(server.spanContext().spanId);
      expect(call.attributes['http.response.status_code']).toBe(200);
    }
    const exported = JSON.stringify(spans.map((s) => [s.name, s.attributes, s.events]));
    expect(exported).not.toContain(token);
    expect(exported).not.toContain('introspection-client-secret');
  });
});

// One trace per secret fetch, end to end: real NGINX, the built verifier with OTEL_* set and the
// dev IdP, as `npm start` runs them, exporting OTLP/HTTP (http/json) to a receiver in this process.
// The client's trace id must be in NGINX's access log, the verifier's SERVER span (its parent
// NGINX's span id), the key set fetch's CLIENT span and the decision log line; and no token or
// secret value in any span or log line.
import { createServer, type Server } from 'node:http';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../stack/start-stack.js';
import { freePort } from '../../stack/ports.js';
import { allSecretValues } from '../support/secrets.js';
import { startSuiteStack, SUITE_OPTIONS } from '../support/local-target.js';

/** A span as OTLP/JSON writes it (ids in hex; opentelemetry-proto's JSON mapping). */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: { stringValue?: string; boolValue?: boolean } }[];
}
interface OtlpBody {
  resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[];
}

const SPAN_KIND_SERVER = 2;
const SPAN_KIND_CLIENT = 3;
const CLIENT_TRACE = '5cf92f3577b34da6a3ce929d0e0e4736';

let stack: Stack;
let receiver: Server;
const bodies: string[] = [];
const spans = () =>
  bodies.flatMap((body) =>
    (JSON.parse(body) as OtlpBody).resourceSpans.flatMap((r) =>
      r.scopeSpans.flatMap((s) => s.spans),
    ),
  );
const attribute = (span: OtlpSpan, key: string) =>
  span.attributes.find((a) => a.key === key)?.value.stringValue;

beforeAll(async () => {
  const port = await freePort();
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.url === '/v1/traces') bodies.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(port, '127.0.0.1', resolve));
  stack = await startSuiteStack({
    env: {
      ...SUITE_OPTIONS.env,
      nginx: { ...SUITE_OPTIONS.env?.nginx, SG_TRACE_CONTEXT: 'on' },
      verifier: {
        ...SUITE_OPTIONS.env?.verifier,
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '50',
      },
    },
  });
}, 180_000);
afterAll(async () => {
  await stack?.stop();
  receiver?.closeAllConnections();
  receiver?.close();
});

async function accessLog(): Promise<Record<string, string>[]> {
  const text = await readFile(path.join(stack.files.nginxPrefix, 'logs', 'access.log'), 'utf8');
  return text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, string>);
}
/** The access log line of the request made after `before` lines: NGINX writes it after answering. */
async function lineAfter(before: number): Promise<Record<string, string> | undefined> {
  for (let i = 0; i < 100; i++) {
    const lines = await accessLog();
    if (lines.length > before) return lines.at(-1);
    await sleep(20);
  }
  throw new Error('NGINX wrote no access log line');
}
async function decisionLines(): Promise<Record<string, unknown>[]> {
  const text = await readFile(stack.files.logs.verifier, 'utf8');
  return text
    .split('\n')
    .filter((line) => line.includes('"decision_log"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
/** Waits for the batch processor to send the SERVER span of `traceId`. */
async function serverSpan(traceId: string): Promise<OtlpSpan> {
  for (let i = 0; i < 100; i++) {
    const found = spans().find((s) => s.traceId === traceId && s.kind === SPAN_KIND_SERVER);
    if (found) return found;
    await sleep(50);
  }
  throw new Error(`no SERVER span of trace ${traceId}`);
}

describe.sequential('one trace per secret fetch', () => {
  const tokens: string[] = [];

  it("carries the client's trace id through NGINX's log, the verifier's span, its key set fetch and the decision log", async () => {
    // A key the verifier has not seen: the request itself fetches the key set.
    await stack.idp.rotateKey();
    const token = await stack.mintToken();
    tokens.push(token);
    const before = (await accessLog()).length;
    const response = await fetch(`${stack.urls.gate}/secret`, {
      headers: {
        authorization: `Bearer ${token}`,
        traceparent: `00-${CLIENT_TRACE}-00f067aa0ba902b7-01`,
      },
    });
    expect(response.status).toBe(200);
    await response.text();
    const line = await lineAfter(before);
    expect(line).toMatchObject({ trace_id: CLIENT_TRACE, status: 200, policy: 'secret' });
    const server = await serverSpan(CLIENT_TRACE);
    expect(server.parentSpanId).toBe(line?.span_id);
    expect(attribute(server, 'secret_gate.reason')).toBe('allowed');
    expect(attribute(server, 'secret_gate.policy')).toBe('secret');
    expect(attribute(server, 'secret_gate.token_cache')).toBe('miss');
    const fetches = spans().filter(
      (s) => s.traceId === CLIENT_TRACE && s.kind === SPAN_KIND_CLIENT,
    );
    expect(fetches.map((s) => attribute(s, 'url.full'))).toContainEqual(
      expect.stringMatching(/jwks/),
    );
    for (const child of fetches) expect(child.parentSpanId).toBe(server.spanId);
    expect((await decisionLines()).at(-1)).toMatchObject({
      outcome: 'allow',
      trace_id: CLIENT_TRACE,
      parent_span_id: line?.span_id,
    });
  });

  it('gives a request without traceparent a fresh trace id, the same in all three', async () => {
    const token = await stack.mintToken();
    tokens.push(token);
    const before = (await accessLog()).length;
    const response = await fetch(`${stack.urls.gate}/secret`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(response.status).toBe(200);
    await response.text();
    const line = await lineAfter(before);
    const traceId = line?.trace_id ?? '';
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(traceId).not.toBe(CLIENT_TRACE);
    expect((await serverSpan(traceId)).parentSpanId).toBe(line?.span_id);
    expect((await decisionLines()).at(-1)).toMatchObject({ trace_id: traceId });
  });

  it('traces a refusal with its reason, and a malformed traceparent starts a fresh trace', async () => {
    const before = (await accessLog()).length;
    const response = await fetch(`${stack.urls.gate}/secret`, {
      headers: {
        authorization: 'Bearer not.a.token',
        traceparent: `00-${CLIENT_TRACE.toUpperCase()}-00f067aa0ba902b7-01`,
      },
    });
    expect(response.status).toBe(401);
    const line = await lineAfter(before);
    expect(line).toMatchObject({ status: 401, reason: 'token_malformed' });
    expect(line?.trace_id).not.toBe(CLIENT_TRACE.toUpperCase());
    const server = await serverSpan(line?.trace_id ?? '');
    expect(attribute(server, 'secret_gate.reason')).toBe('token_malformed');
  });

  it('writes no token and no secret value into any span or log line', async () => {
    await sleep(200);
    const everything = [
      ...bodies,
      await readFile(stack.files.logs.verifier, 'utf8'),
      await readFile(path.join(stack.files.nginxPrefix, 'logs', 'access.log'), 'utf8'),
    ].join('\n');
    expect(bodies.length).toBeGreaterThan(0);
    for (const token of tokens)
      for (const part of token.split('.')) expect(everything).not.toContain(part);
    for (const value of allSecretValues()) expect(everything).not.toContain(value);
  });
});

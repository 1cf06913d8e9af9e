// One trace per secret fetch, end to end: real NGINX, the built verifier with OTEL_* set and the
// dev IdP, as `npm start` runs them, exporting OTLP/HTTP to a receiver in this process, once for
// each protocol the specification's OTEL_EXPORTER_OTLP_PROTOCOL offers here (http/json, and
// http/protobuf read with the official opentelemetry-proto definitions). The client's trace id must
// be in NGINX's access log, the verifier's SERVER span (its parent NGINX's span id), the key set
// fetch's CLIENT span and the decision log line; and no token or secret value in any span or log
// line.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../stack/start-stack.js';
import {
  attributeOf as attribute,
  SPAN_KIND_CLIENT,
  startOtlpReceiver,
  type OtlpReceiver,
} from '../support/otlp-receiver.js';
import { allSecretValues } from '../support/secrets.js';
import { startSuiteStack, SUITE_OPTIONS } from '../support/local-target.js';

const CLIENT_TRACE = '5cf92f3577b34da6a3ce929d0e0e4736';

describe.sequential.each([
  ['http/json', 'application/json'],
  ['http/protobuf', 'application/x-protobuf'],
])('one trace per secret fetch, exported as %s', (protocol, contentType) => {
  let stack: Stack;
  let receiver: OtlpReceiver;
  const spans = () => receiver.spans();
  const serverSpan = (traceId: string) => receiver.serverSpan(traceId);

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    stack = await startSuiteStack({
      env: {
        ...SUITE_OPTIONS.env,
        nginx: { ...SUITE_OPTIONS.env?.nginx, SG_TRACE_CONTEXT: 'on' },
        verifier: {
          ...SUITE_OPTIONS.env?.verifier,
          OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
          OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
          OTEL_BSP_SCHEDULE_DELAY: '50',
        },
      },
    });
  }, 180_000);
  afterAll(async () => {
    await stack?.stop();
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
      ...receiver.raw,
      await readFile(stack.files.logs.verifier, 'utf8'),
      await readFile(path.join(stack.files.nginxPrefix, 'logs', 'access.log'), 'utf8'),
    ].join('\n');
    expect(receiver.raw.length).toBeGreaterThan(0);
    expect([...receiver.contentTypes]).toEqual([contentType]);
    for (const token of tokens)
      for (const part of token.split('.')) expect(everything).not.toContain(part);
    for (const value of allSecretValues()) expect(everything).not.toContain(value);
  });
});

// One trace per secret fetch, end to end: real NGINX, the built verifier with OTEL_* set and the
// dev IdP, as `npm start` runs them, exporting OTLP/HTTP to a receiver in this process, once for
// each protocol the specification's OTEL_EXPORTER_OTLP_PROTOCOL offers here (http/json, and
// http/protobuf read with the official opentelemetry-proto definitions). The client's trace id must
// be in NGINX's access log, the verifier's SERVER span (its parent NGINX's span id), the key set
// fetch's CLIENT span and the decision log line; and no token or secret value in any span or log
// line. The SERVER span says what was decided and for whom (outcome, issuer, client, DPoP, step-up,
// the token cache's answer), and the resource names the service as OTEL_SERVICE_NAME says.
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
import { signProof, thumbprintOf } from '../../verifier/src/testing/dpop-proof.js';
import { allSecretValues } from '../support/secrets.js';
import { startSuiteStack, SUITE_OPTIONS } from '../support/local-target.js';

const CLIENT_TRACE = '5cf92f3577b34da6a3ce929d0e0e4736';
/** The verifier's own service.name when OTEL_SERVICE_NAME does not say (tracing/otel-env.ts). */
const DEFAULT_SERVICE_NAME = 'secret-gate-verifier';

describe.sequential.each([
  ['http/json', 'application/json', 'secret-gate-verifier-eu-1'],
  ['http/protobuf', 'application/x-protobuf', undefined],
])('one trace per secret fetch, exported as %s', (protocol, contentType, serviceName) => {
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
          ...(serviceName === undefined ? {} : { OTEL_SERVICE_NAME: serviceName }),
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
    expect(attribute(server, 'secret_gate.outcome')).toBe('allow');
    expect(attribute(server, 'secret_gate.issuer')).toBe(stack.urls.issuer);
    expect(attribute(server, 'secret_gate.client')).toBe('spa-demo');
    expect(attribute(server, 'secret_gate.dpop')).toBe('false');
    expect(attribute(server, 'secret_gate.step_up')).toBe('met');
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

  it('records a token the verifier has seen as a cache hit, a DPoP proof, and a step-up the policy still requires', async () => {
    const origin = stack.env.nginx.SG_EXTERNAL_ORIGIN ?? stack.urls.gate;
    const token = await stack.mintToken({ claims: { cnf: { jkt: await thumbprintOf('ec') } } });
    tokens.push(token);
    /** A fresh proof each time: NGINX's edge cache passes DPoP requests on, so each is decided. */
    async function bound(route: string, trace: string) {
      const response = await fetch(`${stack.urls.gate}${route}`, {
        headers: {
          authorization: `DPoP ${token}`,
          dpop: await signProof({ htu: `${origin}${route}`, accessToken: token }),
          traceparent: `00-${trace}-00f067aa0ba902b7-01`,
        },
      });
      await response.text();
      return { status: response.status, server: await serverSpan(trace) };
    }
    const traceOf = (n: number) => `${CLIENT_TRACE.slice(0, -2)}${String(n).padStart(2, '0')}`;

    const first = await bound('/secret', traceOf(1));
    expect(first.status).toBe(200);
    expect(attribute(first.server, 'secret_gate.token_cache')).toBe('miss');
    expect(attribute(first.server, 'secret_gate.dpop')).toBe('true');

    const again = await bound('/secret', traceOf(2));
    expect(again.status).toBe(200);
    expect(attribute(again.server, 'secret_gate.token_cache')).toBe('hit');
    expect(attribute(again.server, 'secret_gate.dpop')).toBe('true');
    expect(attribute(again.server, 'secret_gate.outcome')).toBe('allow');
    expect(attribute(again.server, 'secret_gate.step_up')).toBe('met');

    // `payments` is `secret` plus a recent multi-factor sign-in, which a client token never has.
    const stepUp = await bound('/secret/payments', traceOf(3));
    expect(stepUp.status).toBe(401);
    expect(attribute(stepUp.server, 'secret_gate.policy')).toBe('payments');
    expect(attribute(stepUp.server, 'secret_gate.token_cache')).toBe('hit');
    expect(attribute(stepUp.server, 'secret_gate.outcome')).toBe('deny');
    expect(attribute(stepUp.server, 'secret_gate.reason')).toBe('insufficient_user_authentication');
    expect(attribute(stepUp.server, 'secret_gate.step_up')).toBe('required');
    expect(attribute(stepUp.server, 'secret_gate.issuer')).toBe(stack.urls.issuer);
    expect(attribute(stepUp.server, 'secret_gate.client')).toBe('spa-demo');
  });

  it(`exports its spans under the service name OTEL_SERVICE_NAME gives (${serviceName ?? 'unset: the default'})`, () => {
    expect(receiver.spans().length).toBeGreaterThan(0);
    expect([...receiver.serviceNames]).toEqual([serviceName ?? DEFAULT_SERVICE_NAME]);
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

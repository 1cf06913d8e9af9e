// `npm start`'s tracing hand-over (stack/trace-env.ts): what reaches the verifier and NGINX.
import { describe, expect, it } from 'vitest';
import { OTEL_VARIABLES } from '../verifier/src/tracing/otel-env.js';
import { tracingEnv } from './trace-env.js';

describe("npm start's tracing variables", () => {
  it('passes every OpenTelemetry variable the verifier honours, as set, and nothing else', () => {
    const set = Object.fromEntries(OTEL_VARIABLES.map((name, i) => [name, `value ${i}`]));
    const { verifier } = tracingEnv({
      ...set,
      OTEL_LOGS_EXPORTER: 'otlp',
      PATH: '/usr/bin',
      VERIFIER_LOG_LEVEL: 'info',
    });
    expect(verifier).toEqual(set);
  });

  it.each([
    ['an endpoint', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }, 'on'],
    ['a traces endpoint', { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' }, 'on'],
    ['no endpoint', { OTEL_SERVICE_NAME: 'gate' }, undefined],
    [
      'an endpoint and SG_TRACE_CONTEXT=off',
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', SG_TRACE_CONTEXT: 'off' },
      'off',
    ],
    ['SG_TRACE_CONTEXT=on alone', { SG_TRACE_CONTEXT: 'on' }, 'on'],
  ])("sets NGINX's trace context with %s", (_, env, context) => {
    expect(tracingEnv(env).nginx.SG_TRACE_CONTEXT).toBe(context);
  });
});

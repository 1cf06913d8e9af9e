// What `npm start` hands on for tracing: the OpenTelemetry specification's variables reach the
// verifier as set, and an export endpoint turns NGINX's trace context on (off by default for its
// cost, docs/tracing.md) unless SG_TRACE_CONTEXT says otherwise.
import { OTEL_VARIABLES } from '../verifier/src/tracing/otel-env.js';

export function tracingEnv(env: NodeJS.ProcessEnv): {
  verifier: Record<string, string>;
  nginx: Record<string, string>;
} {
  const verifier = Object.fromEntries(
    OTEL_VARIABLES.flatMap((name) => (env[name] === undefined ? [] : [[name, env[name]]])),
  );
  const exporting = env.OTEL_EXPORTER_OTLP_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const context = env.SG_TRACE_CONTEXT ?? (exporting ? 'on' : undefined);
  return { verifier, nginx: context === undefined ? {} : { SG_TRACE_CONTEXT: context } };
}

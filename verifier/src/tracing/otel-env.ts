// Whether the verifier records traces, read from the OpenTelemetry specification's own variables
// (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/), so a
// deployment's usual OTEL_* settings work unchanged. Off unless an OTLP endpoint is named; the SDK
// itself (tracing/otel.ts, imported only then) reads the rest: sampler, batch limits, headers.

/** The specification's variables the verifier honours: what compose and manifests pass through. */
export const OTEL_VARIABLES = [
  'OTEL_SDK_DISABLED',
  'OTEL_SERVICE_NAME',
  'OTEL_RESOURCE_ATTRIBUTES',
  'OTEL_TRACES_EXPORTER',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_EXPORTER_OTLP_TIMEOUT',
  'OTEL_TRACES_SAMPLER',
  'OTEL_TRACES_SAMPLER_ARG',
  'OTEL_BSP_SCHEDULE_DELAY',
  'OTEL_BSP_MAX_QUEUE_SIZE',
  'OTEL_BSP_MAX_EXPORT_BATCH_SIZE',
  'OTEL_BSP_EXPORT_TIMEOUT',
] as const;

export type OtlpProtocol = 'http/protobuf' | 'http/json';

export interface TracingSettings {
  readonly protocol: OtlpProtocol;
  /** `service.name` when OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) does not say. */
  readonly serviceName: string;
}

type Env = Readonly<Record<string, string | undefined>>;

const PROTOCOLS: readonly string[] = ['http/protobuf', 'http/json'];

/**
 * undefined when tracing is off: OTEL_SDK_DISABLED=true, OTEL_TRACES_EXPORTER=none, or no
 * OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT. Throws a TypeError for a
 * protocol this build cannot speak (`grpc`), so the start stops with one line instead of
 * silently recording nothing. The signal-specific protocol wins over the general one (spec).
 */
export function readTracingSettings(env: Env): TracingSettings | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  const exporters = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (exporters === 'none') return undefined;
  if (exporters !== undefined && exporters !== '' && exporters !== 'otlp')
    throw new TypeError(
      `OTEL_TRACES_EXPORTER: only "otlp" or "none" are supported, got "${exporters}"`,
    );
  const endpoint =
    env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!endpoint) return undefined;
  const protocol =
    env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() ||
    env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim() ||
    'http/protobuf';
  if (!PROTOCOLS.includes(protocol))
    throw new TypeError(
      `OTEL_EXPORTER_OTLP_PROTOCOL: "${protocol}" is not supported; use http/protobuf or http/json`,
    );
  return { protocol: protocol as OtlpProtocol, serviceName: 'secret-gate-verifier' };
}

// The verifier's OpenTelemetry traces, imported (dynamically, by main.ts) only when otel-env.ts
// finds them switched on, so a verifier without OTEL_* settings loads none of this. The SDK reads
// the specification's variables itself: OTEL_TRACES_SAMPLER(_ARG), OTEL_BSP_*, the OTLP
// exporter's endpoint, headers and timeout; OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES.
import {
  context,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
} from '@opentelemetry/api';
import type { Context } from '@opentelemetry/api';
import {
  ExportResultCode,
  getNumberFromEnv,
  getStringFromEnv,
  type ExportResult,
} from '@opentelemetry/core';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { ReadableSpan, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Counter } from 'prom-client';
import type { Authorize } from '../decision/authorize.js';
import type { Decision } from '../decision/decision.js';
import type { Metrics } from '../metrics.js';
import type { CacheLookup } from '../token/token-verifier.js';
import { recordFetches } from './fetch-spans.js';
import { recordRedisCalls } from './redis-spans.js';
import { recordWork } from './work-spans.js';
import type { TracingSettings } from './otel-env.js';
import { readTraceparent, type TraceContext } from './trace-context.js';

/** What service.ts asks of tracing: a traced /verify, and a flush at shutdown. */
export interface Tracing {
  traceAuthorize(authorize: Authorize, metrics: Metrics): Authorize;
  /** The token verifier's lookup outcome (its `onLookup`), read into the request's span. */
  readonly noteTokenCache: (lookup: CacheLookup) => void;
  shutdown(): Promise<void>;
}

/** The SDK's default queue bound (OTEL_BSP_MAX_QUEUE_SIZE), as BatchSpanProcessor reads it. */
const DEFAULT_QUEUE = 2048;

export async function startTracing(settings: TracingSettings): Promise<Tracing> {
  const { OTLPTraceExporter } =
    settings.protocol === 'http/json'
      ? await import('@opentelemetry/exporter-trace-otlp-http')
      : await import('@opentelemetry/exporter-trace-otlp-proto');
  const detected = detectResources({ detectors: [envDetector] });
  const resource = resourceFromAttributes({ 'service.name': settings.serviceName }).merge(detected);
  let onDropped: (why: 'queue_full' | 'export_failed', spans: number) => void = () => undefined;
  const queue = createBoundedQueue(
    new OTLPTraceExporter(),
    getNumberFromEnv('OTEL_BSP_MAX_QUEUE_SIZE') ?? DEFAULT_QUEUE,
    (why, spans) => onDropped(why, spans),
  );
  const provider = new NodeTracerProvider({ resource, spanProcessors: [queue] });
  // The AsyncLocalStorage context manager: a child span (a key set fetch) finds its request's span.
  provider.register();
  const tracer = provider.getTracer('secret-gate-verifier');
  // A parent-based sampler (the default) records nothing under a parent NGINX marked unsampled;
  // `always_on` or `traceidratio` decide for themselves, so only these skip the span below.
  const followsParent = (getStringFromEnv('OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on')
    .toLowerCase()
    .startsWith('parentbased_');
  const stops = [recordFetches(tracer), recordRedisCalls(tracer), recordWork(tracer)];
  // The lookup of the request being decided: authorize calls the token verifier before it returns
  // or first awaits, so between the call and its return no other request can set this.
  let lookup: CacheLookup | undefined;

  return {
    traceAuthorize(authorize, metrics) {
      const dropped = new Counter({
        name: 'verifier_trace_spans_dropped_total',
        help: 'Spans not exported: the export queue was full (a slow or down OTLP endpoint), or an export failed.',
        labelNames: ['why'],
        registers: [metrics.registry],
      });
      onDropped = (why, spans) => dropped.inc({ why }, spans);
      /**
       * One SERVER span per decision, its parent NGINX's span (the traceparent it sent; none or a
       * malformed one: a root span). Never a token, proof or claim value in an attribute.
       */
      return function tracedAuthorize(request) {
        const incoming = readTraceparent(request.traceparent);
        // Not sampled at the edge: the span would record nothing, and making it (ids, contexts,
        // the sampler, an async context) is most of what tracing costs a request, so a request
        // NGINX left out costs what it does with tracing off (docs/performance.md).
        if (followsParent && incoming !== undefined && !incoming.sampled) return authorize(request);
        const parent = parentContext(incoming);
        const span = tracer.startSpan(
          'verify',
          {
            kind: SpanKind.SERVER,
            attributes: {
              'secret_gate.policy': request.policy ?? 'default',
              'secret_gate.dpop': request.dpop !== undefined,
              'http.request.method': request.originalMethod ?? 'GET',
            },
          },
          parent,
        );
        lookup = undefined;
        const decided = context.with(trace.setSpan(parent, span), () => authorize(request));
        // Absent when no token was looked up (no token, unknown policy).
        if (lookup !== undefined) span.setAttribute('secret_gate.token_cache', lookup);
        // A cached token is decided at once (no promise); the span ends the same way for both.
        return decided instanceof Promise ? decided.then(finish) : finish(decided);

        function finish(decision: Decision): Decision {
          span.setAttributes({
            'secret_gate.outcome': decision.outcome,
            'secret_gate.reason': decision.reason,
            'secret_gate.step_up':
              decision.reason === 'insufficient_user_authentication' ? 'required' : 'met',
          });
          if (decision.identity !== undefined)
            span.setAttributes({
              'secret_gate.issuer': decision.identity.issuer,
              'secret_gate.client': decision.identity.client,
            });
          if (decision.outcome === 'deny') span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
          return decision;
        }
      };
    },
    noteTokenCache(outcome) {
      lookup = outcome;
    },
    async shutdown() {
      for (const stop of stops) stop();
      await provider.shutdown();
    },
  };
}

/** NGINX's span as the remote parent; the root context when the header is absent or invalid. */
function parentContext(incoming: TraceContext | undefined): Context {
  if (incoming === undefined) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: incoming.traceId,
    spanId: incoming.parentSpanId,
    traceFlags: incoming.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
    isRemote: true,
  });
}

/**
 * BatchSpanProcessor in front of the exporter, with its queue bound made countable: a sampled
 * span that would find `maxQueue` spans still waiting (an OTLP endpoint down or slow) is dropped
 * here and counted, as are the spans of a failed export. Nothing here is awaited by a decision.
 */
function createBoundedQueue(
  exporter: SpanExporter,
  maxQueue: number,
  dropped: (why: 'queue_full' | 'export_failed', spans: number) => void,
): SpanProcessor {
  let waiting = 0;
  const counted: SpanExporter = {
    export(spans, done) {
      exporter.export(spans, (result: ExportResult) => {
        waiting -= spans.length;
        if (result.code !== ExportResultCode.SUCCESS) dropped('export_failed', spans.length);
        done(result);
      });
    },
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
  const batch = new BatchSpanProcessor(counted);
  return {
    onStart: (span, parent) => batch.onStart(span, parent),
    onEnd(span: ReadableSpan) {
      if ((span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
      if (waiting >= maxQueue) return dropped('queue_full', 1);
      waiting++;
      batch.onEnd(span);
    },
    forceFlush: () => batch.forceFlush(),
    shutdown: () => batch.shutdown(),
  };
}

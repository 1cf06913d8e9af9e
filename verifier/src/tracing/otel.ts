// The verifier's OpenTelemetry traces, imported (dynamically, by main.ts) only when otel-env.ts
// finds them switched on, so a verifier without OTEL_* settings loads none of this. The SDK reads
// the specification's variables itself: OTEL_TRACES_SAMPLER(_ARG) (edge-sampling.ts builds the
// sampler for parentbased_traceidratio, as the SDK would, to draw a root's ratio early), OTEL_BSP_*,
// the OTLP exporter's endpoint, headers and timeout; OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES.
import {
  context,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
} from '@opentelemetry/api';
import type { Attributes, Context, Span, SpanContext } from '@opentelemetry/api';
import { ExportResultCode, getNumberFromEnv, type ExportResult } from '@opentelemetry/core';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { ReadableSpan, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Counter } from 'prom-client';
import type { Authorize } from '../decision/authorize.js';
import type {
  Answer,
  Decision,
  ReceivedRequest,
  Receiver,
  VerifyRequest,
} from '../decision/decision.js';
import type { Metrics } from '../metrics.js';
import type { CacheLookup } from '../token/token-verifier.js';
import { recordFetches } from './fetch-spans.js';
import { recordRedisCalls } from './redis-spans.js';
import { recordWork } from './work-spans.js';
import type { TracingSettings } from './otel-env.js';
import { inDecisionScope } from './log-trace.js';
import { readEdgeSampling, type EdgeSampling } from './edge-sampling.js';
import { readTraceparent, type TraceContext } from './trace-context.js';

/** What service.ts asks of tracing: a traced /verify, and a flush at shutdown. */
export interface Tracing {
  traceAuthorize(authorize: Authorize, metrics: Metrics): Authorize;
  /**
   * Whether a decision with this `traceparent` would be recorded: false only when the sampler
   * follows NGINX's flag and NGINX marked the request unsampled (edge-sampling.ts). What only a
   * span reads of a request (its DPoP header) is read for the ones it records (service.ts,
   * `readsWhole`). Asked at most once per request, before its decision: a ratio drawn here is the
   * span's.
   */
  recordsDecision(traceparent: string | undefined): boolean;
  /**
   * The revocation receivers (by path), each request a SERVER span, so the Redis writes a pushed
   * logout or SET makes are recorded as its children, as a decision's are.
   */
  traceReceivers(receivers: ReadonlyMap<string, Receiver>): ReadonlyMap<string, Receiver>;
  /** The token verifier's lookup outcome (its `onLookup`), read into the request's span. */
  readonly noteTokenCache: (lookup: CacheLookup) => void;
  /** Exports every span ended so far (bench:tracing counts the export in its figure). */
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

/** The SDK's default queue bound (OTEL_BSP_MAX_QUEUE_SIZE), as BatchSpanProcessor reads it. */
const DEFAULT_QUEUE = 2048;

/**
 * `exporter` replaces the OTLP exporter the settings name: bench:tracing passes one that drops
 * every batch, to measure what the SDK costs a span before any export.
 */
export async function startTracing(
  settings: TracingSettings,
  exporter?: SpanExporter,
): Promise<Tracing> {
  const { OTLPTraceExporter } =
    settings.protocol === 'http/json'
      ? await import('@opentelemetry/exporter-trace-otlp-http')
      : await import('@opentelemetry/exporter-trace-otlp-proto');
  const detected = detectResources({ detectors: [envDetector] });
  const resource = resourceFromAttributes({ 'service.name': settings.serviceName }).merge(detected);
  let onDropped: (why: 'queue_full' | 'export_failed', spans: number) => void = () => undefined;
  const queue = createBoundedQueue(
    exporter ?? new OTLPTraceExporter(),
    getNumberFromEnv('OTEL_BSP_MAX_QUEUE_SIZE') ?? DEFAULT_QUEUE,
    (why, spans) => onDropped(why, spans),
  );
  // Whether a request's span would record anything, told from its header before it is made.
  const edge = readEdgeSampling();
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [queue],
    ...(edge.sampler === undefined ? {} : { sampler: edge.sampler }),
  });
  // The AsyncLocalStorage context manager: a child span (a key set fetch) finds its request's span.
  provider.register();
  const tracer = provider.getTracer('secret-gate-verifier');
  const stops = [recordFetches(tracer), recordRedisCalls(tracer), recordWork(tracer)];
  // The lookup of the request being decided: authorize calls the token verifier before it returns
  // or first awaits, so between the call and its return no other request can set this.
  let lookup: CacheLookup | undefined;

  /** One SERVER span per pushed token, NGINX's span its parent; the path only, never the body. */
  function traceReceiver(path: string, receiver: Receiver): Receiver {
    const name = `POST ${path}`;
    const attributes: Attributes = { 'http.request.method': 'POST', 'url.path': path };
    return function tracedReceiver(request: ReceivedRequest) {
      if (edge.unrecorded(request.traceparent, true)) return receiver(request);
      const parent = parentContext(readTraceparent(request.traceparent), edge);
      const span = tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
      const answer = context.with(trace.setSpan(parent, span), receiver, undefined, request);
      return answer instanceof Promise
        ? answer.then((done) => endReceiverSpan(span, done))
        : endReceiverSpan(span, answer);
    };
  }

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
        // Not sampled at the edge: the span would record nothing, and making it (ids, contexts,
        // the sampler, an async context) is most of what tracing costs a request, so a request
        // NGINX left out pays a read of its flag and, where its root could be recorded, one
        // allocation-free check of the header, and nothing else (docs/performance.md, "Tracing").
        if (edge.unrecorded(request.traceparent, true)) return authorize(request);
        const parent = parentContext(readTraceparent(request.traceparent), edge);
        // No attributes at the start: the SDK copies start attributes twice before the span has
        // them (sanitizeAttributes, for the sampler), where one given to the span is set once; the
        // samplers OTEL_TRACES_SAMPLER names do not read them. The policy's and DPoP's are set with
        // the outcome's (endVerifySpan).
        const span = tracer.startSpan('verify', VERIFY_SPAN, parent);
        lookup = undefined;
        // Inside the decision's async resource, where the log trace's store is kept too
        // (log-trace.ts). The span replaces the parent's, the context's only entry: set on the
        // root context, nothing is copied.
        const decided = inDecisionScope(
          decideInContext,
          trace.setSpan(ROOT_CONTEXT, span),
          authorize,
          request,
        );
        span.setAttributes(startAttributes(request.policy, request.dpop));
        // Absent when no token was looked up (no token, unknown policy).
        if (lookup !== undefined) span.setAttribute('secret_gate.token_cache', lookup);
        // A cached token is decided at once (no promise): its span ends here, with no closure.
        return decided instanceof Promise
          ? decided.then((decision) => endVerifySpan(span, decision))
          : endVerifySpan(span, decided);
      };
    },
    recordsDecision: (traceparent) => !edge.unrecorded(traceparent, false),
    traceReceivers(receivers) {
      return new Map(
        [...receivers].map(([path, receiver]) => [path, traceReceiver(path, receiver)]),
      );
    },
    noteTokenCache(outcome) {
      lookup = outcome;
    },
    forceFlush: () => provider.forceFlush(),
    async shutdown() {
      for (const stop of stops) stop();
      await provider.shutdown();
    },
  };
}

function decideInContext(active: Context, authorize: Authorize, request: VerifyRequest) {
  return context.with(active, authorize, undefined, request);
}

/** The verify span's options: a SERVER span, its attributes set on it (see tracedAuthorize). */
const VERIFY_SPAN = Object.freeze({ kind: SpanKind.SERVER });

/**
 * NGINX's span as the remote parent; the root context when the header is absent or invalid. Its
 * ids were checked by readTraceparent: the sampler is told so (edge-sampling.ts, `checked`).
 */
function parentContext(incoming: TraceContext | undefined, edge: EdgeSampling): Context {
  if (incoming === undefined) return ROOT_CONTEXT;
  const parent: SpanContext = {
    traceId: incoming.traceId,
    spanId: incoming.parentSpanId,
    traceFlags: incoming.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
    isRemote: true,
  };
  edge.checked(parent);
  return trace.setSpanContext(ROOT_CONTEXT, parent);
}

/**
 * The verify span's policy and DPoP attributes, one object per policy and DPoP mode, made once: the
 * SDK copies them into the span, so a request allocates none of its own.
 */
const startSets = new Map<string, readonly [Attributes, Attributes]>();
function startAttributes(policy: string | undefined, dpop: string | undefined): Attributes {
  const name = policy ?? 'default';
  let sets = startSets.get(name);
  if (sets === undefined) {
    const made = (bound: boolean) => ({ 'secret_gate.policy': name, 'secret_gate.dpop': bound });
    sets = [made(false), made(true)];
    // Policy names come from the configuration; the bound only guards against a caller's names.
    if (startSets.size < 1024) startSets.set(name, sets);
  }
  return sets[dpop === undefined ? 0 : 1];
}

/** The outcome's attributes, one object per reason (the reasons are a closed set). */
const outcomeSets = new Map<string, Attributes>();
function outcomeAttributes(decision: Decision): Attributes {
  let set = outcomeSets.get(decision.reason);
  if (set === undefined) {
    set = {
      'secret_gate.outcome': decision.outcome,
      'secret_gate.reason': decision.reason,
      'secret_gate.step_up':
        decision.reason === 'insufficient_user_authentication' ? 'required' : 'met',
    };
    outcomeSets.set(decision.reason, set);
  }
  return set;
}

function endVerifySpan(span: Span, decision: Decision): Decision {
  span.setAttributes(outcomeAttributes(decision));
  const { identity } = decision;
  if (identity !== undefined) {
    span.setAttribute('secret_gate.issuer', identity.issuer);
    span.setAttribute('secret_gate.client', identity.client);
  }
  if (decision.outcome === 'deny') span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
  return decision;
}

function endReceiverSpan(span: Span, answer: Answer): Answer {
  span.setAttribute('http.response.status_code', answer.status);
  if (answer.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
  return answer;
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

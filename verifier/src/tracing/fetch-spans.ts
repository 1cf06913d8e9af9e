// CLIENT spans for the verifier's own HTTP calls (JWKS, discovery, introspection), from the events
// Node's fetch (undici) publishes on diagnostics_channel: each call made inside a /verify span
// becomes its child. The URL is recorded without its query string (which might carry a secret).
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import {
  context,
  SpanKind,
  SpanStatusCode,
  trace,
  type Span,
  type Tracer,
} from '@opentelemetry/api';

interface UndiciRequest {
  readonly origin: string;
  readonly method: string;
  readonly path: string;
}

/** Starts recording; returns the function that stops it. */
export function recordFetches(tracer: Tracer): () => void {
  const spans = new WeakMap<UndiciRequest, Span>();
  const created = (message: unknown) => {
    const { request } = message as { request: UndiciRequest };
    // Only inside a request's trace: a background key set refresh is no one's child.
    if (trace.getSpan(context.active()) === undefined) return;
    const path = request.path.split('?')[0] ?? '';
    spans.set(
      request,
      tracer.startSpan(request.method, {
        kind: SpanKind.CLIENT,
        attributes: {
          'http.request.method': request.method,
          'url.full': `${request.origin}${path}`,
          'server.address': URL.parse(request.origin)?.hostname ?? '',
        },
      }),
    );
  };
  const answered = (message: unknown) => {
    const { request, response } = message as {
      request: UndiciRequest;
      response: { statusCode: number };
    };
    spans.get(request)?.setAttribute('http.response.status_code', response.statusCode);
  };
  const finished = (message: unknown) => {
    const { request } = message as { request: UndiciRequest };
    spans.get(request)?.end();
    spans.delete(request);
  };
  const failed = (message: unknown) => {
    const { request, error } = message as { request: UndiciRequest; error: Error };
    const span = spans.get(request);
    span?.setStatus({ code: SpanStatusCode.ERROR, message: error.name });
    span?.end();
    spans.delete(request);
  };
  const channels: [string, (message: unknown) => void][] = [
    ['undici:request:create', created],
    ['undici:request:headers', answered],
    ['undici:request:trailers', finished],
    ['undici:request:error', failed],
  ];
  for (const [name, listener] of channels) subscribe(name, listener);
  return () => {
    for (const [name, listener] of channels) unsubscribe(name, listener);
  };
}

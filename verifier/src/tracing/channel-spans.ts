// Child spans from a diagnostics_channel tracing channel (ioredis's commands, the verifier's own
// traced steps): each context the channel starts inside a request's trace becomes a span, its
// status on failure the error's class only (a message may quote what must not be exported), ended
// when the channel's promise settles.
import type { TracingChannel } from 'node:diagnostics_channel';
import { context, SpanStatusCode, trace, type Span } from '@opentelemetry/api';

/** Subscribes; `open` starts the span of one context. Returns the function that unsubscribes. */
export function recordChannel<C extends { readonly error?: unknown }>(
  channel: TracingChannel<unknown, C>,
  open: (started: C) => Span,
): () => void {
  const spans = new WeakMap<C, Span>();
  const handlers = {
    start(started: C) {
      // Only inside a request's trace: a background reload or heartbeat is no one's child.
      if (trace.getSpan(context.active()) !== undefined) spans.set(started, open(started));
    },
    end: () => undefined,
    asyncStart: () => undefined,
    error(failed: C) {
      spans.get(failed)?.setStatus({
        code: SpanStatusCode.ERROR,
        message: failed.error instanceof Error ? failed.error.name : 'Error',
      });
    },
    asyncEnd(settled: C) {
      spans.get(settled)?.end();
      spans.delete(settled);
    },
  };
  channel.subscribe(handlers);
  return () => channel.unsubscribe(handlers);
}

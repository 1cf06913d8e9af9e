// INTERNAL spans for the steps announced on ./work-channel.ts (CloudFront signing): each becomes a
// child of the request's span, with the attributes the step chose as safe to export.
import {
  context,
  SpanKind,
  SpanStatusCode,
  trace,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { workChannel, type TracedWork } from './work-channel.js';

/** Starts recording; returns the function that stops it. */
export function recordWork(tracer: Tracer): () => void {
  const spans = new WeakMap<TracedWork, Span>();
  const handlers = {
    start(work: TracedWork) {
      // Only inside a request's trace.
      if (trace.getSpan(context.active()) === undefined) return;
      spans.set(
        work,
        tracer.startSpan(work.name, { kind: SpanKind.INTERNAL, attributes: work.attributes }),
      );
    },
    end: () => undefined,
    asyncStart: () => undefined,
    error(work: TracedWork) {
      // The error's class only: its message is not vetted for export.
      spans.get(work)?.setStatus({
        code: SpanStatusCode.ERROR,
        message: work.error instanceof Error ? work.error.name : 'Error',
      });
    },
    asyncEnd(work: TracedWork) {
      spans.get(work)?.end();
      spans.delete(work);
    },
  };
  workChannel.subscribe(handlers);
  return () => workChannel.unsubscribe(handlers);
}

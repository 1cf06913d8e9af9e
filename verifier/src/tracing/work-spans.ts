// INTERNAL spans for the steps announced on ./work-channel.ts (CloudFront signing, minting): each
// becomes a child of the request's span, with the attributes the step chose as safe to export.
import { context, SpanKind, trace, type Tracer } from '@opentelemetry/api';
import { recordChannel } from './channel-spans.js';
import { workChannel } from './work-channel.js';

/** Starts recording; returns the function that stops it. */
export function recordWork(tracer: Tracer): () => void {
  return recordChannel(workChannel, (work) => {
    const span = tracer.startSpan(work.name, {
      kind: SpanKind.INTERNAL,
      attributes: work.attributes,
    });
    work.within = (step) => context.with(trace.setSpan(context.active(), span), step);
    return span;
  });
}

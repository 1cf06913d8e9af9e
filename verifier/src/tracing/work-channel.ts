// The verifier's own steps worth a span (CloudFront signing, minting), announced on a
// diagnostics_channel tracing channel: the step runs as before when no one listens, and
// tracing/otel.ts, loaded only with OTEL_* set, listens and turns each into an INTERNAL span of the
// request's trace.
import { tracingChannel } from 'node:diagnostics_channel';

/** What a traced step says of itself: a span name and attributes that are safe to export. */
export interface TracedWork {
  readonly name: string;
  readonly attributes: Readonly<Record<string, string | number | boolean>>;
  /** Set by the channel when the step fails. */
  error?: unknown;
  /**
   * Set by the listener at the start: runs the step inside its span, so an HTTP call the step
   * makes (a token exchange) is recorded as the step's child rather than its sibling.
   */
  within?: <T>(step: () => T) => T;
}

export const workChannel = tracingChannel<unknown, TracedWork>('secret-gate:work');

/** Runs `step`; as a traced step when tracing listens (one boolean read when it does not). */
export function traceWork<T>(work: TracedWork, step: () => Promise<T>): Promise<T> {
  return workChannel.hasSubscribers
    ? workChannel.tracePromise(() => (work.within === undefined ? step() : work.within(step)), work)
    : step();
}

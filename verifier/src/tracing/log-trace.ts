// The trace id on every log line written while a request with a `traceparent` is decided (a
// refusal's warning, a key set fetch it started, a grant's complaint), not only on the decision log
// line. What a request pays is one async context entered with the raw header: the header is parsed
// only when a line is actually written (most decisions write none at the default `warn`), and a
// request without the header is passed straight on.
//
// Why an async context at all, even for a cached decision that completes synchronously: this
// wrapper cannot tell before the call whether the decision will wait (a key fetch, Redis, a grant),
// and a promise only carries the context it was created in. Entering it costs tens of nanoseconds
// on Node 22; promises created inside pay its hook, and the cached path creates none
// (docs/performance.md, "Tracing").
import { AsyncLocalStorage } from 'node:async_hooks';
import { readTraceparent } from './trace-context.js';

/** The raw `traceparent` of the request being decided, unparsed. */
const requestTrace = new AsyncLocalStorage<string>();

/**
 * `authorize`, run inside its request's `traceparent` when NGINX sent one. Typed by the one field
 * it reads, so log.ts (its mixin's user) imports nothing of the decision path.
 */
export function withLogTrace<Request extends { readonly traceparent?: string | undefined }, Result>(
  authorize: (request: Request) => Result,
): (request: Request) => Result {
  return function authorizeInTrace(request) {
    const traceparent = request.traceparent;
    if (traceparent === undefined) return authorize(request);
    return requestTrace.run(traceparent, authorize, request);
  };
}

/**
 * pino's mixin: `trace_id` on a line written inside a request with a valid `traceparent`, nothing
 * otherwise (absent, malformed, outside any request). A new object each time: pino assigns the
 * line's own fields onto what the mixin returns.
 */
export function logTraceId(): { trace_id?: string } {
  const traceId = readTraceparent(requestTrace.getStore())?.traceId;
  return traceId === undefined ? {} : { trace_id: traceId };
}

// The trace id on every log line written while a request with a valid `traceparent` is decided
// (a refusal's warning, a key set fetch it started, a grant's complaint), not only on the decision
// log line. A request without the header is passed straight on: no parse, no async context.
import { AsyncLocalStorage } from 'node:async_hooks';
import { readTraceparent } from './trace-context.js';

const requestTrace = new AsyncLocalStorage<string>();

/**
 * `authorize`, run inside its request's trace id when NGINX sent a valid `traceparent`. Typed by
 * the one field it reads, so log.ts (its mixin's user) imports nothing of the decision path.
 */
export function withLogTrace<Request extends { readonly traceparent?: string | undefined }, Result>(
  authorize: (request: Request) => Result,
): (request: Request) => Result {
  return function authorizeInTrace(request) {
    if (request.traceparent === undefined) return authorize(request);
    const incoming = readTraceparent(request.traceparent);
    if (incoming === undefined) return authorize(request);
    return requestTrace.run(incoming.traceId, authorize, request);
  };
}

/**
 * pino's mixin: `trace_id` on a line written inside a traced request, nothing otherwise. A new
 * object each time: pino assigns the line's own fields onto what the mixin returns.
 */
export function logTraceId(): { trace_id?: string } {
  const traceId = requestTrace.getStore();
  return traceId === undefined ? {} : { trace_id: traceId };
}

// The trace id on every log line written while a request with a `traceparent` is decided (a
// refusal's warning, a key set fetch it started, a grant's complaint), not only on the decision log
// line. What a request pays is one async context entered with the raw header: the header is parsed
// only when a line is actually written (most decisions write none at the default `warn`), and a
// request without the header is passed straight on.
//
// Why an async context at all, even for a cached decision that completes synchronously: this
// wrapper cannot tell before the call whether the decision will wait (a key fetch, Redis, a grant),
// and a promise only carries the context it was created in. Promises created inside pay its hook,
// and the cached path creates none; entering it is made cheap below (decisionScope)
// (docs/performance.md, "Tracing").
import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks';
import { readTraceparent } from './trace-context.js';

/** The raw `traceparent` of the request being decided, unparsed. */
const requestTrace = new AsyncLocalStorage<string>();

/**
 * Node 22's AsyncLocalStorage keeps its store as a property of the current async resource, and a
 * uWS handler runs with the global object as that resource: writing and restoring a property of
 * the global object takes V8's slowest property path (~1,200 of the ~3,100 instructions the header
 * cost a cached decision, counted with callgrind; docs/performance.md, "Tracing"). Each decision is
 * entered in this one resource of ours instead, a plain object, so the store is an ordinary
 * property. A store entered outside it is not seen inside: a wrapper that enters another
 * AsyncLocalStorage around a decision (OpenTelemetry's context, tracing/otel.ts) does so inside
 * `inDecisionScope` too, where the resource, and so every store on it, is the same object.
 */
const decisionScope = new AsyncResource('secret-gate.decision', { requireManualDestroy: true });

/** `run(...args)` with the decision's async resource current (see decisionScope). */
export function inDecisionScope<Args extends unknown[], Result>(
  run: (...args: Args) => Result,
  ...args: Args
): Result {
  return decisionScope.runInAsyncScope(run, undefined, ...args);
}

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
    return decisionScope.runInAsyncScope(
      runInTrace<Request, Result>,
      undefined,
      traceparent,
      authorize,
      request,
    );
  };
}

/** Named, not a closure: nothing is allocated for a request but the call's own arguments. */
function runInTrace<Request, Result>(
  traceparent: string,
  authorize: (request: Request) => Result,
  request: Request,
): Result {
  return requestTrace.run(traceparent, authorize, request);
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

// The trace id on every log line written while a request with a `traceparent` is decided (a
// refusal's warning, a key set fetch it started, a grant's complaint), not only on the decision log
// line. The header is parsed only when a line is actually written (most decisions write none at the
// default `warn`); a request without it is passed straight on.
//
// Most decisions complete synchronously (a cached token): JavaScript cannot interleave another
// request inside that call, so the header is held in a plain module slot around it, which costs an
// assignment. Only where a decision first goes asynchronous (authorize.ts's `later`, a key fetch,
// an introspection) is an async context entered (`carryLogTrace`), so the promises made from there
// on carry the header to every line written after a wait (docs/performance.md, "Tracing").
import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks';
import { readTraceparent } from './trace-context.js';

/**
 * The raw `traceparent` of the request being decided synchronously right now, unparsed; undefined
 * between calls. Read before the async store: while a decision runs synchronously, no other
 * request's continuation can run.
 */
let current: string | undefined;

/** The raw `traceparent` of a decision that went asynchronous, for the lines after its waits. */
const requestTrace = new AsyncLocalStorage<string>();

/**
 * Node 22's AsyncLocalStorage keeps its store as a property of the current async resource, and a
 * uWS handler runs with the global object as that resource: writing and restoring a property of
 * the global object takes V8's slowest property path (~1,200 of the ~3,100 instructions the header
 * cost a cached decision when every decision entered the store, counted with callgrind;
 * docs/performance.md, "Tracing"). A store is entered in this one resource of ours instead, a plain
 * object, so the store is an ordinary property. A store entered outside it is not seen inside: a
 * wrapper that enters another AsyncLocalStorage around a decision (OpenTelemetry's context,
 * tracing/otel.ts) does so inside `inDecisionScope` too, where the resource, and so every store on
 * it, is the same object.
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
 * `authorize`, with its request's `traceparent` (when NGINX sent one) readable by the log lines
 * written during the call. Typed by the one field it reads, so log.ts (its mixin's user) imports
 * nothing of the decision path. What the decision does after a wait carries the header only from
 * where the decision called `carryLogTrace`.
 */
export function withLogTrace<Request extends { readonly traceparent?: string | undefined }, Result>(
  authorize: (request: Request) => Result,
): (request: Request) => Result {
  return function authorizeInTrace(request) {
    const traceparent = request.traceparent;
    if (traceparent === undefined) return authorize(request);
    // Restored rather than cleared: a call made inside another leaves the outer header in place.
    const outer = current;
    current = traceparent;
    try {
      return authorize(request);
    } finally {
      current = outer;
    }
  };
}

/**
 * `start(...args)`, for the step where a decision first goes asynchronous (a promise is about to be
 * made: a key fetch, an introspection, the rest of a decision that waits): when the request being
 * decided has a `traceparent`, `start` runs inside an async context holding it, so every promise
 * made there, and every line written after their waits, carries it. Outside a traced decision, or
 * already inside the context (a wait after a wait), `start` is simply called.
 */
export function carryLogTrace<Args extends unknown[], Result>(
  start: (...args: Args) => Result,
  ...args: Args
): Result {
  const traceparent = current;
  if (traceparent === undefined) return start(...args);
  return decisionScope.runInAsyncScope(
    runInTrace<Args, Result>,
    undefined,
    traceparent,
    start,
    args,
  );
}

/** Named, not a closure: nothing is allocated for the wait but the call's own arguments. */
function runInTrace<Args extends unknown[], Result>(
  traceparent: string,
  start: (...args: Args) => Result,
  args: Args,
): Result {
  return requestTrace.run(traceparent, start, ...args);
}

/**
 * pino's mixin: `trace_id` on a line written inside a request with a valid `traceparent`, nothing
 * otherwise (absent, malformed, outside any request). A new object each time: pino assigns the
 * line's own fields onto what the mixin returns.
 */
export function logTraceId(): { trace_id?: string } {
  const traceId = readTraceparent(current ?? requestTrace.getStore())?.traceId;
  return traceId === undefined ? {} : { trace_id: traceId };
}

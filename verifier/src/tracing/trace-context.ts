// W3C Trace Context (https://www.w3.org/TR/trace-context/ §3.2): the `traceparent` NGINX sends on
// /verify, read into ids the decision log and the verifier's span use. A value this does not accept
// is ignored, never an error: the decision is the same with or without it.

/** The trace a request belongs to and the span of the hop that called the verifier (NGINX's). */
export interface TraceContext {
  /** 32 lower-case hex digits, not all zeros. */
  readonly traceId: string;
  /** The caller's span id: 16 lower-case hex digits, not all zeros. */
  readonly parentSpanId: string;
  /** The caller's sampled flag (bit 0 of trace-flags). */
  readonly sampled: boolean;
}

// Version 00 is exactly 55 characters; a later version (not ff) may append fields after a `-`.
const TRACEPARENT =
  /^(?:00-(?=.{52}$)|(?!00|ff)[0-9a-f]{2}-)(?!0{32})([0-9a-f]{32})-(?!0{16})([0-9a-f]{16})-([0-9a-f]{2})(?:$|-)/;
/** Longer than any header NGINX builds; a longer value is not even matched. */
const MAX_LENGTH = 512;

/** The context of a valid `traceparent`, else undefined (absent, malformed, version ff, zeros). */
export function readTraceparent(value: string | undefined): TraceContext | undefined {
  if (value === undefined || value.length > MAX_LENGTH) return undefined;
  const match = TRACEPARENT.exec(value);
  if (match === null) return undefined;
  const [, traceId = '', parentSpanId = '', flags = '00'] = match;
  return { traceId, parentSpanId, sampled: (parseInt(flags, 16) & 1) === 1 };
}

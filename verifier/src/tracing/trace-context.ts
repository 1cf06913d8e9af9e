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

const DASH = 0x2d;
const ZERO = 0x30;
/** Longer than any header NGINX builds; a longer value is not even read. */
const MAX_LENGTH = 512;
// Offsets of version 00's fields (`vv-<32 hex>-<16 hex>-ff`); a later version has the same ones.
const TRACE_ID = 3;
const PARENT_ID = 36;
const FLAGS = 53;
const LENGTH = 55;
/**
 * Version 00's characters in one pass of V8's compiled expression, the rest by offset (isValid):
 * the string is 55 characters and has a dash at 35, so the `$` after the flags puts the third dash
 * at 52, and neither run of digits, which cannot hold a dash, crosses 35: the ids are exactly 32
 * and 16 digits. `0+-` ahead of an id is an all-zero one, given up at its first other digit.
 * Counted under callgrind (the check alone, in a loop, on strings made as uWS makes them): ~1,000
 * instructions a header, against ~1,790 for a loop over its characters with a table of hex
 * digits, the check used until then, and ~2,000 for fixed-count ids (`[0-9a-f]{32}`).
 */
const VERSION_00 = /^00-(?!0+-)[0-9a-f]+-(?!0+-)[0-9a-f]+-[0-9a-f]{2}$/;
/** A later version (not ff), which NGINX never sends: §3.2 as one expression, what follows ignored. */
const LATER_VERSION =
  /^(?!00|ff)[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}(?:-|$)/;

/** The last header read and what it read as (readTraceparent). */
let lastValue: string | undefined;
let lastContext: TraceContext | undefined;
/** The last header whose flag was asked, and its answer (sampledFlag). */
let lastFlagged: string | undefined;
let lastFlag: boolean | undefined;

/** The context of a valid `traceparent`, else undefined (absent, malformed, version ff, zeros). */
export function readTraceparent(value: string | undefined): TraceContext | undefined {
  // One entry: with OpenTelemetry on, a request's header is read for its span, then again for its
  // decision log line, so the second read is one comparison.
  if (value === lastValue) return lastContext;
  lastContext = parseTraceparent(value);
  lastValue = value;
  return lastContext;
}

/**
 * Whether a `traceparent` is valid and its sampled flag set: true or false for a valid header,
 * undefined for an absent or malformed one. Allocates nothing (no ids are cut out), so a request
 * NGINX marked unsampled can be told apart before anything is made for it (tracing/edge-sampling.ts).
 */
export function sampledFlag(value: string | undefined): boolean | undefined {
  // One entry, as readTraceparent's: with tracing on, a request's header is asked once for what
  // the transport reads of it and once for its span.
  if (value === lastFlagged) return lastFlag;
  lastFlag = value === undefined || !isValid(value) ? undefined : isSampled(value);
  lastFlagged = value;
  return lastFlag;
}

function parseTraceparent(value: string | undefined): TraceContext | undefined {
  if (value === undefined || !isValid(value)) return undefined;
  return {
    traceId: value.slice(TRACE_ID, PARENT_ID - 1),
    parentSpanId: value.slice(PARENT_ID, FLAGS - 1),
    sampled: isSampled(value),
  };
}

/**
 * §3.2's grammar: version 00 exactly 55 characters, a later one (not ff) possibly followed by
 * `-…`; lower-case hex only; neither id all zeros.
 */
function isValid(value: string): boolean {
  const length = value.length;
  if (length === LENGTH && value.charCodeAt(0) === ZERO && value.charCodeAt(1) === ZERO)
    return value.charCodeAt(PARENT_ID - 1) === DASH && VERSION_00.test(value);
  return length >= LENGTH && length <= MAX_LENGTH && LATER_VERSION.test(value);
}

/**
 * Whether bit 0 of trace-flags reads set, the header not checked otherwise: a header whose flag
 * reads unset is the one a parent-based sampler may leave out, and only then is it checked whole
 * (tracing/otel.ts). False for a value too short to have flags.
 */
export function flagBitSet(value: string): boolean {
  return value.length >= LENGTH && isSampled(value);
}

/** Bit 0 of trace-flags: the low bit of its second hex digit (for a valid header). */
function isSampled(value: string): boolean {
  const last = value.charCodeAt(LENGTH - 1);
  const digit = last > 57 ? last - 87 : last - 48;
  return (digit & 1) === 1;
}

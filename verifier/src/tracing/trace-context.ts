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

/**
 * Lower-case hex digits by character code (§3.2 allows no upper case). The header is checked by
 * offset with this table: counted under callgrind in the verifier at 1 % sampling, the check took
 * ~3,100 instructions a request as one regular expression of §3.2's grammar (its lookaheads
 * rescan the ids), ~2,100 as these loops (docs/performance.md, "Tracing").
 */
const HEX = new Uint8Array(128);
for (const digit of '0123456789abcdef') HEX[digit.charCodeAt(0)] = 1;
const DASH = 0x2d;
const ZERO = 0x30;
const F = 0x66;
/** Longer than any header NGINX builds; a longer value is not even read. */
const MAX_LENGTH = 512;
// Offsets of version 00's fields (`vv-<32 hex>-<16 hex>-ff`); a later version has the same ones.
const TRACE_ID = 3;
const PARENT_ID = 36;
const FLAGS = 53;
const LENGTH = 55;

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
 * NGINX marked unsampled can be told apart before anything is made for it (tracing/otel.ts).
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
  if (length < LENGTH || length > MAX_LENGTH) return false;
  const v0 = value.charCodeAt(0);
  const v1 = value.charCodeAt(1);
  if (!isHex(v0) || !isHex(v1) || (v0 === F && v1 === F)) return false;
  if (
    v0 === ZERO && v1 === ZERO
      ? length !== LENGTH
      : length > LENGTH && value.charCodeAt(LENGTH) !== DASH
  )
    return false;
  if (
    value.charCodeAt(TRACE_ID - 1) !== DASH ||
    value.charCodeAt(PARENT_ID - 1) !== DASH ||
    value.charCodeAt(FLAGS - 1) !== DASH
  )
    return false;
  return (
    isId(value, TRACE_ID, PARENT_ID - 1) &&
    isId(value, PARENT_ID, FLAGS - 1) &&
    isHex(value.charCodeAt(FLAGS)) &&
    isHex(value.charCodeAt(FLAGS + 1))
  );
}

/** A character code that is a lower-case hex digit (NaN and codes past 127 are not). */
function isHex(code: number): boolean {
  return code < 128 && HEX[code] === 1;
}

/** `value[from..to)` all lower-case hex digits, not all zeros. */
function isId(value: string, from: number, to: number): boolean {
  let nonZero = false;
  for (let at = from; at < to; at++) {
    const code = value.charCodeAt(at);
    if (!isHex(code)) return false;
    nonZero ||= code !== ZERO;
  }
  return nonZero;
}

/** Bit 0 of trace-flags: the low bit of its second hex digit (the header is valid). */
function isSampled(value: string): boolean {
  const last = value.charCodeAt(LENGTH - 1);
  const digit = last > 57 ? last - 87 : last - 48;
  return (digit & 1) === 1;
}

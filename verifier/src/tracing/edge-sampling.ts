// Whether the verifier's sampler would record a request NGINX sent, told before anything is made for
// it, and as cheaply as the sampler allows. OTEL_TRACES_SAMPLER is read as the SDK reads it (the
// name as written; one it does not know is parentbased_always_on). Under a parent-based sampler a
// header NGINX marked unsampled records nothing when it is valid, and is a root the sampler decides
// when it is malformed, so the header is checked whole only when that root could be recorded:
// always under parentbased_always_on, never under parentbased_always_off, and under
// parentbased_traceidratio only for the share of requests the ratio's draw, made here first, lets
// through (docs/performance.md, "Tracing").
// Under the parent-based samplers the verifier builds the SDK's own sampler itself, wrapped so that
// the remote parent a decision's span starts from, whose ids trace-context.ts has just checked, is
// decided by its flag without the ids being checked a second time (see `checkedParents`).
import { trace, TraceFlags, type Context, type SpanContext } from '@opentelemetry/api';
import { getNumberFromEnv, getStringFromEnv } from '@opentelemetry/core';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  SamplingDecision,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SamplingResult,
} from '@opentelemetry/sdk-trace-base';
import { flagBitSet, sampledFlag } from './trace-context.js';

export interface EdgeSampling {
  /** The provider's sampler; undefined: the SDK builds it from the environment, as it always has. */
  readonly sampler: Sampler | undefined;
  /**
   * True when a span for this header would record nothing. A decision's span asks it with
   * `starts` (its answer then used up); the transport asks it first without, for the same request.
   */
  unrecorded(traceparent: string | undefined, starts: boolean): boolean;
  /**
   * The remote parent of the span about to be started, its ids already checked (trace-context.ts's
   * `readTraceparent`): under a parent-based sampler its flag decides, as ParentBasedSampler would
   * after checking them again. A no-op where the SDK's sampler is used as it builds it.
   */
  checked(parent: SpanContext): void;
}

/** What a header was found to be: not recorded, recorded, or a root the draw already sampled. */
type Verdict = 'unrecorded' | 'recorded' | 'drawn root';

export function readEdgeSampling(): EdgeSampling {
  const name = getStringFromEnv('OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on';
  if (['always_on', 'always_off', 'traceidratio'].includes(name))
    return { sampler: undefined, unrecorded: () => false, checked: ignore };
  if (name === 'parentbased_always_off')
    return {
      ...checkedParents(new AlwaysOffSampler()),
      unrecorded: (header) => unsampledFlag(header),
    };
  if (name !== 'parentbased_traceidratio') {
    const unrecorded = (header: string | undefined) =>
      unsampledFlag(header) && sampledFlag(header) === false;
    // A name the SDK does not know is left to it: it says so (diag) and uses parentbased_always_on.
    if (name !== 'parentbased_always_on')
      return { sampler: undefined, unrecorded, checked: ignore };
    return { ...checkedParents(new AlwaysOnSampler()), unrecorded };
  }

  // parentbased_traceidratio: the ratio read as the SDK reads it (absent or out of [0, 1]: 1).
  const arg = getNumberFromEnv('OTEL_TRACES_SAMPLER_ARG');
  const ratio = arg === undefined || arg < 0 || arg > 1 ? 1 : arg;
  const byTraceId = new TraceIdRatioBasedSampler(ratio);
  /** Set just before the span of a root the draw sampled is started; its sampler takes it. */
  let drawn = false;
  const root: Sampler = {
    shouldSample(context, traceId) {
      if (!drawn) return byTraceId.shouldSample(context, traceId);
      drawn = false;
      return { decision: SamplingDecision.RECORD_AND_SAMPLED };
    },
    toString: () => byTraceId.toString(),
  };
  // The verdict of the request being decided: the transport asks first, then its span.
  let lastHeader: string | undefined;
  let lastVerdict: Verdict = 'recorded';
  const judge = (header: string): Verdict => {
    if (flagBitSet(header)) return 'recorded';
    // A malformed header's root would be left out too: no need to know which it is.
    if (Math.random() >= ratio) return 'unrecorded';
    return sampledFlag(header) === false ? 'unrecorded' : 'drawn root';
  };
  return {
    ...checkedParents(root),
    unrecorded(header, starts) {
      if (header === undefined) return false;
      const verdict = header === lastHeader ? lastVerdict : judge(header);
      [lastHeader, lastVerdict] = starts ? [undefined, 'recorded'] : [header, verdict];
      if (starts) drawn = verdict === 'drawn root';
      return verdict === 'unrecorded';
    },
  };
}

/** A header whose flag reads unset (its validity not yet known). */
function unsampledFlag(header: string | undefined): header is string {
  return header !== undefined && !flagBitSet(header);
}

function ignore(): void {}

/** What ParentBasedSampler answers for a remote parent: its default delegates, AlwaysOn/Off. */
const SAMPLED: SamplingResult = Object.freeze({ decision: SamplingDecision.RECORD_AND_SAMPLED });
const DROPPED: SamplingResult = Object.freeze({ decision: SamplingDecision.NOT_RECORD });

/**
 * ParentBasedSampler({ root }), as the SDK builds it from OTEL_TRACES_SAMPLER, in front of which the
 * parent `checked` names is decided by its flag alone. ParentBasedSampler first checks every
 * parent's ids (~2,400 instructions a span, counted; the Tracer has checked them once already,
 * docs/performance.md, "Ninth round"); a parent built from a header trace-context.ts has checked is
 * valid, so the answer is the same. Any other parent (a child span's, a context not ours) goes to
 * ParentBasedSampler unchanged.
 */
function checkedParents(root: Sampler): Pick<EdgeSampling, 'sampler' | 'checked'> {
  const parentBased = new ParentBasedSampler({ root });
  let checked: SpanContext | undefined;
  const sampler: Sampler = {
    shouldSample(context: Context, traceId, spanName, spanKind, attributes, links) {
      const parent = trace.getSpanContext(context);
      if (parent !== undefined && parent === checked)
        return (parent.traceFlags & TraceFlags.SAMPLED) === 0 ? DROPPED : SAMPLED;
      return parentBased.shouldSample(context, traceId, spanName, spanKind, attributes, links);
    },
    toString: () => parentBased.toString(),
  };
  return {
    sampler,
    checked(parent) {
      checked = parent;
    },
  };
}

// Whether the verifier's sampler would record a request NGINX sent, told before anything is made for
// it, and as cheaply as the sampler allows. OTEL_TRACES_SAMPLER is read as the SDK reads it (the
// name as written; one it does not know is parentbased_always_on). Under a parent-based sampler a
// header NGINX marked unsampled records nothing when it is valid, and is a root the sampler decides
// when it is malformed, so the header is checked whole only when that root could be recorded:
// always under parentbased_always_on, never under parentbased_always_off, and under
// parentbased_traceidratio only for the share of requests the ratio's draw, made here first, lets
// through (docs/performance.md, "Tracing").
import { getNumberFromEnv, getStringFromEnv } from '@opentelemetry/core';
import {
  ParentBasedSampler,
  SamplingDecision,
  TraceIdRatioBasedSampler,
  type Sampler,
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
}

/** What a header was found to be: not recorded, recorded, or a root the draw already sampled. */
type Verdict = 'unrecorded' | 'recorded' | 'drawn root';

export function readEdgeSampling(): EdgeSampling {
  const name = getStringFromEnv('OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on';
  if (['always_on', 'always_off', 'traceidratio'].includes(name))
    return { sampler: undefined, unrecorded: () => false };
  if (name === 'parentbased_always_off')
    return { sampler: undefined, unrecorded: (header) => unsampledFlag(header) };
  if (name !== 'parentbased_traceidratio')
    return {
      sampler: undefined,
      unrecorded: (header) => unsampledFlag(header) && sampledFlag(header) === false,
    };

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
    sampler: new ParentBasedSampler({ root }),
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

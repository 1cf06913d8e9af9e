// The parent-based samplers the verifier builds answer as the SDK's ParentBasedSampler does for every
// parent, the one whose ids were already checked (and decided by its flag alone) included.
import { ROOT_CONTEXT, SpanKind, trace, TraceFlags, type SpanContext } from '@opentelemetry/api';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  type Sampler,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { readEdgeSampling } from './edge-sampling.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const parent = (over: Partial<SpanContext>): SpanContext => ({
  traceId: TRACE,
  spanId: '00f067aa0ba902b7',
  traceFlags: TraceFlags.SAMPLED,
  isRemote: true,
  ...over,
});
const parents: Record<string, SpanContext> = {
  'remote sampled': parent({}),
  'remote unsampled': parent({ traceFlags: TraceFlags.NONE }),
  'local sampled': parent({ isRemote: false }),
  'local unsampled': parent({ isRemote: false, traceFlags: TraceFlags.NONE }),
  'all-zero trace id': parent({ traceId: '0'.repeat(32) }),
  'short span id': parent({ spanId: '00f067aa' }),
};

function decision(sampler: Sampler, context: SpanContext | undefined) {
  const ctx = context === undefined ? ROOT_CONTEXT : trace.setSpanContext(ROOT_CONTEXT, context);
  return sampler.shouldSample(ctx, TRACE, 'verify', SpanKind.SERVER, {}, []).decision;
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe.each([
  ['parentbased_always_on', new AlwaysOnSampler()],
  ['parentbased_always_off', new AlwaysOffSampler()],
])('the verifier’s %s sampler', (name, root) => {
  it('decides every parent, checked or not, as ParentBasedSampler does', () => {
    vi.stubEnv('OTEL_TRACES_SAMPLER', name);
    const edge = readEdgeSampling();
    const sdk = new ParentBasedSampler({ root });
    expect(edge.sampler).toBeDefined();
    expect(edge.sampler!.toString()).toBe(sdk.toString());
    for (const [what, context] of [...Object.entries(parents), ['none', undefined] as const]) {
      const expected = decision(sdk, context);
      expect(decision(edge.sampler!, context), `${what}, unchecked`).toBe(expected);
      // Only a valid remote parent is ever reported checked (otel.ts, from readTraceparent).
      if (context?.isRemote !== true || what.includes('zero') || what.includes('short')) continue;
      edge.checked(context);
      expect(decision(edge.sampler!, context), `${what}, checked`).toBe(expected);
    }
  });
});

it('leaves a sampler name the SDK does not know to the SDK', () => {
  vi.stubEnv('OTEL_TRACES_SAMPLER', 'parentbased_sometimes');
  expect(readEdgeSampling().sampler).toBeUndefined();
});

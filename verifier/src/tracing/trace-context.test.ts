import { describe, expect, it } from 'vitest';
import { readTraceparent } from './trace-context.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

describe('readTraceparent (W3C Trace Context §3.2)', () => {
  it('reads the trace id, the parent span id and the sampled bit of a version 00 header', () => {
    expect(readTraceparent(`00-${TRACE}-${SPAN}-01`)).toEqual({
      traceId: TRACE,
      parentSpanId: SPAN,
      sampled: true,
    });
    expect(readTraceparent(`00-${TRACE}-${SPAN}-02`)?.sampled).toBe(false);
  });

  it('reads the known fields of a later version and ignores what follows them', () => {
    expect(readTraceparent(`cc-${TRACE}-${SPAN}-01-extra`)?.traceId).toBe(TRACE);
  });

  it.each([
    ['absent', undefined],
    ['empty', ''],
    ['version 00 with a suffix', `00-${TRACE}-${SPAN}-01-extra`],
    ['version ff', `ff-${TRACE}-${SPAN}-01`],
    ['upper-case hex', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['a short trace id', `00-${TRACE.slice(1)}-${SPAN}-01`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['an all-zero parent id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['non-hex flags', `00-${TRACE}-${SPAN}-0x`],
    ['10 kB', `cc-${TRACE}-${SPAN}-01-${'a'.repeat(10_000)}`],
  ])('ignores a header that is %s', (_, value) => {
    expect(readTraceparent(value)).toBeUndefined();
  });
});

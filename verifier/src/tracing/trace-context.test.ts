import { describe, expect, it } from 'vitest';
import { readTraceparent, sampledFlag } from './trace-context.js';

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
    expect(readTraceparent(`00-${TRACE}-${SPAN}-0b`)?.sampled).toBe(true);
    expect(readTraceparent(`00-${TRACE}-${SPAN}-fe`)?.sampled).toBe(false);
  });

  it('reads the known fields of a later version and ignores what follows them', () => {
    expect(readTraceparent(`cc-${TRACE}-${SPAN}-01-extra`)?.traceId).toBe(TRACE);
    expect(readTraceparent(`cc-${TRACE}-${SPAN}-01`)?.traceId).toBe(TRACE);
  });

  it('accepts exactly what the grammar of §3.2 accepts, one changed character at a time', () => {
    // §3.2's grammar as one expression: the reference the offset checks are held to.
    const pattern =
      /^(?:00-(?=.{52}$)|(?!00|ff)[0-9a-f]{2}-)(?!0{32})([0-9a-f]{32})-(?!0{16})([0-9a-f]{16})-([0-9a-f]{2})(?:$|-)/;
    const bases = [
      `00-${TRACE}-${SPAN}-01`,
      `cc-${TRACE}-${SPAN}-01-x`,
      `00-${'0'.repeat(31)}1-${'0'.repeat(15)}1-00`,
      // One change away from version ff.
      `f0-${TRACE}-${SPAN}-01`,
    ];
    const swaps = ['0', '1', '9', 'a', 'f', 'g', 'A', '-', ' ', '\n'];
    let checked = 0;
    for (const base of bases)
      for (let at = 0; at <= base.length; at++)
        for (const swap of swaps)
          for (const value of [
            base.slice(0, at) + swap + base.slice(at + 1),
            base.slice(0, at) + swap + base.slice(at),
          ]) {
            const match = pattern.exec(value);
            const read = readTraceparent(value);
            expect(read?.traceId, value).toBe(match?.[1]);
            expect(read?.parentSpanId, value).toBe(match?.[2]);
            if (match) expect(read?.sampled, value).toBe((parseInt(match[3]!, 16) & 1) === 1);
            // The allocation-free flag read accepts exactly the same headers.
            expect(sampledFlag(value), value).toBe(read?.sampled);
            checked++;
          }
    expect(checked).toBeGreaterThan(2000);
  });

  it('reads each header for itself when requests alternate, repeat or turn malformed', () => {
    const other = '0af7651916cd43dd8448eb211c80319c';
    const first = `00-${TRACE}-${SPAN}-01`;
    const second = `00-${other}-${SPAN}-00`;
    for (const [value, traceId] of [
      [first, TRACE],
      [first, TRACE],
      [second, other],
      [first, TRACE],
      [`00-${TRACE}-${SPAN}-0x`, undefined],
      [undefined, undefined],
      [second, other],
    ] as const)
      expect(readTraceparent(value)?.traceId, value).toBe(traceId);
    expect(readTraceparent(second)?.sampled).toBe(false);
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
    expect(sampledFlag(value)).toBeUndefined();
  });
});

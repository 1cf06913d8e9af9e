// The bench scripts' command lines: what they accept and how every mistake is reported at once.
import { describe, expect, it } from 'vitest';
import { parseBenchOptions } from './bench-options.js';
import { COUNT_QUICK, parseCountOptions } from './count-options.js';

describe('the bench command lines', () => {
  it('take values inline or as the next argument, and seconds with an "s"', () => {
    expect(parseBenchOptions(['--duration=5s', '--connections', '8'])).toMatchObject({
      durationSeconds: 5,
      connections: 8,
    });
    expect(parseCountOptions(['--quick', '--requests=30'])).toMatchObject({
      requests: 30,
      warmup: COUNT_QUICK.warmup,
    });
  });

  it('answer -h and --help alike', () => {
    expect(parseBenchOptions(['-h']).help).toBe(true);
    expect(parseCountOptions(['--help']).help).toBe(true);
  });

  it('report a stray argument, a value given to a flag and a missing value, in argument order', () => {
    expect(() => parseBenchOptions(['fast', '--json=yes', '--connections'])).toThrow(
      'invalid options: unknown option "fast"; "--json" takes no value; "--connections" must be a positive integer',
    );
    expect(() => parseCountOptions(['--requests', '--json'])).toThrow(
      '"--requests" must be a positive integer',
    );
  });
});

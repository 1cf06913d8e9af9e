// Command-line options of `npm run bench:counts`, parsed once; every problem reported together.
import { parseCli, positiveInteger, throwProblems } from './cli-args.js';

export interface CountOptions {
  readonly requests: number;
  readonly warmup: number;
  readonly json: boolean;
  readonly help: boolean;
}

/** Counts do not move with load, so a few hundred requests give a figure to within 1 %. */
export const COUNT_DEFAULTS = Object.freeze({ requests: 200, warmup: 20 });
/** `--quick`: enough to keep the harness alive in CI, not to quote. */
export const COUNT_QUICK = Object.freeze({ requests: 10, warmup: 3 });

export const COUNT_USAGE = `usage: npm run bench:counts -- [--quick] [--requests N] [--json]
  --quick           ${COUNT_QUICK.requests} requests per row (CI's smoke; not for quoting)
  --requests N      requests counted per row (default ${COUNT_DEFAULTS.requests})
  --json            print {"rows":[{"name","requests","instructions","syscalls"}]} only`;

export function parseCountOptions(argv: readonly string[]): CountOptions {
  const parsed = parseCli(argv, {
    requests: { type: 'string' },
    quick: { type: 'boolean' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  const explicit = positiveInteger(parsed, 'requests');
  throwProblems(parsed);
  const { requests, warmup } = parsed.values.quick === true ? COUNT_QUICK : COUNT_DEFAULTS;
  return Object.freeze({
    requests: explicit ?? requests,
    warmup,
    json: parsed.values.json === true,
    help: parsed.values.help === true,
  });
}

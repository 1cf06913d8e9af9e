// Command-line options of `npm run bench:counts`, parsed once; every problem reported together.
import { parseCli, positiveInteger, throwProblems } from './cli-args.js';

export interface CountOptions {
  readonly requests: number;
  readonly warmup: number;
  readonly json: boolean;
  /** Judge the run against the recorded baseline (its own request counts); fail when over. */
  readonly budget: boolean;
  /** Write this run's counts as the new baseline. */
  readonly recordBudget: boolean;
  readonly help: boolean;
}

/** Counts do not move with load, so a few hundred requests give a figure to within 1 %. */
export const COUNT_DEFAULTS = Object.freeze({ requests: 200, warmup: 20 });
/** `--quick`: enough to keep the harness alive in CI, not to quote. */
export const COUNT_QUICK = Object.freeze({ requests: 10, warmup: 3 });

export const COUNT_USAGE = `usage: npm run bench:counts -- [--quick] [--requests N] [--json] [--budget | --record-budget]
  --quick           ${COUNT_QUICK.requests} requests per row (a harness check; not for quoting)
  --requests N      requests counted per row (default ${COUNT_DEFAULTS.requests})
  --json            print {"rows":[{"name","requests","instructions","syscalls"}]} only
  --budget          count as the baseline was counted (perf/budget/nginx-counts.json) and exit 1
                    when a kind grows past +2 % instructions or gains a system call per request,
                    or when the baseline has no line in docs/performance.md's record (npm run bench:budget)
  --record-budget   write this run as the new baseline (at the baseline's request counts) and
                    print the record line docs/performance.md needs`;

export function parseCountOptions(argv: readonly string[]): CountOptions {
  const parsed = parseCli(argv, {
    requests: { type: 'string' },
    quick: { type: 'boolean' },
    json: { type: 'boolean' },
    budget: { type: 'boolean' },
    'record-budget': { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  const explicit = positiveInteger(parsed, 'requests');
  const budget = parsed.values.budget === true;
  const recordBudget = parsed.values['record-budget'] === true;
  if ((budget || recordBudget) && (explicit !== undefined || parsed.values.quick === true))
    parsed.problems.push({
      at: parsed.positions.get(budget ? 'budget' : 'record-budget') ?? 0,
      message:
        'the budget is counted at the baseline\'s own request counts: leave out "--requests" and "--quick"',
    });
  if (budget && recordBudget)
    parsed.problems.push({
      at: parsed.positions.get('record-budget') ?? 0,
      message: '"--budget" and "--record-budget" go in separate runs',
    });
  throwProblems(parsed);
  const { requests, warmup } = parsed.values.quick === true ? COUNT_QUICK : COUNT_DEFAULTS;
  return Object.freeze({
    requests: explicit ?? requests,
    warmup,
    json: parsed.values.json === true,
    budget,
    recordBudget,
    help: parsed.values.help === true,
  });
}

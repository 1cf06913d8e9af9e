// `npm run bench:counts`: NGINX's user-space instructions (callgrind) and system calls (strace) per
// request of the stack's rendered configuration, for each kind of request. Counts, not times: the
// same configuration gives the same figures on a loaded machine, so they can be quoted. With
// `--budget` the run is judged against the baseline in perf/budget/ (CI's gate); SG_BUDGET_COUNTS
// names a saved `--json` output to judge instead of counting (the gate's own test).
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../stack/stack.js';
import {
  BUDGET_FILES,
  budgetDigest,
  budgetRows,
  formatBudgetFile,
  judgeBudget,
  parseBudget,
  type Budget,
} from '../perf/count-budget.js';
import { COUNT_USAGE, parseCountOptions, type CountOptions } from '../perf/count-options.js';
import { formatCountRun, runNginxCounts } from '../perf/count-run.js';
import type { CountRow } from '../perf/nginx-counts.js';
import { assertCountTools } from '../perf/prerequisites.js';
import { createScratchDir } from '../perf/scratch.js';

async function main(): Promise<number> {
  let options: CountOptions;
  try {
    options = parseCountOptions(process.argv.slice(2));
  } catch (error) {
    console.error(`${(error as Error).message}\n\n${COUNT_USAGE}`);
    return 2;
  }
  if (options.help) {
    console.log(COUNT_USAGE);
    return 0;
  }
  const budgetFile = join(REPO_ROOT, BUDGET_FILES.nginx);
  let budget: Budget | undefined;
  if (options.budget || options.recordBudget) {
    try {
      budget = parseBudget(readFileSync(budgetFile, 'utf8'), BUDGET_FILES.nginx);
    } catch (error) {
      console.error(`budget: ${(error as Error).message}`);
      return 1;
    }
  }
  const saved = process.env.SG_BUDGET_COUNTS;
  if (saved !== undefined && !options.budget) {
    console.error('SG_BUDGET_COUNTS is read only with "--budget"');
    return 2;
  }
  if (saved === undefined) assertCountTools();
  const dir = createScratchDir('counts');
  try {
    const rows =
      saved !== undefined
        ? (JSON.parse(readFileSync(saved, 'utf8')) as { rows: CountRow[] }).rows
        : await runNginxCounts({
            requests: budget?.requests ?? options.requests,
            warmup: budget?.warmup ?? options.warmup,
            dir,
            log: (line) => process.stderr.write(`${line}\n`),
          });
    if (budget !== undefined && options.budget) {
      const { failed, report } = judgeBudget(
        budget,
        rows,
        readFileSync(join(REPO_ROOT, BUDGET_FILES.record), 'utf8'),
      );
      console.log(`${formatCountRun(rows)}\n\n${report}`);
      return failed ? 1 : 0;
    }
    if (budget !== undefined && options.recordBudget) {
      const next: Budget = { ...budget, rows: budgetRows(rows) };
      writeFileSync(budgetFile, formatBudgetFile(next));
      console.log(
        `${formatCountRun(rows)}\n\nwrote ${BUDGET_FILES.nginx}; add to ${BUDGET_FILES.record}'s budget record:\n` +
          `| ${new Date().toISOString().slice(0, 10)} | \`${budgetDigest(next)}\` | why the counts moved |`,
      );
      return 0;
    }
    console.log(
      options.json
        ? JSON.stringify({ rows })
        : `NGINX per request, ${options.requests} requests per row on one keep-alive connection ` +
            `(instructions: callgrind, one process; system calls: strace on the worker, epoll_wait left out)\n` +
            formatCountRun(rows),
    );
  } finally {
    if (!process.env.SG_BENCH_KEEP) rmSync(dir, { recursive: true, force: true });
  }
  return 0;
}

process.exitCode = await main();

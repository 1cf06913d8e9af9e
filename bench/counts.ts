// `npm run bench:counts`: NGINX's user-space instructions (callgrind) and system calls (strace) per
// request of the stack's rendered configuration, for each kind of request. Counts, not times: the
// same configuration gives the same figures on a loaded machine, so they can be quoted.
import { rmSync } from 'node:fs';
import { COUNT_USAGE, parseCountOptions, type CountOptions } from '../perf/count-options.js';
import { formatCountRun, runNginxCounts } from '../perf/count-run.js';
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
  assertCountTools();
  const dir = createScratchDir('counts');
  try {
    const rows = await runNginxCounts({
      requests: options.requests,
      warmup: options.warmup,
      dir,
      log: (line) => process.stderr.write(`${line}\n`),
    });
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

// Command-line options of `npm run bench`, parsed once; every problem reported together.
import { parseCli, positiveInteger, throwProblems } from './cli-args.js';

export interface BenchOptions {
  readonly durationSeconds: number;
  readonly connections: number;
  readonly json: boolean;
  /** NGINX's instructions and system calls per request (perf/count-run.ts) after the rates. */
  readonly counts: boolean;
  readonly help: boolean;
}

export const BENCH_DEFAULTS = Object.freeze({ durationSeconds: 10, connections: 50 });

export const BENCH_USAGE = `usage: npm run bench -- [--duration SECONDS] [--connections N] [--no-counts] [--json]
  --duration S      seconds per row (default ${BENCH_DEFAULTS.durationSeconds})
  --connections N   wrk connections (default ${BENCH_DEFAULTS.connections})
  --no-counts       leave out NGINX's counted instructions and system calls (npm run bench:counts)
  --json            print {"rows":[{"name","rps","p50_ms","p99_ms","ratio"}],"counts":[…]} only`;

export function parseBenchOptions(argv: readonly string[]): BenchOptions {
  const parsed = parseCli(argv, {
    duration: { type: 'string' },
    connections: { type: 'string' },
    'no-counts': { type: 'boolean' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  const durationSeconds =
    positiveInteger(parsed, 'duration', 'seconds') ?? BENCH_DEFAULTS.durationSeconds;
  const connections = positiveInteger(parsed, 'connections') ?? BENCH_DEFAULTS.connections;
  throwProblems(parsed);
  return Object.freeze({
    durationSeconds,
    connections,
    json: parsed.values.json === true,
    counts: parsed.values['no-counts'] !== true,
    help: parsed.values.help === true,
  });
}

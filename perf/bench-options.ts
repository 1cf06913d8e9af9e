// Command-line options of `npm run bench`, parsed once; every problem reported together.

export interface BenchOptions {
  readonly durationSeconds: number;
  readonly connections: number;
  readonly json: boolean;
  /** NGINX's instructions and system calls per request (perf/count-run.ts) after the rates. */
  readonly counts: boolean;
  readonly help: boolean;
}

export const BENCH_USAGE = `usage: npm run bench -- [--duration SECONDS] [--connections N] [--no-counts] [--json]
  --duration S      seconds per row (default 10)
  --connections N   wrk connections (default 50)
  --no-counts       leave out NGINX's counted instructions and system calls (npm run bench:counts)
  --json            print {"rows":[{"name","rps","p50_ms","p99_ms","ratio"}],"counts":[…]} only`;

export function parseBenchOptions(argv: readonly string[]): BenchOptions {
  const problems: string[] = [];
  let durationSeconds = 10;
  let connections = 50;
  let json = false;
  let counts = true;
  let help = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [name, inline] = arg.includes('=')
      ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)]
      : [arg, undefined];
    if (name === '--json') json = true;
    else if (name === '--no-counts') counts = false;
    else if (name === '--help' || name === '-h') help = true;
    else if (name === '--duration' || name === '--connections') {
      const text = inline ?? argv[++i];
      const value = text !== undefined && /^\d+s?$/.test(text) ? Number.parseInt(text, 10) : NaN;
      if (!(value > 0)) problems.push(`"${name}" must be a positive integer`);
      else if (name === '--duration') durationSeconds = value;
      else connections = value;
    } else problems.push(`unknown option "${arg}"`);
  }
  if (problems.length > 0) throw new TypeError(`invalid options: ${problems.join('; ')}`);
  return Object.freeze({ durationSeconds, connections, json, counts, help });
}

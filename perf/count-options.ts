// Command-line options of `npm run bench:counts`, parsed once; every problem reported together.

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
  const problems: string[] = [];
  let requests: number = COUNT_DEFAULTS.requests;
  let warmup: number = COUNT_DEFAULTS.warmup;
  let json = false;
  let help = false;
  let quick = false;
  let explicit: number | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [name, inline] = arg.includes('=')
      ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)]
      : [arg, undefined];
    if (name === '--json') json = true;
    else if (name === '--quick') quick = true;
    else if (name === '--help' || name === '-h') help = true;
    else if (name === '--requests') {
      const text = inline ?? argv[++i];
      const value = text !== undefined && /^\d+$/.test(text) ? Number(text) : NaN;
      if (!(value > 0)) problems.push('"--requests" must be a positive integer');
      else explicit = value;
    } else problems.push(`unknown option "${arg}"`);
  }
  if (problems.length > 0) throw new TypeError(`invalid options: ${problems.join('; ')}`);
  if (quick) ({ requests, warmup } = COUNT_QUICK);
  if (explicit !== undefined) requests = explicit;
  return Object.freeze({ requests, warmup, json, help });
}

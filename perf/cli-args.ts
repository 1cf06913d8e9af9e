// The command lines of the bench scripts, through node:util's parseArgs. It runs lenient (not
// `strict`) so that one run collects every problem — an unknown option, a stray argument, a value
// given to a flag, a bad number — and the script reports them together, not the first alone.
import { parseArgs, type ParseArgsConfig } from 'node:util';

export type CliOptions = NonNullable<ParseArgsConfig['options']>;

export interface ParsedCli {
  readonly values: Readonly<Record<string, string | boolean | undefined>>;
  /** Where each option was last given on the command line, to report problems in that order. */
  readonly positions: ReadonlyMap<string, number>;
  /** Problems to report together, each at its argument's position. */
  readonly problems: { at: number; message: string }[];
}

export function parseCli(argv: readonly string[], options: CliOptions): ParsedCli {
  const { values, tokens } = parseArgs({
    args: [...argv],
    options,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const problems: ParsedCli['problems'] = [];
  const positions = new Map<string, number>();
  for (const token of tokens) {
    const at = token.index;
    if (token.kind === 'positional')
      problems.push({ at, message: `unknown option "${token.value}"` });
    else if (token.kind === 'option') {
      positions.set(token.name, at);
      const option = options[token.name];
      if (option === undefined) problems.push({ at, message: `unknown option "${token.rawName}"` });
      else if (option.type === 'boolean' && token.value !== undefined)
        problems.push({ at, message: `"${token.rawName}" takes no value` });
    }
  }
  return { values, positions, problems };
}

/**
 * The positive integer given to `--name` (digits, plus an `s` when `seconds`), undefined when the
 * option is absent; a missing or bad value adds a problem and gives undefined too.
 */
export function positiveInteger(
  parsed: ParsedCli,
  name: string,
  unit: 'count' | 'seconds' = 'count',
): number | undefined {
  const text = parsed.values[name];
  if (text === undefined) return undefined;
  const pattern = unit === 'seconds' ? /^\d+s?$/ : /^\d+$/;
  const value = typeof text === 'string' && pattern.test(text) ? Number.parseInt(text, 10) : NaN;
  if (value > 0) return value;
  parsed.problems.push({
    at: parsed.positions.get(name) ?? 0,
    message: `"--${name}" must be a positive integer`,
  });
  return undefined;
}

/** Throws one TypeError naming every problem, as the scripts print it above their usage. */
export function throwProblems(parsed: ParsedCli): void {
  if (parsed.problems.length === 0) return;
  const messages = [...parsed.problems].sort((a, b) => a.at - b.at).map((p) => p.message);
  throw new TypeError(`invalid options: ${messages.join('; ')}`);
}

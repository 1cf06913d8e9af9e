// Argument parsing for `cf-sign`, kept apart from I/O so the rules are testable on their own.

import { parseArgs } from 'node:util';

export const usage = `usage:
  cf-sign url     --key-pair-id ID --private-key FILE --url URL --expires EPOCH
                  [--not-before EPOCH] [--ip CIDR] [--hash SHA1|SHA256]
  cf-sign cookies --key-pair-id ID --private-key FILE --resource PATTERN --expires EPOCH
                  [--not-before EPOCH] [--ip CIDR] [--hash SHA1|SHA256]

Prints the signed URL (url) or the cookie values as JSON (cookies).
EPOCH is in seconds. The key may be RSA-2048 (PKCS#8 or PKCS#1 PEM; SHA1 by default) or
ECDSA P-256 (always SHA256). URL and PATTERN must already be percent-encoded.`;

export interface CliCommand {
  readonly command: 'url' | 'cookies';
  readonly keyPairId: string;
  readonly privateKeyFile: string;
  /** The URL (url) or resource pattern (cookies). */
  readonly target: string;
  readonly expires: number;
  readonly notBefore: number | undefined;
  readonly ip: string | undefined;
  readonly hash: 'SHA1' | 'SHA256' | undefined;
}

export type CliParse =
  | { readonly kind: 'run'; readonly command: CliCommand }
  | { readonly kind: 'help' }
  | { readonly kind: 'error'; readonly message: string };

const options = {
  'key-pair-id': { type: 'string' },
  'private-key': { type: 'string' },
  url: { type: 'string' },
  resource: { type: 'string' },
  expires: { type: 'string' },
  'not-before': { type: 'string' },
  ip: { type: 'string' },
  hash: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const epoch = /^[1-9]\d{0,9}$/;

/** Parses argv (without node and script). Never throws. */
export function parseCliArgs(argv: readonly string[]): CliParse {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options, allowPositionals: true, strict: true });
  } catch (error) {
    return { kind: 'error', message: (error as Error).message };
  }
  const { values, positionals } = parsed;
  if (values.help) return { kind: 'help' };
  const [command, ...extra] = positionals;
  if (command !== 'url' && command !== 'cookies') {
    return { kind: 'error', message: command ? `unknown command "${command}"` : 'missing command' };
  }
  if (extra.length > 0) return { kind: 'error', message: `unexpected argument "${extra[0]}"` };

  const targetFlag = command === 'url' ? 'url' : 'resource';
  const otherFlag = command === 'url' ? 'resource' : 'url';
  if (values[otherFlag] !== undefined)
    return { kind: 'error', message: `--${otherFlag} does not apply to "${command}"` };
  for (const flag of ['key-pair-id', 'private-key', targetFlag, 'expires'] as const) {
    if (!values[flag]) return { kind: 'error', message: `missing --${flag}` };
  }
  for (const flag of ['expires', 'not-before'] as const) {
    const value = values[flag];
    if (value !== undefined && !epoch.test(value))
      return { kind: 'error', message: `--${flag} must be epoch seconds` };
  }
  const hash = values.hash;
  if (hash !== undefined && hash !== 'SHA1' && hash !== 'SHA256') {
    return { kind: 'error', message: '--hash must be SHA1 or SHA256' };
  }
  return {
    kind: 'run',
    command: {
      command,
      keyPairId: values['key-pair-id'] as string,
      privateKeyFile: values['private-key'] as string,
      target: values[targetFlag] as string,
      expires: Number(values.expires),
      notBefore: values['not-before'] === undefined ? undefined : Number(values['not-before']),
      ip: values.ip,
      hash,
    },
  };
}

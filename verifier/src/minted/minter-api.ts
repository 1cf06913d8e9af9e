// The minting kinds' API (packages/credential-minter), the one file the verifier imports it through.
// Until that package is in the workspace, this holds its API and its `jwt` kind signed HS256 with a
// key file, with the package's entry shape, so the grant and its delivery run on a real value.
import { readFileSync, statSync } from 'node:fs';
import { SignJWT } from 'jose';
import { z } from 'zod';

/** The verified caller, from the verifier's decision (never from the request). */
export interface Caller {
  iss: string;
  sub: string;
  clientId?: string;
  scopes: readonly string[];
  claims: Readonly<Record<string, unknown>>;
  /** The token's `exp`, epoch seconds. */
  exp: number;
  token: string;
}
/** A minted value and the moment it stops being accepted downstream (epoch seconds). */
export interface MintedValue {
  value: string;
  expiresAt: number;
}
export interface Minter {
  readonly kind: string;
  mint(caller: Caller, now: number): Promise<MintedValue>;
}
export interface MintContext {
  tokenEndpoint?: () => Promise<string>;
  fetch?: typeof fetch;
}
export type MintErrorCode =
  'claim_missing' | 'exchange_refused' | 'exchange_failed' | 'key_unavailable';
export class MintError extends Error {
  override readonly name = 'MintError';
  constructor(
    readonly code: MintErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export const defaultTtlSeconds = 300;
const ttlSeconds = z
  .number()
  .int()
  .positive()
  .max(7 * 24 * 3600)
  .default(defaultTtlSeconds);
const jwtEntry = z.strictObject({
  kind: z.literal('jwt'),
  ttlSeconds,
  alg: z.enum(['HS256']),
  keyFile: z.string().min(1, 'must name a file'),
  iss: z.string().min(1).optional(),
  aud: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).optional(),
  sub: z.string().optional(),
  claims: z.record(z.string(), z.json()).optional(),
});
export const mintEntrySchema = z.discriminatedUnion('kind', [jwtEntry]);
export type MintEntry = z.infer<typeof mintEntrySchema>;

/** `{sub}`, `{client_id}`, `{scope}`, `{claims.NAME}` over the caller; a missing claim refuses. */
function fill(template: string, caller: Caller): string {
  return template.replace(/\{([a-z_]+(?:\.[A-Za-z0-9_-]+)?)\}/g, (_, name: string) => {
    const value =
      name === 'sub'
        ? caller.sub
        : name === 'client_id'
          ? caller.clientId
          : name === 'scope'
            ? caller.scopes.join(' ')
            : name.startsWith('claims.')
              ? caller.claims[name.slice(7)]
              : undefined;
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean')
      throw new MintError('claim_missing', `the token has no "${name}" for the template`);
    return String(value);
  });
}

function fillJson(value: unknown, caller: Caller): unknown {
  if (typeof value === 'string') return fill(value, caller);
  if (Array.isArray(value)) return value.map((item) => fillJson(item, caller));
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fillJson(v, caller)]));
  return value;
}

/** The key file: present, not readable by group or others, re-read when it changes. */
function keyReader(path: string) {
  let seen: { mtimeMs: number; key: Uint8Array } | undefined;
  const read = (): Uint8Array => {
    const stat = statSync(path);
    if ((stat.mode & 0o077) !== 0)
      throw new TypeError(`"${path}" is readable by group or others (chmod 600 it)`);
    if (seen?.mtimeMs !== stat.mtimeMs) seen = { mtimeMs: stat.mtimeMs, key: readFileSync(path) };
    if (seen.key.byteLength < 32) throw new TypeError(`"${path}" must hold at least 32 bytes`);
    return seen.key;
  };
  read();
  return read;
}

/** A Minter for one parsed entry; an unreadable or open key file throws a TypeError naming it. */
export function createMinter(entry: MintEntry, context: MintContext = {}): Minter {
  void context;
  let read: () => Uint8Array;
  try {
    read = keyReader(entry.keyFile);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new TypeError(
      code === undefined ? (error as Error).message : `cannot read "${entry.keyFile}" (${code})`,
      { cause: error },
    );
  }
  return {
    kind: entry.kind,
    async mint(caller, now) {
      let key: Uint8Array;
      try {
        key = read();
      } catch {
        throw new MintError('key_unavailable', '"keyFile" cannot be read');
      }
      const expiresAt = Math.floor(Math.min(now + entry.ttlSeconds, caller.exp));
      const claims = fillJson(entry.claims ?? {}, caller) as Record<string, unknown>;
      const jwt = new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' });
      const sub = fill(entry.sub ?? '{sub}', caller);
      if (sub !== '') jwt.setSubject(sub);
      if (entry.iss !== undefined) jwt.setIssuer(entry.iss);
      if (entry.aud !== undefined) jwt.setAudience(entry.aud);
      const value = await jwt.setIssuedAt(Math.floor(now)).setExpirationTime(expiresAt).sign(key);
      return { value, expiresAt };
    },
  };
}

// The kinds of value a setting holds (durations, sizes, listen addresses, secrets, claim rules…),
// each accepting the file's JSON spelling and the environment's string one (`"30s"`, `"a,b"`), so a
// VERIFIER_* variable is checked by the same schema, and naming what it expected in operator words.
import { redact, rememberSecret } from './redact.js';
import { z } from 'zod';
import { DEFAULT_LISTEN, LISTEN_EXPECTED, parseListen, type Listen } from './listen.js';

declare module 'zod' {
  interface GlobalMeta {
    /** The VERIFIER_* variable that sets this setting (single-issuer mode for issuer fields). */
    env?: string;
  }
}

/** A setting operators may also set from the environment, as the variable `name`. */
export const env = <T extends z.ZodType>(name: string, kind: T): T => kind.meta({ env: name });

/** A value as a problem quotes it; objects are not quoted (they may hold a secret). */
const got = (value: unknown) =>
  ['string', 'number', 'boolean'].includes(typeof value)
    ? `, got ${redact(JSON.stringify(value))}`
    : '';

/** "expected …, got …", or `missing` when the value is absent (zod says both with one issue). */
export function says(expected: string, missing = 'a value is required') {
  return {
    error: (issue: { input?: unknown }) =>
      issue.input === undefined ? missing : `expected ${expected}${got(issue.input)}`,
  };
}

/** A plain number, or a string of digits with a unit suffix scaled by `unit(suffix)`. */
function measure(expected: string, shape: RegExp, unit: (suffix: string) => number, whole = true) {
  const said = says(expected);
  const plain = whole ? z.number(said).int(said).positive(said) : z.number(said).min(0, said);
  return z
    .union([plain, z.string().regex(shape, said)], said)
    .transform((raw) => {
      const [, digits = raw, suffix = ''] = shape.exec(String(raw)) ?? [];
      return Number(digits) * unit(suffix.toLowerCase());
    })
    .pipe(whole ? z.number().int().positive(said).max(Number.MAX_SAFE_INTEGER, said) : z.number());
}

/** `30`, `30s`, `10m`, `24h`, `500ms` → seconds. Plain numbers are seconds. */
export const duration = measure(
  'a duration such as 30, 30s, 10m or 24h',
  /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/,
  (suffix) => ({ ms: 0.001, m: 60, h: 3600 })[suffix] ?? 1,
  false,
);
/** Timeouts and lifetimes: never zero. */
export const positive = duration.refine((seconds) => seconds > 0, 'must be greater than 0');
/** A positive integer, e.g. a cache size. */
export const count = measure('a positive integer', /^(\d+)$/, () => 1);
/** Calls per second, spelled as NGINX's `limit_req` spells a rate: `200r/s`, `30r/m`. */
export const rate = measure(
  'a rate such as 200r/s or 30r/m',
  /^(\d+(?:\.\d+)?)r\/(s|m)$/,
  (suffix) => (suffix === 'm' ? 1 / 60 : 1),
  false,
).refine((perSecond) => perSecond > 0, 'must be greater than 0');
/** Byte sizes accept `k`, `m`, `g` suffixes (powers of 1024). */
export const bytes = measure(
  'a size such as 65536, 64k or 64m',
  /^(\d+)([kmg]i?b?)?$/i,
  (suffix) => 1024 ** Math.max(0, ' kmg'.indexOf(suffix.charAt(0) || ' ')),
);

const NON_EMPTY = 'a non-empty string is required';
export const text = z.string(says('a string', NON_EMPTY)).min(1, NON_EMPTY);

/** An absolute http(s) URL. Plain http is accepted because sidecar IdPs are often on loopback. */
export const url = text.refine(
  (value) => ['https:', 'http:'].includes(URL.parse(value)?.protocol ?? ''),
  says('an absolute http(s) URL'),
);

/** An array of non-empty strings, or a space- or comma-separated list (a variable). */
export function list(atLeastOne?: string) {
  const none = atLeastOne && `at least one ${atLeastOne} is required`;
  const listSays = says('an array of non-empty strings', none);
  const items = z.array(z.string().min(1), listSays);
  const words = z.string().transform((raw) => raw.split(/[\s,]+/).filter((word) => word !== ''));
  return z.union([items, words], listSays).pipe(none ? items.min(1, none) : items);
}

/** One of a closed set of words; a problem names them (`a, b or c` unless `say` is given). */
export function oneOf<const T extends readonly [string, ...string[]]>(values: T, say?: string) {
  const words = `${values.slice(0, -1).join(', ')} or ${values.at(-1)}`;
  return z.enum(values, says(say ?? words));
}

/** Only asymmetric JWS algorithms: RFC 8725 §3.1/§3.2, never `none`, never HMAC with a JWKS. */
const ASYMMETRIC = 'RS256 RS384 RS512 PS256 PS384 PS512 ES256 ES384 ES512 EdDSA Ed25519'.split(' ');
export const algorithms = list('algorithm').superRefine((names, ctx) => {
  for (const alg of names.filter((name) => !ASYMMETRIC.includes(name)))
    ctx.addIssue(`"${alg}" is not allowed (asymmetric only: ${ASYMMETRIC.join(', ')})`);
});

/** `true` / `false` (also `on`, `off`, `1`, `0` … as strings, from the environment). */
export const flag = z.union([z.boolean(), z.stringbool()], says('true or false'));

/** `host:port`, `[v6]:port`, `:port` (loopback) or `unix:/path/to.sock` (config/listen.ts). */
export const listen = z.string(says(LISTEN_EXPECTED)).transform((value, ctx) => {
  const parsed = parseListen(value);
  if (!('problem' in parsed)) return parsed;
  ctx.addIssue(parsed.problem);
  return z.NEVER;
});
export { DEFAULT_LISTEN, type Listen };

/**
 * A required JWT `typ` header value, or `false` / `"off"` for none (an issuer that does not
 * follow RFC 9068). The value is compared the way jose does: `application/` prefix optional.
 */
export const typ = z
  .union(
    [z.literal([false, 'off']), z.string().regex(/^[\x21-\x7e]{1,64}$/)],
    says('a media type such as "at+jwt", or "off"'),
  )
  .transform((value) => (value === false || value === 'off' ? undefined : value));

/** A claim name, or `false` / `"off"` for none: an IdP whose access tokens do not carry it. */
export const claimOrOff = z
  .union(
    [z.literal([false, 'off']), z.string().regex(/^[\x21-\x7e]{1,256}$/)],
    says('a claim name, or "off"'),
  )
  .transform((value) => (value === false || value === 'off' ? undefined : value));

/**
 * Claims an access token must carry (`claim`), or carry with a value (`claim=value`); a number
 * claim matches its decimal spelling (`ver=1`).
 */
export const claimRules = list()
  .superRefine((words, ctx) => {
    for (const word of words.filter((item) => item.startsWith('=')))
      ctx.addIssue(`"${word}" names no claim`);
  })
  .transform((words) =>
    words.map((word) => {
      const at = word.indexOf('=');
      return at < 0 ? { claim: word } : { claim: word.slice(0, at), value: word.slice(at + 1) };
    }),
  );
export type ClaimRule = Readonly<z.output<typeof claimRules>[number]>;

/** True for `localhost`, 127.0.0.0/8 and `[::1]`: traffic that never leaves the host. */
export function isLoopbackHost(hostname: string): boolean {
  return /^(?:localhost|\[::1\]|127(?:\.\d{1,3}){3})$/i.test(hostname);
}

/** Plain `http:` is allowed only to loopback, unless the issuer opted in (`allowHttp`). */
export function insecureUrlProblem(url: string, allowHttp: boolean): string | undefined {
  const parsed = URL.parse(url);
  if (parsed?.protocol !== 'http:' || allowHttp || isLoopbackHost(parsed.hostname))
    return undefined;
  return `"${url}" is plain http to a host that is not loopback; use https, or set "allowHttp": true on this issuer`;
}

/** An object of settings that refuses unknown fields (a misspelt one would be ignored). */
export function section<const Shape extends z.core.$ZodLooseShape>(shape: Shape) {
  return z.strictObject(shape, {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `unknown field ${issue.keys.map((key) => `"${key}"`).join(', ')} (known: ${Object.keys(shape).join(', ')})`
        : issue.input === undefined
          ? undefined
          : 'expected an object',
  });
}

/** Reads a file named by the configuration; the one reader, injectable for tests. */
export type FileReader = (path: string) => string;

/** Reports one problem of a deferred value, at the setting or at a field below it. */
export type Fail = (message: string, path?: readonly string[]) => void;

/**
 * What a deferred value may read at start: files through the one reader (a failure is reported
 * as `cannot read "PATH" (ENOENT)`, never with contents), and other variables.
 */
export function createIo(read: FileReader, env: NodeJS.ProcessEnv) {
  return {
    env,
    read(path: string, fail: Fail): string | undefined {
      try {
        return read(path);
      } catch (error) {
        fail(`cannot read "${path}" (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
        return undefined;
      }
    },
  };
}
export type ConfigIo = ReturnType<typeof createIo>;

/**
 * A value that needs a file or a variable to become what the configuration holds (a secret, a
 * key). A kind's transform returns one; the loader runs `load` once the document is validated,
 * so a wrong value reads nothing and `--check-config` checks the files.
 */
export class Deferred<T> {
  constructor(
    readonly load: (io: ConfigIo, fail: Fail) => T,
    /** The value as written (a path, `{ "file": … }`), for rules that compare two settings. */
    readonly written?: unknown,
  ) {}
}

/** A schema's output once every Deferred in it is loaded, read-only all the way down. */
export type Loaded<T> =
  T extends Deferred<infer U>
    ? U
    : T extends readonly (infer E)[]
      ? readonly Loaded<E>[]
      : T extends object
        ? { readonly [K in keyof T]: Loaded<T[K]> }
        : T;

/**
 * An absolute path to a file holding a secret of at least `minBytes`, read once at start (one
 * trailing newline dropped). Only the path is ever in the configuration or the environment; the
 * value is never quoted.
 */
export function secretFile(minBytes: number) {
  return z
    .string(says('an absolute path'))
    .regex(/^\//, says('an absolute path'))
    .transform(
      (path) =>
        new Deferred((io, fail): string => {
          const value = io.read(path, fail)?.replace(/\r?\n$/, '');
          if (value === '') fail(`"${path}" is empty`);
          else if (value !== undefined && Buffer.byteLength(value) < minBytes)
            fail(`"${path}" must hold at least ${minBytes} bytes`);
          return rememberSecret(value ?? '');
        }),
    );
}

/**
 * A secret written inline (`"s3cret"`), or read once at start from `{ "file": "/run/secrets/x" }`
 * (one trailing newline dropped, as `kubectl create secret --from-file` keeps it) or
 * `{ "env": "NAME" }`, which keep the value out of a ConfigMap. `minBytes` holds for the value
 * wherever it comes from; it is never quoted.
 */
export function secret(minBytes = 1) {
  const tooShort = `must be at least ${minBytes} bytes`;
  const short = (value: string) => Buffer.byteLength(value) < minBytes;
  return z
    .union(
      [
        z.string().min(1),
        z.strictObject({ file: z.string().regex(/^\//) }),
        z.strictObject({ env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/) }),
      ],
      says(
        'a non-empty string, { "file": "/absolute/path" } or { "env": "NAME" }',
        'a secret (a string, { "file": PATH } or { "env": NAME }) is required',
      ),
    )
    .superRefine((raw, ctx) => {
      if (typeof raw === 'string' && short(raw)) ctx.addIssue(tooShort);
      if (typeof raw === 'object' && 'env' in raw && raw.env.startsWith('VERIFIER_'))
        ctx.addIssue(`"${raw.env}": choose a variable name outside the VERIFIER_ prefix`);
    })
    .transform(
      (raw) =>
        new Deferred((io, fail): string => {
          if (typeof raw === 'string') return rememberSecret(raw);
          const fromEnv = 'env' in raw;
          const value = fromEnv ? io.env[raw.env] : io.read(raw.file, fail)?.replace(/\r?\n$/, '');
          if (value === '' || (fromEnv && value === undefined))
            fail(fromEnv ? `variable ${raw.env} is not set` : `"${raw.file}" is empty`);
          else if (value !== undefined && short(value)) fail(tooShort);
          return rememberSecret(value ?? '');
        }, raw),
    );
}

/**
 * `value` with every Deferred in it loaded (after the whole document validated) and frozen on the
 * way; class instances, such as a loaded key, as they are. `fail` gets the path below `value`.
 */
export function loadDeferred<T>(
  value: T,
  io: ConfigIo,
  fail: (message: string, path: readonly PropertyKey[]) => void,
  at: readonly PropertyKey[] = [],
): T {
  if (value instanceof Deferred)
    return loadDeferred(
      value.load(io, (why, path = []) => fail(why, [...at, ...path])) as T,
      io,
      fail,
      at,
    );
  if (Array.isArray(value))
    return Object.freeze(
      value.map((item: unknown, i) => loadDeferred(item, io, fail, [...at, i])),
    ) as T;
  if (
    typeof value !== 'object' ||
    value === null ||
    Object.getPrototypeOf(value) !== Object.prototype
  )
    return value;
  const entries = Object.entries(value).map(([key, item]): [string, unknown] => [
    key,
    loadDeferred<unknown>(item, io, fail, [...at, key]),
  ]);
  return Object.freeze(Object.fromEntries(entries)) as T;
}

// The kinds of value a setting can hold, each a small parser that returns a value or pushes one
// human-readable problem naming where the value sits, so a whole configuration is reported at once.
// Values arrive as JSON (the file) or as strings (environment variables, converted by config-env).

export type Problems = string[];

/** How one setting's value is read. `fromEnv` turns an environment string into document form. */
export interface Kind<T> {
  parse(raw: unknown, where: string, problems: Problems): T;
  readonly fromEnv?: (text: string) => unknown;
  /** Said after "expected" when a required value is missing. */
  readonly missing?: string;
}

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/;
const UNIT_SECONDS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600 };

/** `30`, `30s`, `10m`, `24h`, `500ms` → seconds. Plain numbers are seconds. */
export const duration: Kind<number> = {
  parse(raw, where, problems) {
    if (typeof raw === 'number') {
      if (Number.isFinite(raw) && raw >= 0) return raw;
      problems.push(`${where}: expected a non-negative number of seconds, got ${String(raw)}`);
      return 0;
    }
    if (typeof raw !== 'string') {
      problems.push(`${where}: expected seconds or a duration string`);
      return 0;
    }
    const match = DURATION.exec(raw.trim());
    if (!match) {
      problems.push(`${where}: expected a duration such as 30, 30s, 10m or 24h, got "${raw}"`);
      return 0;
    }
    return Number(match[1]) * (UNIT_SECONDS[match[2] ?? 's'] ?? 1);
  },
};

/** A positive integer, e.g. a cache size. */
export const count: Kind<number> = {
  parse(raw, where, problems) {
    const value =
      typeof raw === 'number'
        ? raw
        : typeof raw === 'string' && /^\d+$/.test(raw.trim())
          ? Number(raw)
          : NaN;
    if (Number.isSafeInteger(value) && value > 0) return value;
    problems.push(`${where}: expected a positive integer, got "${String(raw)}"`);
    return 1;
  },
};

/** Byte sizes accept `k`, `m`, `g` suffixes (powers of 1024). */
export const bytes: Kind<number> = {
  parse(raw, where, problems) {
    if (typeof raw !== 'string') return count.parse(raw, where, problems);
    const match = /^(\d+)([kmg]i?b?)?$/i.exec(raw.trim());
    if (!match) {
      problems.push(`${where}: expected a size such as 65536, 64k or 64m, got "${raw}"`);
      return 1;
    }
    const unit = (match[2] ?? '').charAt(0).toLowerCase();
    const factor = unit === 'k' ? 1024 : unit === 'm' ? 1024 ** 2 : unit === 'g' ? 1024 ** 3 : 1;
    return count.parse(Number(match[1]) * factor, where, problems);
  },
};

/** A non-empty string. */
export const text: Kind<string> = {
  missing: 'a non-empty string is required',
  parse(raw, where, problems) {
    if (typeof raw === 'string' && raw.length > 0) return raw;
    problems.push(`${where}: a non-empty string is required`);
    return '';
  },
};

/** An absolute http(s) URL. Plain http is accepted because sidecar IdPs are often on loopback. */
export const url: Kind<string> = {
  missing: text.missing,
  parse(raw, where, problems) {
    const value = text.parse(raw, where, problems);
    if (value === '') return value;
    try {
      const parsed = new URL(value);
      if (parsed.protocol === 'https:' || parsed.protocol === 'http:') return value;
    } catch {
      // reported below
    }
    problems.push(`${where}: expected an absolute http(s) URL, got "${value}"`);
    return value;
  },
};

/** Space- or comma-separated words, empty entries dropped. */
export function splitList(raw: string): string[] {
  return raw.split(/[\s,]+/).filter((word) => word.length > 0);
}

/**
 * An array of non-empty strings (a space- or comma-separated list in an environment variable).
 * `atLeastOne` names what must be present, e.g. "claim name".
 */
export function list(atLeastOne?: string): Kind<readonly string[]> {
  return {
    fromEnv: splitList,
    missing: atLeastOne && `at least one ${atLeastOne} is required`,
    parse(raw, where, problems) {
      if (!Array.isArray(raw) || !raw.every((item) => typeof item === 'string' && item !== '')) {
        problems.push(`${where}: expected an array of non-empty strings`);
        return [];
      }
      if (atLeastOne !== undefined && raw.length === 0)
        problems.push(`${where}: at least one ${atLeastOne} is required`);
      return raw as string[];
    },
  };
}

/** One of a closed set of words. */
export function oneOf<T extends string>(values: readonly T[], say = values.join(', ')): Kind<T> {
  return {
    parse(raw, where, problems) {
      if (typeof raw === 'string' && (values as readonly string[]).includes(raw)) return raw as T;
      problems.push(`${where}: expected ${say}, got "${String(raw)}"`);
      return values[0]!;
    },
  };
}

/** Only asymmetric JWS algorithms: RFC 8725 §3.1/§3.2, never `none`, never HMAC with a JWKS. */
export const ASYMMETRIC_ALGORITHMS: ReadonlySet<string> = new Set([
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
]);

const anyAlgorithms = list('algorithm');

export const algorithms: Kind<readonly string[]> = {
  ...anyAlgorithms,
  parse(raw, where, problems) {
    const parsed = anyAlgorithms.parse(raw, where, problems);
    for (const alg of parsed) {
      if (!ASYMMETRIC_ALGORITHMS.has(alg)) {
        problems.push(
          `${where}: "${alg}" is not allowed (asymmetric only: ${[...ASYMMETRIC_ALGORITHMS].join(', ')})`,
        );
      }
    }
    return parsed;
  },
};

export type Listen =
  | { readonly kind: 'tcp'; readonly host: string; readonly port: number }
  | { readonly kind: 'unix'; readonly path: string };

/** `host:port`, `[v6]:port`, `:port` (loopback) or `unix:/path/to.sock`. */
export const listen: Kind<Listen> = {
  parse(raw, where, problems) {
    const value = typeof raw === 'string' ? raw : '';
    if (value.startsWith('unix:')) {
      const path = value.slice('unix:'.length);
      if (!path.startsWith('/'))
        problems.push(`${where}: unix socket path must be absolute, got "${path}"`);
      return { kind: 'unix', path };
    }
    const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(value);
    const port = Number(match?.[3]);
    if (!match || port < 1 || port > 65535) {
      problems.push(`${where}: expected host:port or unix:/path, got "${String(raw)}"`);
      return { kind: 'tcp', host: '127.0.0.1', port: 8090 };
    }
    return { kind: 'tcp', host: match[1] ?? (match[2] || '127.0.0.1'), port };
  },
};

/** Reads a file named by the configuration; the one reader, injectable for tests. */
export type FileReader = (path: string) => string;

/**
 * A section a plugin declares for itself (e.g. a policy's `cloudfront` block): it validates its own
 * fields with no I/O, then `load` reads the files they name through the one reader. `load` runs
 * only when `parse` found no problem, after the whole document has been validated.
 */
export interface PluginSection<Settings, Loaded> {
  readonly kind: Kind<Settings | undefined>;
  readonly load: (
    settings: Settings,
    where: string,
    read: FileReader,
    problems: Problems,
  ) => Loaded | undefined;
  /** Field, default and meaning of each setting, for the configuration reference. */
  readonly reference: readonly SettingReference[];
}

/** One row of the configuration reference. */
export interface SettingReference {
  readonly path: string;
  readonly env: string | undefined;
  /** As an operator would write it; undefined: required or off. */
  readonly default: string | undefined;
  readonly doc: string;
}

/** `true` / `false` (also the strings `true`, `false`, `on`, `off`, `1`, `0` from the environment). */
export const flag: Kind<boolean> = {
  parse(raw, where, problems) {
    if (typeof raw === 'boolean') return raw;
    if (typeof raw === 'string') {
      const word = raw.trim().toLowerCase();
      if (['true', 'on', '1'].includes(word)) return true;
      if (['false', 'off', '0'].includes(word)) return false;
    }
    problems.push(`${where}: expected true or false, got "${String(raw)}"`);
    return false;
  },
};

/**
 * A required JWT `typ` header value, or `false` / `"off"` for none (an issuer that does not
 * follow RFC 9068). The value is compared the way jose does: `application/` prefix optional.
 */
export const typ: Kind<string | undefined> = {
  parse(raw, where, problems) {
    if (raw === false || raw === 'off') return undefined;
    if (typeof raw === 'string' && /^[\x21-\x7e]{1,64}$/.test(raw)) return raw;
    problems.push(
      `${where}: expected a media type such as "at+jwt", or "off", got "${String(raw)}"`,
    );
    return undefined;
  },
};

/** Where a credential comes from: inline, a file (a mounted Kubernetes Secret) or a variable. */
export type SecretSource =
  | { readonly from: 'inline'; readonly value: string }
  | { readonly from: 'file'; readonly path: string }
  | { readonly from: 'env'; readonly name: string };

const SECRET_ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/**
 * A secret written inline (`"s3cret"`), or read at start from `{ "file": "/run/secrets/x" }` or
 * `{ "env": "NAME" }`. The file and variable forms keep the value out of a ConfigMap.
 */
export const secretSource: Kind<SecretSource> = {
  missing: 'a secret (a string, { "file": PATH } or { "env": NAME }) is required',
  parse(raw, where, problems) {
    if (typeof raw === 'string' && raw.length > 0) return { from: 'inline', value: raw };
    if (typeof raw === 'object' && raw !== null && !Array.isArray(raw)) {
      const fields = Object.keys(raw);
      const { file, env } = raw as Record<string, unknown>;
      if (fields.length === 1 && typeof file === 'string' && file.startsWith('/'))
        return { from: 'file', path: file };
      if (fields.length === 1 && typeof env === 'string' && SECRET_ENV_NAME.test(env)) {
        if (env.startsWith('VERIFIER_'))
          problems.push(`${where}: "${env}": choose a variable name outside the VERIFIER_ prefix`);
        return { from: 'env', name: env };
      }
    }
    problems.push(
      `${where}: expected a non-empty string, { "file": "/absolute/path" } or { "env": "NAME" }`,
    );
    return { from: 'inline', value: '' };
  },
};

/**
 * Reads a secret's value once, at start. Never quotes the value in a problem; a file's trailing
 * newline (as `kubectl create secret --from-file` keeps it) is dropped.
 */
export function readSecret(
  source: SecretSource,
  where: string,
  read: FileReader,
  env: NodeJS.ProcessEnv,
  problems: Problems,
): string {
  if (source.from === 'inline') return source.value;
  let value: string | undefined;
  if (source.from === 'env') {
    value = env[source.name];
    if (value === undefined || value === '')
      problems.push(`${where}: variable ${source.name} is not set`);
  } else {
    try {
      value = read(source.path).replace(/\r?\n$/, '');
    } catch (error) {
      problems.push(
        `${where}: cannot read "${source.path}" (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
    if (value === '') problems.push(`${where}: "${source.path}" is empty`);
  }
  return value ?? '';
}

const LOOPBACK_HOSTS = new Set(['localhost', '[::1]']);

/** True for `localhost`, 127.0.0.0/8 and `[::1]`: traffic that never leaves the host. */
export function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK_HOSTS.has(hostname.toLowerCase()) || /^127(?:\.\d{1,3}){3}$/.test(hostname);
}

/** Plain `http:` is allowed only to loopback, unless the issuer opted in (`allowHttp`). */
export function insecureUrlProblem(url: string, allowHttp: boolean): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (parsed.protocol !== 'http:' || allowHttp || isLoopbackHost(parsed.hostname)) return undefined;
  return `"${url}" is plain http to a host that is not loopback; use https, or set "allowHttp": true on this issuer`;
}

// Small parsers shared by the env and file config readers. Each returns a value or pushes one
// human-readable problem, so every mistake in a configuration is reported in one message.

export type Problems = string[];

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/;
const UNIT_SECONDS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600 };

/** `30`, `30s`, `10m`, `24h`, `500ms` → seconds. Plain numbers are seconds. */
export function parseDuration(name: string, raw: string | number, problems: Problems): number {
  if (typeof raw === 'number') {
    if (Number.isFinite(raw) && raw >= 0) return raw;
    problems.push(`${name}: expected a non-negative number of seconds, got ${String(raw)}`);
    return 0;
  }
  const match = DURATION.exec(raw.trim());
  if (!match) {
    problems.push(`${name}: expected a duration such as 30, 30s, 10m or 24h, got "${raw}"`);
    return 0;
  }
  return Number(match[1]) * (UNIT_SECONDS[match[2] ?? 's'] ?? 1);
}

/** A positive integer, e.g. a cache size. */
export function parseCount(name: string, raw: string | number, problems: Problems): number {
  const value = typeof raw === 'number' ? raw : /^\d+$/.test(raw.trim()) ? Number(raw) : NaN;
  if (Number.isSafeInteger(value) && value > 0) return value;
  problems.push(`${name}: expected a positive integer, got "${String(raw)}"`);
  return 1;
}

/** Byte sizes accept `k`, `m`, `g` suffixes (powers of 1024). */
export function parseBytes(name: string, raw: string | number, problems: Problems): number {
  if (typeof raw === 'number') return parseCount(name, raw, problems);
  const match = /^(\d+)([kmg]i?b?)?$/i.exec(raw.trim());
  if (!match) {
    problems.push(`${name}: expected a size such as 65536, 64k or 64m, got "${raw}"`);
    return 1;
  }
  const unit = (match[2] ?? '').charAt(0).toLowerCase();
  const factor = unit === 'k' ? 1024 : unit === 'm' ? 1024 ** 2 : unit === 'g' ? 1024 ** 3 : 1;
  return parseCount(name, Number(match[1]) * factor, problems);
}

/** An absolute http(s) URL. Plain http is accepted because sidecar IdPs are often on loopback. */
export function parseUrl(name: string, raw: string, problems: Problems): string {
  try {
    const url = new URL(raw);
    if (url.protocol === 'https:' || url.protocol === 'http:') return raw;
  } catch {
    // reported below
  }
  problems.push(`${name}: expected an absolute http(s) URL, got "${raw}"`);
  return raw;
}

/** Space- or comma-separated words, empty entries dropped. */
export function parseList(raw: string): string[] {
  return raw.split(/[\s,]+/).filter((word) => word.length > 0);
}

/** A policy's DPoP mode: `off`, `allowed` or `required`. */
export function parseDpopMode(
  name: string,
  raw: unknown,
  problems: Problems,
): 'off' | 'allowed' | 'required' {
  if (raw === 'off' || raw === 'allowed' || raw === 'required') return raw;
  problems.push(`${name}: expected off, allowed or required, got "${String(raw)}"`);
  return 'off';
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

export function parseAlgorithms(
  name: string,
  raw: string | string[],
  problems: Problems,
): string[] {
  const algorithms = Array.isArray(raw) ? raw : parseList(raw);
  if (algorithms.length === 0) problems.push(`${name}: at least one algorithm is required`);
  for (const alg of algorithms) {
    if (!ASYMMETRIC_ALGORITHMS.has(alg)) {
      problems.push(
        `${name}: "${alg}" is not allowed (asymmetric only: ${[...ASYMMETRIC_ALGORITHMS].join(', ')})`,
      );
    }
  }
  return algorithms;
}

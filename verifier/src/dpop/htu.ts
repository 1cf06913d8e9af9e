// The `htu` comparison of RFC 9449 §4.3: the proof's URL and the one NGINX received (rebuilt from
// the configured external origin and the original path) both through the WHATWG URL parser, the
// syntax- and scheme-based normalisation §4.3 asks for; query and fragment are ignored.
import { LRUCache } from 'lru-cache';

/**
 * Normalised URLs by raw input ('' for "not an absolute http(s) URL"): a client's proofs name the
 * same URL and every request rebuilds the same external one, so a repeat skips the parser.
 */
const normalized = new LRUCache<string, string>({ max: 1024 });

/** `scheme://host[:port]/path` of `raw`, or undefined when it is not an absolute http(s) URL. */
export function normalizeHtu(raw: string): string | undefined {
  let result = normalized.get(raw);
  if (result === undefined) normalized.set(raw, (result = parseHtu(raw) ?? ''));
  return result === '' ? undefined : result;
}

function parseHtu(raw: string): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined;
  if (url.username !== '' || url.password !== '') return undefined;
  return `${url.protocol}//${url.host}${url.pathname}`;
}

/**
 * The external URL of the original request: `origin` is the gate's configured public origin
 * (never a client header), `path` the raw path NGINX saw (no query). Undefined when either is
 * missing or unusable, which fails every proof.
 */
export function externalUrl(
  origin: string | undefined,
  path: string | undefined,
): string | undefined {
  if (origin === undefined || path === undefined || !path.startsWith('/')) return undefined;
  // `//host/x` as a path would change the authority once joined.
  if (path.startsWith('//')) return undefined;
  return normalizeHtu(`${origin.replace(/\/+$/, '')}${path}`);
}

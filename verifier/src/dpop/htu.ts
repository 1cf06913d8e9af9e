// The `htu` comparison of RFC 9449 §4.3: the proof's URL and the one NGINX received (rebuilt from
// the configured external origin and the original path) both through the WHATWG URL parser, the
// syntax- and scheme-based normalisation §4.3 asks for; query and fragment are ignored.
import { LRUCache } from 'lru-cache';

/** Normalised URLs by raw input ('' for none): a URL seen before skips the parser. */
const normalized = new LRUCache<string, string>({ max: 1024 });

/** `scheme://host[:port]/path` of `raw`, or undefined when it is not an absolute http(s) URL. */
export function normalizeHtu(raw: string): string | undefined {
  let result = normalized.get(raw);
  if (result === undefined) {
    const url = URL.canParse(raw) ? new URL(raw) : undefined;
    const usable =
      (url?.protocol === 'https:' || url?.protocol === 'http:') &&
      url.username === '' &&
      url.password === '';
    normalized.set(raw, (result = usable ? `${url.protocol}//${url.host}${url.pathname}` : ''));
  }
  return result === '' ? undefined : result;
}

/**
 * The external URL of the original request from the configured public origin (never a client
 * header) and the raw path NGINX saw (no query); undefined, failing every proof, when unusable.
 */
export function externalUrl(origin: string | undefined, path: string | undefined) {
  // `//host/x` as a path would change the authority once joined.
  if (origin === undefined || !path?.startsWith('/') || path.startsWith('//')) return undefined;
  return normalizeHtu(`${origin.replace(/\/+$/, '')}${path}`);
}

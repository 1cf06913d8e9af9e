// The original request path as the log writes it. A client writes the raw URI as it likes: up to
// 16 KB, and it may hide a token (`/secret%3Faccess_token=…`, `/<token>/../secret` that NGINX still
// matches as /secret). Kept: what comes before a `?` or `#` (encoded or not) or a run of 32 token
// characters (a JWT's header alone is longer), at most 200 characters; the rule of NGINX's access
// log too (nginx/templates/snippets/access-log.conf.template).

const CUT = /%3f|%23|[?#]|[A-Za-z0-9_~+=-]{32}/i;
const LONGEST = 200;

/** The bounded, path-only form of X-Original-URI for a log line; `[cut]` marks a cut. */
export function loggablePath(uri: string | undefined): string | undefined {
  if (uri === undefined) return undefined;
  // A token run that starts before the limit is still found; anything later is cut anyway.
  const head = uri.slice(0, LONGEST + 32);
  const kept = head.slice(0, Math.min(CUT.exec(head)?.index ?? LONGEST, LONGEST));
  return kept.length < uri.length ? `${kept}[cut]` : kept;
}

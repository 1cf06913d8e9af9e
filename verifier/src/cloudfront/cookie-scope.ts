// Where and until when a CloudFront cookie applies, derived so that it never reaches further than
// what earned it: its expiry never passes the access token's, its Path is the resource's.

/**
 * Widest expiry bucket: every allowed request inside one bucket gets the same policy (so one
 * signature serves them all). A quarter of the TTL at most, so a cookie lives at least ¾ of it.
 */
const MAX_BUCKET_SECONDS = 300;

export function bucketFor(ttlSeconds: number): number {
  return Math.min(MAX_BUCKET_SECONDS, Math.floor(ttlSeconds / 4));
}

/**
 * The cookie's expiry: `now + ttl`, but never after `tokenExp`, rounded *down* to the bucket so
 * the rounding can only shorten it. When rounding down would leave nothing (the token ends inside
 * the current bucket), the exact bound is used. Undefined when less than a second is left.
 */
export function cookieExpiry(
  nowSeconds: number,
  ttlSeconds: number,
  tokenExp: number,
  bucketSeconds: number,
): number | undefined {
  const now = Math.floor(nowSeconds);
  const limit = Math.floor(Math.min(now + ttlSeconds, tokenExp));
  if (limit <= now) return undefined;
  if (bucketSeconds <= 1) return limit;
  const bucketed = Math.floor(limit / bucketSeconds) * bucketSeconds;
  return bucketed > now ? bucketed : limit;
}

// RFC 6265 §4.1.1 path-value: no CTLs and no `;`. Stricter here: only the characters a
// percent-encoded URL path uses, so the value can never add a cookie attribute.
const NOT_PATH_CHARACTER = /[^A-Za-z0-9\-._~!$&'()+,=:@%/]/;

/**
 * The cookie `Path` for a custom-policy resource: its path up to the first wildcard, cut back to
 * the last `/`, so the browser sends the cookies only with requests the policy can allow
 * (`https://cdn.example.com/private/*` → `/private/`; a resource without wildcards → its path).
 * A path a cookie cannot carry is cut back to the last `/` before the offending character.
 */
export function cookiePath(resource: string): string {
  const afterScheme = resource.indexOf('://');
  const slash = resource.indexOf('/', afterScheme + 3);
  if (afterScheme === -1 || slash === -1) return '/';
  const path = resource.slice(slash);
  const wildcard = path.search(/[*?]/);
  let cut = wildcard === -1 ? path : path.slice(0, path.lastIndexOf('/', wildcard) + 1);
  const bad = cut.search(NOT_PATH_CHARACTER);
  if (bad !== -1) cut = cut.slice(0, cut.lastIndexOf('/', bad) + 1);
  return cut === '' ? '/' : cut;
}

/**
 * True when a browser will send a cookie with `Domain=domain` to `host` (RFC 6265 §5.1.3):
 * the same host, or a subdomain of it.
 */
export function domainCovers(domain: string, host: string): boolean {
  const d = domain.replace(/^\./, '').toLowerCase();
  const h = host.toLowerCase();
  return h === d || h.endsWith(`.${d}`);
}

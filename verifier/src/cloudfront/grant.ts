// The CloudFront grant plugin: on an allow, the signed cookies as `X-Auth-CF-*` headers for NGINX
// to add to /secret (docs/architecture.md); the core passes them on unread.
import { createCloudFrontSigner, type SignedCookies } from '@secret-gate/cloudfront-signer';
import type { Grant, Header } from '../decision/decision.js';
import type { Logger } from '../log.js';
import type { CloudFrontGateConfig } from '../config/cloudfront.js';
import { traceWork } from '../tracing/work-channel.js';

/** The answer headers this plugin renders (docs/architecture.md's /verify table). */
export const CLOUDFRONT_HEADERS = [
  {
    name: 'X-Auth-CF-Policy, X-Auth-CF-Signature, X-Auth-CF-Key-Pair-Id, X-Auth-CF-Hash-Algorithm',
    on: '204, policies with `cloudfront`',
    meaning:
      "each signed CloudFront cookie as a complete `Set-Cookie` value (`Secure; HttpOnly; SameSite=Lax`, the resource's `Path`, the configured `Domain`, an `Expires` never past the token's `exp`); the hash one only for SHA-256 keys. NGINX adds them to /secret as they are (`SG_CLOUDFRONT_COOKIES=on`)",
  },
] as const;

// RFC 6265 §4.1.1 path-value: no CTLs and no `;`. Stricter here: only the characters a
// percent-encoded URL path uses (no wildcard), so the value can never add a cookie attribute.
const NOT_PATH_CHARACTER = /[^A-Za-z0-9\-._~!$&'()+,=:@%/]/;

/**
 * The cookie `Path` for a custom-policy resource: its path cut back to the last `/` before the
 * first wildcard (or character a cookie cannot carry), so the cookies go only with requests the
 * policy can allow (`https://cdn.example.com/private/*` → `/private/`; no wildcard → its path).
 */
export function cookiePath(resource: string): string {
  const path = /^[^:]*:\/\/[^/]*(.*)$/.exec(resource)?.[1] || '/';
  const stop = path.search(NOT_PATH_CHARACTER);
  return stop === -1 ? path : path.slice(0, path.lastIndexOf('/', stop) + 1);
}

/**
 * One `X-Auth-CF-*` header per signed cookie, a complete `Set-Cookie` value NGINX adds as it is:
 * every part was produced or checked here (CloudFront's base64, the domain, a URL path).
 */
export function cloudFrontHeaders(signed: SignedCookies, path: string, domain?: string): Header[] {
  const attributes =
    `; Secure; HttpOnly; SameSite=Lax; Path=${path}` +
    (domain === undefined ? '' : `; Domain=${domain}`) +
    `; Expires=${new Date(signed.expires * 1000).toUTCString()}`;
  return Object.entries(signed.cookies).map(([name, value]) => [
    name.replace(/^CloudFront-/, 'X-Auth-CF-'),
    `${name}=${value}${attributes}`,
  ]);
}

/**
 * The grant of a policy with a `cloudfront` section. No subject goes into the policy (CloudFront's
 * names no viewer), so all users of a gate policy share a bucket's cookies: one signature each.
 * Signing trouble never turns an authenticated user away: it is logged and the allow goes out
 * without cookies (the assets just stay locked).
 */
export function createCloudFrontGrant(config: CloudFrontGateConfig, logger: Logger): Grant {
  // No `bucketSeconds`: the signer's rounds up, so the expiry is bucketed down below instead.
  const ready = createCloudFrontSigner({ ...config, cacheSize: 64 });
  // Failure is reported to every caller below; this only keeps it from being "unhandled" meanwhile.
  ready.catch(() => undefined);
  // A quarter of the TTL at most, so a cookie lives at least ¾ of it (when the token allows).
  const bucket = Math.min(300, Math.floor(config.ttlSeconds / 4));
  const path = cookiePath(config.resource);

  return async function cloudFrontGrant(nowSeconds, exp) {
    try {
      const signer = await ready;
      const now = Math.floor(nowSeconds);
      // `now + ttl`, never past `exp`, rounded *down* to the bucket so rounding only shortens it;
      // the exact bound when the token ends inside this bucket; nothing with under a second left.
      const limit = Math.floor(Math.min(now + config.ttlSeconds, exp));
      if (limit <= now) return [];
      const bucketed = Math.floor(limit / bucket) * bucket;
      const expires = bucket > 1 && bucketed > now ? bucketed : limit;
      // The span names the key pair and the hash, never the policy document or a signature.
      const signed = await traceWork(
        {
          name: 'cloudfront.sign',
          attributes: {
            'secret_gate.cloudfront.key_pair_id': config.keyPairId,
            'secret_gate.cloudfront.expires': expires,
          },
        },
        () => signer.signCookies({ resource: config.resource, expires, now }),
      );
      return cloudFrontHeaders(signed, path, config.cookieDomain);
    } catch (error) {
      logger.error({ err: (error as Error).message }, 'CloudFront signing failed');
      return [];
    }
  };
}

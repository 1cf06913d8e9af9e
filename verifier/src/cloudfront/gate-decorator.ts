// The verifier's CloudFront step, a policy's grant plugin: on an allowed request, the signed
// cookies as complete `Set-Cookie` values in `X-Auth-CF-*` headers, which NGINX adds to /secret
// (docs/architecture.md); the core passes them on unread.
import { createCloudFrontSigner, type CloudFrontSigner } from '@secret-gate/cloudfront-signer';
import type { Header } from '../decision/decision.js';
import type { Grant } from '../decision/plugins.js';
import type { Logger } from '../log.js';
import { bucketFor, cookieExpiry, cookiePath } from './cookie-scope.js';
import type { CloudFrontGateConfig } from './gate-config.js';

/** Signed CloudFront cookies handed out with an allow, as plain data. */
export interface CloudFrontCookieGrant {
  readonly kind: 'cloudfront-cookies';
  readonly keyPairId: string;
  readonly policy: string;
  readonly signature: string;
  /** Seconds since the epoch. */
  readonly expires: number;
  /** True for SHA-256 signatures (`CloudFront-Hash-Algorithm: SHA256`). */
  readonly sha256: boolean;
  readonly cookieDomain: string | undefined;
  /** The cookies' `Path`: the resource's path up to its first wildcard. */
  readonly path: string;
}

/**
 * The grant for an allow at `nowSeconds` whose token expires at `tokenExp`; undefined when the
 * token has less than a second left (a cookie that expires as it is set is no use).
 */
export type CloudFrontDecorator = (
  nowSeconds: number,
  tokenExp: number,
) => Promise<CloudFrontCookieGrant | undefined>;

/**
 * Starts the one WebCrypto import of the already checked key and returns the per-request
 * function. Expiries are bucketed *down* and never pass the token's `exp`, so a cookie never
 * outlives the access that earned it, and every allowed request whose token outlives the window
 * gets the same cookies from the signer's cache (only the first pays for a signature).
 *
 * No subject goes into the policy: a CloudFront policy has no field that names a viewer, so all
 * users of one gate policy share the cookies of a window. That is what lets one signature per
 * window serve everyone, and why the cookie TTL should stay short.
 */
export function createCloudFrontDecorator(config: CloudFrontGateConfig): CloudFrontDecorator {
  const ready: Promise<CloudFrontSigner> = createCloudFrontSigner({
    keyPairId: config.keyPairId,
    privateKey: config.privateKey,
    algorithm: config.algorithm,
    // The expiry is bucketed (downwards) here, before the signer, which would round up.
    bucketSeconds: 0,
    cacheSize: 64,
  });
  const bucket = bucketFor(config.ttlSeconds);
  const path = cookiePath(config.resource);
  // Failure is reported to every caller below; this only keeps it from being "unhandled" meanwhile.
  ready.catch(() => undefined);

  return async function cloudFrontCookies(nowSeconds, tokenExp) {
    const signer = await ready;
    const now = Math.floor(nowSeconds);
    const until = cookieExpiry(now, config.ttlSeconds, tokenExp, bucket);
    if (until === undefined) return undefined;
    const { cookies, expires } = await signer.signCookies({
      resource: config.resource,
      expires: until,
      now,
    });
    return {
      kind: 'cloudfront-cookies',
      keyPairId: config.keyPairId,
      policy: cookies['CloudFront-Policy'],
      signature: cookies['CloudFront-Signature'],
      expires,
      sha256: config.algorithm !== 'RSA-SHA1',
      cookieDomain: config.cookieDomain,
      path,
    };
  };
}

/**
 * The grant a policy with a `cloudfront` section hands out. Signing trouble never turns an
 * authenticated user away: it is logged and the allow goes out without cookies (the assets just
 * stay locked).
 */
export function createCloudFrontGrant(config: CloudFrontGateConfig, logger: Logger): Grant {
  const cookies = createCloudFrontDecorator(config);
  return async function cloudFrontGrant(nowSeconds, exp) {
    try {
      const grant = await cookies(nowSeconds, exp);
      return grant === undefined ? [] : cloudFrontHeaders(grant);
    } catch (error) {
      logger.error({ err: (error as Error).message }, 'CloudFront signing failed');
      return [];
    }
  };
}

/** The answer headers this plugin renders (docs/architecture.md's /verify table). */
export const CLOUDFRONT_HEADERS = [
  {
    name: 'X-Auth-CF-Policy, X-Auth-CF-Signature, X-Auth-CF-Key-Pair-Id, X-Auth-CF-Hash-Algorithm',
    on: '204, policies with `cloudfront`',
    meaning:
      "each signed CloudFront cookie as a complete `Set-Cookie` value (`Secure; HttpOnly; SameSite=Lax`, the resource's `Path`, the configured `Domain`, an `Expires` never past the token's `exp`); the hash one only for SHA-256 keys. NGINX adds them to /secret as they are (`SG_CLOUDFRONT_COOKIES=on`)",
  },
] as const;

/**
 * The CloudFront grant as complete `Set-Cookie` values, one header per cookie, which NGINX adds
 * to the allowed /secret answer as they are (`add_header Set-Cookie`). Built here, where every
 * part was produced or checked (CloudFront's base64 alphabet, the configured domain, a path of
 * URL characters), so NGINX needs no code to assemble or check them.
 */
export function cloudFrontHeaders(grant: CloudFrontCookieGrant): Header[] {
  const attributes =
    `; Secure; HttpOnly; SameSite=Lax; Path=${grant.path}` +
    (grant.cookieDomain === undefined ? '' : `; Domain=${grant.cookieDomain}`) +
    `; Expires=${new Date(grant.expires * 1000).toUTCString()}`;
  return [
    ['X-Auth-CF-Policy', `CloudFront-Policy=${grant.policy}${attributes}`],
    ['X-Auth-CF-Signature', `CloudFront-Signature=${grant.signature}${attributes}`],
    ['X-Auth-CF-Key-Pair-Id', `CloudFront-Key-Pair-Id=${grant.keyPairId}${attributes}`],
    ...(grant.sha256
      ? [['X-Auth-CF-Hash-Algorithm', `CloudFront-Hash-Algorithm=SHA256${attributes}`] as const]
      : []),
  ];
}

// The verifier's CloudFront step: on an allowed request, the signed-cookie values as a grant that
// the transport renders as headers NGINX turns into Set-Cookie on /secret (docs/architecture.md).
// Expiries are bucketed *down* and never pass the token's `exp`, so a cookie never outlives the
// access that earned it, and every allowed request whose token outlives the window gets the same
// cookies from the signer's cache (only the first pays for a signature).

import { createCloudFrontSigner, type CloudFrontSigner } from '@secret-gate/cloudfront-signer';
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
 * function.
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

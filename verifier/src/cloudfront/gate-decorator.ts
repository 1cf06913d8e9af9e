// The verifier's CloudFront step: on an allowed request, the signed-cookie values as a grant that
// the transport renders as headers NGINX turns into Set-Cookie on /secret (docs/architecture.md).
// Expiries are bucketed, so every allowed request inside one window gets the same cookies from the
// signer's cache and only the first pays for a signature.

import type { CloudFrontGateConfig } from './gate-config.js';
import { createCloudFrontSigner, type CloudFrontSigner } from './signer.js';

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
}

export type CloudFrontDecorator = (nowSeconds: number) => Promise<CloudFrontCookieGrant>;

/** Widest bucket; narrower when the TTL is shorter, so a cookie lives at most twice its TTL. */
const MAX_BUCKET_SECONDS = 300;

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
    bucketSeconds: Math.min(MAX_BUCKET_SECONDS, config.ttlSeconds),
    cacheSize: 16,
  });
  // Failure is reported to every caller below; this only keeps it from being "unhandled" meanwhile.
  ready.catch(() => undefined);

  return async function cloudFrontCookies(nowSeconds) {
    const signer = await ready;
    const now = Math.floor(nowSeconds);
    const { cookies, expires } = await signer.signCookies({
      resource: config.resource,
      expires: now + config.ttlSeconds,
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
    };
  };
}

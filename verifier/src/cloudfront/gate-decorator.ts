// The verifier's CloudFront step: on an allowed request, the signed-cookie values as response
// headers that NGINX turns into Set-Cookie on /secret (see docs/architecture.md).
// Expiries are bucketed, so every allowed request inside one window gets the same cookies from the
// signer's cache and only the first pays for a signature.

import { readFileSync } from 'node:fs';
import type { CloudFrontGateConfig } from './gate-config.js';
import { readPrivateKey } from './signing-key.js';
import { createCloudFrontSigner, type CloudFrontSigner } from './signer.js';

/** Header name → value, ready for the 204 answer of `/verify`. */
export type CloudFrontHeaders = Record<string, string>;

export type CloudFrontDecorator = (sub: string, nowSeconds: number) => Promise<CloudFrontHeaders>;

/** Widest bucket; narrower when the TTL is shorter, so a cookie lives at most twice its TTL. */
const MAX_BUCKET_SECONDS = 300;

/**
 * Reads and checks the key synchronously (TypeError at start-up, never at request time), starts
 * the one WebCrypto import, and returns the per-request function.
 *
 * `sub` is not written into the policy: a CloudFront policy has no field that names a viewer, so
 * all users of one gate policy share the cookies of a window. That is what lets one signature
 * per window serve everyone, and why the cookie TTL should stay short.
 */
export function createCloudFrontDecorator(config: CloudFrontGateConfig): CloudFrontDecorator {
  const privateKey = readPrivateKey(readFileSync(config.privateKeyFile, 'utf8'), config.algorithm);
  const ready: Promise<CloudFrontSigner> = createCloudFrontSigner({
    keyPairId: config.keyPairId,
    privateKey,
    algorithm: config.algorithm,
    bucketSeconds: Math.min(MAX_BUCKET_SECONDS, config.ttlSeconds),
    cacheSize: 16,
  });
  // Failure is reported to every caller below; this only keeps it from being "unhandled" meanwhile.
  ready.catch(() => undefined);
  const fixed: CloudFrontHeaders = {
    'X-Auth-CF-Key-Pair-Id': config.keyPairId,
    ...(config.algorithm === 'RSA-SHA1' ? {} : { 'X-Auth-CF-Hash-Algorithm': 'SHA256' }),
    ...(config.cookieDomain === undefined ? {} : { 'X-Auth-CF-Domain': config.cookieDomain }),
  };

  return async function cloudFrontHeaders(
    _sub: string,
    nowSeconds: number,
  ): Promise<CloudFrontHeaders> {
    const signer = await ready;
    const now = Math.floor(nowSeconds);
    const { cookies, expires } = await signer.signCookies({
      resource: config.resource,
      expires: now + config.ttlSeconds,
      now,
    });
    return {
      'X-Auth-CF-Policy': cookies['CloudFront-Policy'],
      'X-Auth-CF-Signature': cookies['CloudFront-Signature'],
      'X-Auth-CF-Expires': String(expires),
      ...fixed,
    };
  };
}

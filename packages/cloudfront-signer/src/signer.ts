// createCloudFrontSigner: CloudFront signed URLs and signed cookies from one imported key.
// The factory validates options and imports the key once; signUrl / signCookies only build the
// policy text, look it up in a small LRU (a signature depends on nothing but the policy bytes)
// and sign on a miss. With expiry bucketing, one policy (and so one signature) covers a window.
// https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/private-content-signed-urls.html

import { LRUCache } from 'lru-cache';
import { toCloudFrontBase64 } from './cloudfront-base64.js';
import { bucketExpiry, checkBucketSeconds, toEpochSeconds } from './expiry.js';
import { cannedPolicy, customPolicy } from './policy.js';
import { createPolicySigner } from './policy-signer.js';
import { checkResourcePattern, checkSignableUrl } from './resource.js';
import {
  importSigningKey,
  isCloudFrontAlgorithm,
  type CloudFrontAlgorithm,
  type PrivateKeyInput,
} from './signing-key.js';
import { normaliseSourceIp } from './source-ip.js';

export interface CloudFrontSignerOptions {
  /** The CloudFront public key ID (key group member), e.g. `K2JCJMDEHXQW5F`. */
  readonly keyPairId: string;
  readonly privateKey: PrivateKeyInput;
  /** Default `RSA-SHA1`, CloudFront's default. */
  readonly algorithm?: CloudFrontAlgorithm;
  /** Round expiries up to a multiple of this many seconds (0: no rounding). */
  readonly bucketSeconds?: number;
  /** Signed policies kept for reuse (0: none). Default 256. */
  readonly cacheSize?: number;
  /** Epoch seconds; used to refuse expiries in the past. Default: the system clock. */
  readonly now?: () => number;
}

export interface SignUrlInput {
  /** Absolute http(s) URL, already percent-encoded; an existing query string is kept. */
  readonly url: string;
  /** Epoch seconds (or a Date) after which CloudFront refuses the URL. */
  readonly expires: number | Date;
  readonly notBefore?: number | Date | undefined;
  /** IPv4 address or CIDR block the viewer must come from. */
  readonly ipAddress?: string | undefined;
  /** Epoch seconds to check `expires` against, for callers that own the clock. */
  readonly now?: number | undefined;
}

export interface SignCookiesInput extends Omit<SignUrlInput, 'url'> {
  /** Custom-policy resource, wildcards allowed: `https://cdn.example.com/private/*`. */
  readonly resource: string;
}

export interface SignedUrl {
  readonly url: string;
  /** The expiry actually signed: the requested one, rounded up to the bucket. */
  readonly expires: number;
}

export interface CloudFrontCookies {
  readonly 'CloudFront-Policy': string;
  readonly 'CloudFront-Signature': string;
  readonly 'CloudFront-Key-Pair-Id': string;
  readonly 'CloudFront-Hash-Algorithm'?: 'SHA256';
}

export interface SignedCookies {
  readonly cookies: CloudFrontCookies;
  readonly expires: number;
}

export interface CloudFrontSigner {
  readonly keyPairId: string;
  readonly algorithm: CloudFrontAlgorithm;
  /** Canned policy when only `expires` is given, custom policy otherwise. */
  signUrl(input: SignUrlInput): Promise<SignedUrl>;
  /** Always a custom policy (cookies carry it), so the resource may contain wildcards. */
  signCookies(input: SignCookiesInput): Promise<SignedCookies>;
}

interface SignedPolicy {
  readonly encodedPolicy: string;
  readonly signature: string;
}

const keyPairIdShape = /^[A-Za-z0-9]{1,128}$/;

/**
 * Validates the options, imports the key once with WebCrypto and returns the signer.
 * Throws TypeError for a bad key pair ID, key, algorithm, bucket or cache size.
 */
export async function createCloudFrontSigner(
  options: CloudFrontSignerOptions,
): Promise<CloudFrontSigner> {
  const { keyPairId } = options;
  if (typeof keyPairId !== 'string' || !keyPairIdShape.test(keyPairId)) {
    throw new TypeError('"keyPairId" must be the CloudFront public key ID (letters and digits)');
  }
  const algorithm = options.algorithm ?? 'RSA-SHA1';
  if (!isCloudFrontAlgorithm(algorithm))
    throw new TypeError('"algorithm" must be "RSA-SHA1", "RSA-SHA256" or "ECDSA-SHA256"');
  const bucketSeconds = checkBucketSeconds(options.bucketSeconds);
  const cacheSize = options.cacheSize ?? 256;
  if (!Number.isSafeInteger(cacheSize) || cacheSize < 0)
    throw new TypeError('"cacheSize" must be a whole number, 0 or more');
  const now = options.now ?? (() => Math.floor(Date.now() / 1000));

  const signPolicy = createPolicySigner(await importSigningKey(options.privateKey, algorithm));
  const cache =
    cacheSize > 0 ? new LRUCache<string, Promise<SignedPolicy>>({ max: cacheSize }) : undefined;
  // SHA-256 and ECDSA both hash with SHA-256; CloudFront assumes SHA-1 unless told.
  const hashAlgorithm = algorithm === 'RSA-SHA1' ? undefined : ('SHA256' as const);
  const urlSuffix = `&Key-Pair-Id=${keyPairId}`;

  function signedPolicy(policy: string): Promise<SignedPolicy> {
    const hit = cache?.get(policy);
    if (hit) return hit;
    const fresh = signPolicy(policy).then((signature) => ({
      encodedPolicy: toCloudFrontBase64(policy),
      signature: toCloudFrontBase64(signature),
    }));
    if (cache) {
      cache.set(policy, fresh);
      fresh.catch(() => {
        if (cache.peek(policy) === fresh) cache.delete(policy);
      });
    }
    return fresh;
  }

  function conditions(input: SignUrlInput | SignCookiesInput) {
    const requested = toEpochSeconds(input.expires, 'expires');
    if (requested <= (input.now ?? now())) throw new TypeError('"expires" is in the past');
    const expires = bucketExpiry(requested, bucketSeconds);
    const notBefore =
      input.notBefore === undefined ? undefined : toEpochSeconds(input.notBefore, 'notBefore');
    if (notBefore !== undefined && notBefore >= expires)
      throw new TypeError('"notBefore" must be earlier than "expires"');
    const sourceIp = input.ipAddress === undefined ? undefined : normaliseSourceIp(input.ipAddress);
    return { expires, notBefore, sourceIp };
  }

  return Object.freeze({
    keyPairId,
    algorithm,

    async signUrl(input: SignUrlInput): Promise<SignedUrl> {
      const url = checkSignableUrl(input?.url);
      const condition = conditions(input);
      const canned = condition.notBefore === undefined && condition.sourceIp === undefined;
      if (canned && url.includes('*')) {
        throw new TypeError(
          '"url" contains "*", which a canned policy cannot hold; sign a custom policy (notBefore or ipAddress) or use signCookies',
        );
      }
      const policy = canned ? cannedPolicy(url, condition.expires) : customPolicy(url, condition);
      const signed = await signedPolicy(policy);
      const head = canned ? `Expires=${condition.expires}` : `Policy=${signed.encodedPolicy}`;
      const tail = hashAlgorithm ? `&Hash-Algorithm=${hashAlgorithm}` : '';
      // Plain concatenation: the URL must reach the viewer exactly as it was signed.
      const separator = url.includes('?') ? '&' : '?';
      return {
        url: `${url}${separator}${head}${urlSuffix}&Signature=${signed.signature}${tail}`,
        expires: condition.expires,
      };
    },

    async signCookies(input: SignCookiesInput): Promise<SignedCookies> {
      const resource = checkResourcePattern(input?.resource);
      const condition = conditions(input);
      const signed = await signedPolicy(customPolicy(resource, condition));
      const cookies: CloudFrontCookies = {
        'CloudFront-Policy': signed.encodedPolicy,
        'CloudFront-Signature': signed.signature,
        'CloudFront-Key-Pair-Id': keyPairId,
        ...(hashAlgorithm ? { 'CloudFront-Hash-Algorithm': hashAlgorithm } : {}),
      };
      return { cookies, expires: condition.expires };
    },
  });
}

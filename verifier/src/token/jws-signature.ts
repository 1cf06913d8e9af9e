// The signature of a compact JWS, checked with node:crypto on the calling thread. jose 6 verifies
// with WebCrypto, a libuv thread-pool job per call on Node 20 that costs more CPU than the math:
// 80–115 µs per RS256 token against 33–36 µs here (docs/performance.md, "Hot path").
import { constants, KeyObject, verify, type SigningOptions, type webcrypto } from 'node:crypto';

type CryptoKey = webcrypto.CryptoKey;

/**
 * How one JWS `alg` is checked, by the rules of jose's WebCrypto call: the WebCrypto algorithm the
 * key must have been imported for (hash and curve included), RSA keys of at least 2048 bits; the
 * node:crypto digest (null for Ed25519, which hashes internally) and verify options: RSA-PSS with
 * the hash length as salt length, ECDSA signatures raw r‖s (IEEE P1363) as JWS defines them.
 */
export interface SignatureScheme {
  readonly alg: string;
  readonly digest: string | null;
  readonly keyAlgorithm: {
    readonly name: string;
    readonly hash?: string;
    readonly namedCurve?: string;
  };
  readonly options: Readonly<SigningOptions>;
  readonly minRsaBits?: number;
}

function rsa(alg: string, bits: 256 | 384 | 512, pss: boolean): SignatureScheme {
  return {
    alg,
    digest: `sha${bits}`,
    keyAlgorithm: { name: pss ? 'RSA-PSS' : 'RSASSA-PKCS1-v1_5', hash: `SHA-${bits}` },
    options: pss
      ? { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: bits / 8 }
      : { padding: constants.RSA_PKCS1_PADDING },
    minRsaBits: 2048,
  };
}

function ecdsa(alg: string, bits: 256 | 384 | 512, namedCurve: string): SignatureScheme {
  return {
    alg,
    digest: `sha${bits}`,
    keyAlgorithm: { name: 'ECDSA', namedCurve },
    options: { dsaEncoding: 'ieee-p1363' },
  };
}

const ED25519 = { digest: null, keyAlgorithm: { name: 'Ed25519' }, options: {} } as const;

const SCHEMES: ReadonlyMap<string, SignatureScheme> = new Map(
  [
    rsa('RS256', 256, false),
    rsa('RS384', 384, false),
    rsa('RS512', 512, false),
    rsa('PS256', 256, true),
    rsa('PS384', 384, true),
    rsa('PS512', 512, true),
    ecdsa('ES256', 256, 'P-256'),
    ecdsa('ES384', 384, 'P-384'),
    ecdsa('ES512', 512, 'P-521'),
    { alg: 'EdDSA', ...ED25519 },
    { alg: 'Ed25519', ...ED25519 },
  ].map((scheme) => [scheme.alg, scheme]),
);

/** The scheme of an `alg`, or undefined for one this module does not check (never HMAC, `none`). */
export function signatureScheme(alg: string): SignatureScheme | undefined {
  return SCHEMES.get(alg);
}

/** A key set holds a handful of keys: each is turned into a KeyObject once. */
const keyObjects = new WeakMap<CryptoKey, KeyObject>();

/**
 * The KeyObject of `key` when it may verify `scheme`'s signatures, else undefined (a key imported
 * for another algorithm, hash or curve, a private or secret key, an RSA key under 2048 bits).
 */
export function verificationKey(key: CryptoKey, scheme: SignatureScheme): KeyObject | undefined {
  const algorithm = key.algorithm as Partial<
    webcrypto.RsaHashedKeyAlgorithm & webcrypto.EcKeyAlgorithm
  >;
  const expected = scheme.keyAlgorithm;
  if (key.type !== 'public' || !key.usages.includes('verify')) return undefined;
  if (algorithm.name !== expected.name) return undefined;
  if (expected.hash !== undefined && algorithm.hash?.name !== expected.hash) return undefined;
  if (expected.namedCurve !== undefined && algorithm.namedCurve !== expected.namedCurve)
    return undefined;
  if (scheme.minRsaBits !== undefined && !((algorithm.modulusLength ?? 0) >= scheme.minRsaBits))
    return undefined;
  let keyObject = keyObjects.get(key);
  if (keyObject === undefined) keyObjects.set(key, (keyObject = KeyObject.from(key)));
  return keyObject;
}

/**
 * True when the third segment of the compact JWS `token` is a valid signature over the first two
 * under `key`. The caller has checked the three base64url segments; a signature of the wrong
 * length or shape is false, never an exception.
 */
export function verifySignature(token: string, scheme: SignatureScheme, key: KeyObject): boolean {
  const dot = token.lastIndexOf('.');
  const signingInput = Buffer.from(token.slice(0, dot), 'latin1');
  const signature = Buffer.from(token.slice(dot + 1), 'base64url');
  try {
    return verify(scheme.digest, signingInput, { key, ...scheme.options }, signature);
  } catch {
    return false;
  }
}

// The signature of a compact JWS, checked with node:crypto on the calling thread. jose 6 verifies
// with WebCrypto, a libuv thread-pool job per call that costs more CPU than the math: on Node 22
// and 24, jose's `jwtVerify` costs ~100 µs more per RS256 token than this check of ~27 µs
// (docs/performance.md, "Runtime: Node 22 and 24 beside Node 20").
import { constants, KeyObject, verify, type SigningOptions, type webcrypto } from 'node:crypto';
import type { CryptoKey } from 'jose';
import { isCanonicalFrom, lastDot, MAX_TOKEN_BYTES } from './token-shape.js';

/**
 * How one JWS `alg` is checked, by jose's WebCrypto rules: the algorithm the key must be imported
 * for (RSA keys of at least 2048 bits); the node:crypto digest (null for Ed25519, which hashes
 * internally) and options (RSA-PSS salt = hash length, ECDSA raw r‖s as JWS defines it); the
 * signature's length in bytes (RSA: the modulus's, read from the key).
 */
export interface SignatureScheme {
  readonly digest: string | null;
  readonly keyAlgorithm: {
    readonly name: string;
    readonly hash?: string;
    readonly namedCurve?: string;
  };
  readonly options: Readonly<SigningOptions>;
  readonly minRsaBits?: number;
  readonly signatureBytes?: number;
}

const rsa = (bits: number, pss: boolean): SignatureScheme => ({
  digest: `sha${bits}`,
  keyAlgorithm: { name: pss ? 'RSA-PSS' : 'RSASSA-PKCS1-v1_5', hash: `SHA-${bits}` },
  options: pss
    ? { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: bits / 8 }
    : { padding: constants.RSA_PKCS1_PADDING },
  minRsaBits: 2048,
});
// RFC 7518 §3.4: r and s, each the curve's order length (P-521: 66 bytes).
const ecdsa = (bits: number, namedCurve: string): SignatureScheme => ({
  digest: `sha${bits}`,
  keyAlgorithm: { name: 'ECDSA', namedCurve },
  options: { dsaEncoding: 'ieee-p1363' },
  signatureBytes: 2 * Math.ceil((bits === 512 ? 521 : bits) / 8),
});
const ED25519: SignatureScheme = {
  digest: null,
  keyAlgorithm: { name: 'Ed25519' },
  options: {},
  signatureBytes: 64,
};

const SCHEMES: ReadonlyMap<string, SignatureScheme> = new Map([
  ...[256, 384, 512].flatMap((bits) => [
    [`RS${bits}`, rsa(bits, false)] as const,
    [`PS${bits}`, rsa(bits, true)] as const,
    [`ES${bits}`, ecdsa(bits, bits === 512 ? 'P-521' : `P-${bits}`)] as const,
  ]),
  ['EdDSA', ED25519],
  ['Ed25519', ED25519],
]);

/** The schemes of an `alg` allowlist; a TypeError at start for any other (HMAC, `none`). */
export function signatureSchemes(algorithms: readonly string[]) {
  return new Map<string, SignatureScheme>(
    algorithms.map((alg) => {
      const scheme = SCHEMES.get(alg);
      if (scheme === undefined) throw new TypeError(`no signature scheme for "${alg}"`);
      return [alg, scheme] as const;
    }),
  );
}

/**
 * What a CryptoKey was found fit for: a key set holds a handful of keys, each turned into a
 * KeyObject once. A CryptoKey never changes, and reading its `usages` copies the array, so the
 * verdict is kept for the scheme it was last asked about (a key verifies one `alg`).
 */
const fitted = new WeakMap<
  CryptoKey,
  { readonly scheme: SignatureScheme; readonly key: KeyObject | undefined }
>();

/**
 * The KeyObject of `key` when it may verify `scheme`'s signatures, else undefined (a key imported
 * for another algorithm, hash or curve, a private or secret key, an RSA key under 2048 bits).
 */
export function verificationKey(key: CryptoKey, scheme: SignatureScheme): KeyObject | undefined {
  const known = fitted.get(key);
  if (known?.scheme === scheme) return known.key;
  const algorithm = key.algorithm as Partial<
    webcrypto.RsaHashedKeyAlgorithm & webcrypto.EcKeyAlgorithm
  >;
  const { name, hash, namedCurve } = scheme.keyAlgorithm;
  const fits =
    key.type === 'public' &&
    key.usages.includes('verify') &&
    algorithm.name === name &&
    (hash === undefined || algorithm.hash?.name === hash) &&
    (namedCurve === undefined || algorithm.namedCurve === namedCurve) &&
    (algorithm.modulusLength ?? 0) >= (scheme.minRsaBits ?? 0);
  const keyObject = !fits ? undefined : (known?.key ?? KeyObject.from(key));
  fitted.set(key, { scheme, key: keyObject });
  return keyObject;
}

/** An RSA key's signatures are as long as its modulus: its length in base64url, read once. */
const rsaSignatureLengths = new WeakMap<KeyObject, number>();

/** Characters of `bytes` in unpadded base64url (RFC 7515 §2): the only length that spells them. */
const base64urlLength = (bytes: number) => Math.ceil((bytes * 4) / 3);

function signatureLength(scheme: SignatureScheme, key: KeyObject): number {
  if (scheme.signatureBytes !== undefined) return base64urlLength(scheme.signatureBytes);
  let length = rsaSignatureLengths.get(key);
  if (length === undefined) {
    const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
    rsaSignatureLengths.set(key, (length = base64urlLength(Math.ceil(bits / 8))));
  }
  return length;
}

const BASE64URL = /^[A-Za-z0-9_-]*$/;

/** Room for a token's signing input and signature (a longer JWS gets Buffers of its own). */
const scratch = Buffer.allocUnsafe(MAX_TOKEN_BYTES);

/** What `verify` takes for a key and a scheme: the KeyObject alone, or it with the options. */
type VerifyKey = KeyObject | (SigningOptions & { readonly key: KeyObject });
/**
 * Built once per key, for the scheme it was last asked about (a key verifies one `alg`), not once
 * per signature: a key set holds a handful of keys.
 */
const verifyKeys = new WeakMap<
  KeyObject,
  { readonly scheme: SignatureScheme; readonly prepared: VerifyKey }
>();

function verifyKey(key: KeyObject, scheme: SignatureScheme): VerifyKey {
  const known = verifyKeys.get(key);
  if (known?.scheme === scheme) return known.prepared;
  // PKCS #1 v1.5 is node:crypto's own padding for an `rsa` key (not for an `rsa-pss` one), and
  // Ed25519 takes no options: there the KeyObject goes alone, with no preparation per call.
  const { padding, ...others } = scheme.options;
  const plain =
    Object.keys(others).length === 0 &&
    (padding === undefined
      ? key.asymmetricKeyType === 'ed25519'
      : padding === constants.RSA_PKCS1_PADDING && key.asymmetricKeyType === 'rsa');
  const prepared = plain ? key : { key, ...scheme.options };
  verifyKeys.set(key, { scheme, prepared });
  return prepared;
}

/**
 * True when the third segment of the compact JWS `token` is a valid signature over the first two;
 * a malformed signature is false, not thrown. The segment is read strictly, as jose's decoder
 * reads it: the base64url alphabet only, no padding, and exactly the length of a signature of
 * `scheme` and `key` (Node's own decoder would drop a stray last character), and the unused low
 * bits of the last character zero (jose does not check them; RFC 4648 §3.5 leaves them to
 * decoders): a signature has one spelling, so a proof or token has one.
 */
export function verifySignature(token: string, scheme: SignatureScheme, key: KeyObject): boolean {
  const dot = lastDot(token);
  const encoded = token.slice(dot + 1);
  if (encoded.length !== signatureLength(scheme, key) || !BASE64URL.test(encoded)) return false;
  if (!isCanonicalFrom(token, dot + 1)) return false;
  // The signing input's bytes (latin1: a compact JWS is ASCII, which callers check, so no UTF-8
  // scan) and the signature's, side by side in one reused buffer, handed to `verify` as views: no
  // new Buffer per token. `verify` is synchronous: nothing else writes there before it returns.
  const fits = token.length <= scratch.length;
  const inputLength = fits ? scratch.write(token, 0, dot, 'latin1') : dot;
  const signingInput = fits
    ? scratch.subarray(0, inputLength)
    : Buffer.from(token.slice(0, dot), 'latin1');
  const signature = fits
    ? scratch.subarray(inputLength, inputLength + scratch.write(encoded, inputLength, 'base64url'))
    : Buffer.from(encoded, 'base64url');
  try {
    return verify(scheme.digest, signingInput, verifyKey(key, scheme), signature);
  } catch {
    return false;
  }
}

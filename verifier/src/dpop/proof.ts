// One DPoP proof checked per RFC 9449 §4.3 (§7 for a proof sent with an access token), with
// node:crypto on the calling thread: jose's jwtVerify would hand a WebCrypto job to the thread pool
// on every proof, several times the cost of the ES256 math (bench/gate.ts "one cached DPoP token").
import { createHash, createPublicKey, hash, type KeyObject } from 'node:crypto';
import { decodeProtectedHeader, type JWK, type JWTPayload } from 'jose';
import { LRUCache } from 'lru-cache';
import { VerifyError } from '../errors.js';
import { checkProtectedHeader, validateClaims } from '../token/jwt-claims.js';
import { signatureScheme, verifySignature, type SignatureScheme } from '../token/jws-signature.js';
import { normalizeHtu } from './htu.js';

/** A proof is a short JWS with one public key in it; anything larger is refused unparsed. */
export const MAX_PROOF_BYTES = 2048;
const MAX_JTI_LENGTH = 256;
const JWS_COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
/** JWK members that only a private (or symmetric) key has (RFC 7518 §6). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const;
/** RFC 7638 §3.2: the required members per key type, in lexicographic order. */
const THUMBPRINT_MEMBERS: Readonly<Record<string, readonly string[]>> = {
  EC: ['crv', 'kty', 'x', 'y'],
  RSA: ['e', 'kty', 'n'],
  OKP: ['crv', 'kty', 'x'],
};
/** Protected headers kept (see `headers` below); one per active DPoP client is the working set. */
const HEADER_CACHE_ENTRIES = 10_000;

export interface ProofExpectation {
  /** The original request method. */
  readonly htm: string;
  /** The external request URL, already normalised (htu.ts externalUrl). */
  readonly htu: string;
  /** The access token the proof must be bound to with `ath`; undefined at a token endpoint. */
  readonly accessToken?: string | undefined;
}

export interface CheckedProof {
  /** RFC 7638 SHA-256 thumbprint of the proof's public key. */
  readonly jkt: string;
  readonly jti: string;
  readonly iat: number;
  /** The `nonce` claim, if any (checked by the caller against its nonce source). */
  readonly nonce: unknown;
}

export type ProofChecker = (proof: string, expect: ProofExpectation) => Promise<CheckedProof>;

export interface ProofCheckerOptions {
  /** Allowed proof algorithms; asymmetric only (validated by the configuration). */
  readonly algorithms: readonly string[];
  /** Seconds `iat` may differ from now, either way. */
  readonly iatWindow: number;
  /** Milliseconds since the epoch. */
  readonly now: () => number;
}

const invalid = (message: string) => new VerifyError('dpop_proof_invalid', message);

/** What one protected header decides: the key it carries, its thumbprint and how it verifies. */
interface PreparedHeader {
  readonly header: Readonly<Record<string, unknown>>;
  readonly thumbprint: string;
  readonly key: KeyObject;
  readonly scheme: SignatureScheme;
}

/** WebCrypto curve names → node:crypto's, for the check that a key fits its `alg`. */
const NODE_CURVES: Readonly<Record<string, string>> = {
  'P-256': 'prime256v1',
  'P-384': 'secp384r1',
  'P-521': 'secp521r1',
};

/**
 * True when `key` may verify `scheme`'s signatures, by the rules jose applies before a WebCrypto
 * verify: ECDSA on the curve `alg` names, RSA (PKCS#1 v1.5 or PSS) of at least 2048 bits, Ed25519
 * for EdDSA.
 */
export function keyFitsScheme(key: KeyObject, scheme: SignatureScheme): boolean {
  const { name, namedCurve } = scheme.keyAlgorithm;
  const details = key.asymmetricKeyDetails ?? {};
  if (name === 'ECDSA')
    return key.asymmetricKeyType === 'ec' && details.namedCurve === NODE_CURVES[namedCurve ?? ''];
  if (name === 'Ed25519') return key.asymmetricKeyType === 'ed25519';
  if (name !== 'RSASSA-PKCS1-v1_5' && name !== 'RSA-PSS') return false;
  return (
    key.asymmetricKeyType === 'rsa' && (details.modulusLength ?? 0) >= (scheme.minRsaBits ?? 0)
  );
}

/**
 * The RFC 7638 SHA-256 thumbprint of a public JWK and the members it is made of (the only ones used
 * to import the key), or undefined for a key type a proof may not use (`oct`, unknown).
 */
export function jwkThumbprint(
  jwk: JWK,
): { thumbprint: string; publicJwk: Record<string, string> } | undefined {
  const members = THUMBPRINT_MEMBERS[String(jwk.kty)];
  if (members === undefined) return undefined;
  const publicJwk: Record<string, string> = {};
  for (const member of members) {
    const value = (jwk as Record<string, unknown>)[member];
    if (typeof value !== 'string' || value.length === 0) return undefined;
    publicJwk[member] = value;
  }
  const thumbprint = createHash('sha256').update(JSON.stringify(publicJwk)).digest('base64url');
  return { thumbprint, publicJwk };
}

/**
 * Checks, cheap ones before any crypto: a compact JWS of at most MAX_PROOF_BYTES; `typ: dpop+jwt`;
 * `alg` in the allowlist (asymmetric only, so `none` and HMAC never pass); unknown `crit` refused;
 * `jwk` a public key (no private members) whose type and curve fit `alg` (RSA at least 2048 bits);
 * the signature with that key; `exp`, `nbf` and `iat` as jose validates them when present; `jti`
 * present; `htm` = the original method; `htu` = the external URL without query and fragment; `iat`
 * within ±window; `ath` = base64url(SHA-256(token)) when a token is presented. Not checked here:
 * `nonce` (returned for the caller's nonce source), replay of `jti` (binding.ts asks the replay
 * store) and `cnf.jkt` (binding.ts compares the thumbprint).
 */
export function createProofChecker(options: ProofCheckerOptions): ProofChecker {
  const schemes = new Map<string, SignatureScheme>();
  for (const alg of options.algorithms) {
    const scheme = signatureScheme(alg);
    if (scheme === undefined) throw new TypeError(`no signature scheme for DPoP "${alg}"`);
    schemes.set(alg, scheme);
  }
  /**
   * A client signs every proof with one key under one protected header (alg, typ, jwk): all that is
   * decided from it alone, the imported key included, is kept by its base64url text, so a repeat
   * costs a map lookup rather than a key import and a digest. Only headers that passed go in.
   */
  const headers = new LRUCache<string, PreparedHeader>({ max: HEADER_CACHE_ENTRIES });

  function prepareHeader(proof: string): PreparedHeader {
    let header: ReturnType<typeof decodeProtectedHeader>;
    try {
      header = decodeProtectedHeader(proof);
    } catch {
      throw invalid('the DPoP proof header is not valid JSON');
    }
    if (header.typ !== 'dpop+jwt') throw invalid('"typ" header must be "dpop+jwt"');
    if (typeof header.alg !== 'string' || !schemes.has(header.alg))
      throw invalid('"alg" is not an allowed DPoP algorithm');
    const { jwk } = header;
    if (jwk === null || typeof jwk !== 'object' || Array.isArray(jwk))
      throw invalid('"jwk" header must hold the public key');
    if (PRIVATE_MEMBERS.some((member) => member in jwk))
      throw invalid('"jwk" header must not carry private key members');
    const bound = jwkThumbprint(jwk);
    if (bound === undefined) throw invalid('"jwk" header is not an EC, RSA or OKP public key');
    let key: KeyObject;
    try {
      key = createPublicKey({ key: bound.publicJwk, format: 'jwk' });
    } catch {
      throw invalid('"jwk" header is not a usable public key');
    }
    let scheme: SignatureScheme;
    try {
      // jose's order: header rules (`crit`, `alg`), then the key must fit `alg`.
      scheme = schemes.get(checkProtectedHeader(header, schemes))!;
    } catch {
      throw invalid('the DPoP proof signature or claims did not verify');
    }
    if (!keyFitsScheme(key, scheme))
      throw invalid('the DPoP proof signature or claims did not verify');
    return { header, thumbprint: bound.thumbprint, key, scheme };
  }

  function check(proof: string, expect: ProofExpectation): CheckedProof {
    if (proof.length > MAX_PROOF_BYTES)
      throw invalid(`the DPoP proof is larger than ${MAX_PROOF_BYTES} bytes`);
    if (!JWS_COMPACT.test(proof)) throw invalid('the DPoP proof is not a compact JWS');
    const segment = proof.slice(0, proof.indexOf('.'));
    let prepared = headers.get(segment);
    if (prepared === undefined) headers.set(segment, (prepared = prepareHeader(proof)));
    const { header, key, scheme } = prepared;

    let payload: JWTPayload;
    const at = options.now();
    const unverified = () => invalid('the DPoP proof signature or claims did not verify');
    if (!verifySignature(proof, scheme, key)) throw unverified();
    try {
      payload = validateClaims(proof, header, { typ: 'dpop+jwt', currentDate: new Date(at) });
    } catch {
      throw unverified();
    }

    const { jti, htm, htu, iat, ath } = payload as Record<string, unknown>;
    if (typeof jti !== 'string' || jti.length === 0 || jti.length > MAX_JTI_LENGTH)
      throw invalid('"jti" claim is missing or too long');
    if (htm !== expect.htm) throw invalid('"htm" claim does not match the request method');
    if (typeof htu !== 'string' || normalizeHtu(htu) !== expect.htu)
      throw invalid('"htu" claim does not match the request URL');
    if (typeof iat !== 'number' || !Number.isFinite(iat)) throw invalid('"iat" claim is missing');
    if (Math.abs(at / 1000 - iat) > options.iatWindow)
      throw invalid('"iat" claim is outside the accepted window');
    if (expect.accessToken !== undefined) {
      if (typeof ath !== 'string') throw invalid('"ath" claim is missing');
      // One-shot `hash` builds no Hash object: half the cost of `createHash` on every proof.
      if (ath !== hash('sha256', expect.accessToken, 'base64url'))
        throw invalid('"ath" claim does not match the access token');
    }
    return { jkt: prepared.thumbprint, jti, iat, nonce: payload.nonce };
  }

  // The checks run synchronously; callers get a promise, rejected when a check throws.
  return (proof, expect) => new Promise((resolve) => resolve(check(proof, expect)));
}

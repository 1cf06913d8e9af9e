// One DPoP proof checked per RFC 9449 §4.3 and §7, with node:crypto on the calling thread: jose's
// jwtVerify would queue a WebCrypto job on the thread pool per proof, several times the ES256 math.
import { hash, type KeyObject } from 'node:crypto';
import { calculateJwkThumbprint, importJWK, type JWTPayload } from 'jose';
import { LRUCache } from 'lru-cache';
import { VerifyError } from '../errors.js';
import { checkProtectedHeader, readProtectedHeader, validateClaims } from '../token/jwt-claims.js';
import {
  signatureSchemes,
  verificationKey,
  verifySignature,
  type SignatureScheme,
} from '../token/jws-signature.js';
import { looksLikeJwt } from '../token/token-shape.js';
import { normalizeHtu } from './htu.js';

/** A proof is a short JWS with one public key in it; anything larger is refused unparsed. */
export const MAX_PROOF_BYTES = 2048;
const MAX_JTI_LENGTH = 256;
/** JWK members that only a private (or symmetric) key has (RFC 7518 §6). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const;
/** Every cached header passed the `typ` check, so the claims are validated under that `typ`. */
const DPOP_TYP = { typ: 'dpop+jwt' } as const;

const invalid = (message: string) => new VerifyError('dpop_proof_invalid', message);
const unverified = () => invalid('the DPoP proof signature or claims did not verify');

/**
 * Checks, cheap ones first: a compact JWS of at most MAX_PROOF_BYTES; `typ: dpop+jwt`; `alg` in
 * the asymmetric allowlist (never `none` or HMAC); no unknown `crit`; `jwk` a public key fitting
 * `alg` (RSA ≥ 2048 bits); the signature; `exp`, `nbf`, `iat` as jose validates them; `jti`; `htm`
 * the original method; `htu` the external URL (no query, fragment); `iat` within ±`iatWindow` s;
 * `ath` = base64url(SHA-256(token)) when a token is presented. Left to the caller: `nonce`, `jti`
 * replays and `cnf.jkt`. `now` is in epoch milliseconds.
 */
export function createProofChecker(options: {
  algorithms: readonly string[];
  iatWindow: number;
  now: () => number;
}) {
  const schemes = signatureSchemes(options.algorithms);
  /**
   * A client signs every proof under one protected header (alg, typ, jwk): what it decides, the
   * imported key included, is kept by its base64url text, so a repeat costs a map lookup, not a key
   * import and a digest. Only headers that passed go in; one per active client is the working set.
   */
  const headers = new LRUCache<string, { jkt: string; key: KeyObject; scheme: SignatureScheme }>({
    max: 10_000,
  });

  async function prepareHeader(proof: string) {
    const header = readProtectedHeader(proof);
    if (header === undefined) throw invalid('the DPoP proof header is not valid JSON');
    if (header.typ !== 'dpop+jwt') throw invalid('"typ" header must be "dpop+jwt"');
    const scheme = typeof header.alg === 'string' ? schemes.get(header.alg) : undefined;
    if (scheme === undefined) throw invalid('"alg" is not an allowed DPoP algorithm');
    const { jwk } = header;
    if (jwk === null || typeof jwk !== 'object' || Array.isArray(jwk))
      throw invalid('"jwk" header must hold the public key');
    if (PRIVATE_MEMBERS.some((member) => member in jwk))
      throw invalid('"jwk" header must not carry private key members');
    try {
      checkProtectedHeader(header, schemes); // jose's `crit` rules
    } catch {
      throw unverified();
    }
    // jose refuses a malformed key or one unfit for `alg`; verificationKey a private, secret or
    // short RSA one.
    const imported = await importJWK(jwk, header.alg).catch(() => undefined);
    const key =
      imported === undefined || imported instanceof Uint8Array
        ? undefined
        : verificationKey(imported, scheme);
    if (key === undefined) throw invalid('"jwk" header is not a public key usable with "alg"');
    // Every member the thumbprint reads is sound once the key imported.
    return { jkt: await calculateJwkThumbprint(jwk, 'sha256'), key, scheme };
  }

  /**
   * `expect`: the original method, the normalised external URL (htu.ts) and the access token for
   * `ath` (none at a token endpoint). Resolves with the key's RFC 7638 thumbprint `jkt`, `jti`,
   * `iat` and the unchecked `nonce`; rejects with a `dpop_proof_invalid` VerifyError.
   */
  return async function checkProof(
    proof: string,
    expect: { htm: string; htu: string; accessToken?: string | undefined },
  ) {
    if (proof.length > MAX_PROOF_BYTES)
      throw invalid(`the DPoP proof is larger than ${MAX_PROOF_BYTES} bytes`);
    if (!looksLikeJwt(proof)) throw invalid('the DPoP proof is not a compact JWS');
    const segment = proof.slice(0, proof.indexOf('.'));
    let prepared = headers.get(segment);
    if (prepared === undefined) headers.set(segment, (prepared = await prepareHeader(proof)));

    const at = options.now();
    if (!verifySignature(proof, prepared.scheme, prepared.key)) throw unverified();
    let payload: JWTPayload;
    try {
      payload = validateClaims(proof, DPOP_TYP, { typ: 'dpop+jwt', currentDate: new Date(at) });
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
    return { jkt: prepared.jkt, jti, iat, nonce: payload.nonce };
  };
}

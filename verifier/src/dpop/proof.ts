// One DPoP proof checked per RFC 9449 §4.3 and §7, with node:crypto on the calling thread: jose's
// jwtVerify would queue a WebCrypto job on the thread pool per proof, several times the ES256 math.
import { hash, type KeyObject } from 'node:crypto';
import { calculateJwkThumbprint, importJWK, type JWTPayload } from 'jose';
import { LRUCache } from 'lru-cache';
import type { Clock } from '../clock.js';
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
import { proofKeyProblem } from './proof-key.js';

/** A proof is a short JWS with one public key in it; anything larger is refused unparsed. */
export const MAX_PROOF_BYTES = 2048;
const MAX_JTI_LENGTH = 256;
/** Every cached header passed the `typ` check, so the claims are validated under that `typ`. */
const DPOP_TYP = { typ: 'dpop+jwt' } as const;

const invalid = (message: string) => new VerifyError('dpop_proof_invalid', message);
const unverified = () => invalid('the DPoP proof signature or claims did not verify');
const notBound = () =>
  new VerifyError('dpop_binding_mismatch', 'the proof key is not the token\'s "cnf.jkt"');

/** What a proof's header decided: its key's thumbprint, the imported key and its scheme. */
interface PreparedHeader {
  readonly jkt: string;
  readonly key: KeyObject;
  readonly scheme: SignatureScheme;
}

/** What the caller expects of a proof (see `checkProof`). */
export interface ProofExpectation {
  readonly htm: string;
  readonly htu: string;
  readonly accessToken?: string | undefined;
  readonly jkt?: string | undefined;
}

/**
 * Checks, cheap ones first: a compact JWS of at most MAX_PROOF_BYTES; `typ: dpop+jwt`; `alg` in
 * the asymmetric allowlist (never `none` or HMAC); no unknown `crit`; `jwk` a public key fitting
 * `alg` by its members alone (proof-key.ts: RSA only with e = 65537 and 2048–4096 bits); its RFC
 * 7638 thumbprint the token's `cnf.jkt` when one is given (`dpop_binding_mismatch`), all before
 * the key is imported or any signature checked; the signature; `exp`, `nbf`, `iat` as jose
 * validates them; `jti`; `htm` the original method; `htu` the external URL (no query, fragment);
 * `iat` within ±`iatWindow` s; `ath` = base64url(SHA-256(token)) when a token is presented. Left
 * to the caller: `nonce` and `jti` replays.
 */
export function createProofChecker(options: {
  algorithms: readonly string[];
  iatWindow: number;
  now: Clock;
}) {
  const schemes = signatureSchemes(options.algorithms);
  /**
   * A client signs every proof under one protected header (alg, typ, jwk): what it decides, the
   * imported key included, is kept by its base64url text, so a repeat costs a map lookup, not a key
   * import and a digest. Only headers that passed go in; one per active client is the working set.
   */
  const headers = new LRUCache<string, PreparedHeader>({ max: 10_000 });

  async function prepareHeader(proof: string, jkt: string | undefined): Promise<PreparedHeader> {
    const header = readProtectedHeader(proof);
    if (header === undefined) throw invalid('the DPoP proof header is not valid JSON');
    if (!isDpopTyp(header.typ)) throw invalid('"typ" header must be "dpop+jwt"');
    const { alg, jwk } = header;
    const scheme = typeof alg === 'string' ? schemes.get(alg) : undefined;
    if (scheme === undefined) throw invalid('"alg" is not an allowed DPoP algorithm');
    if (jwk === null || typeof jwk !== 'object' || Array.isArray(jwk))
      throw invalid('"jwk" header must hold the public key');
    const problem = proofKeyProblem(jwk as Record<string, unknown>, scheme);
    if (problem !== undefined) throw invalid(problem);
    try {
      checkProtectedHeader(header, schemes); // jose's `crit` rules
    } catch {
      throw unverified();
    }
    // jose checks that the members the thumbprint reads are strings; a key of another token is
    // refused before it is imported.
    const thumbprint = await calculateJwkThumbprint(jwk, 'sha256').catch(() => undefined);
    if (thumbprint === undefined)
      throw invalid('"jwk" header is not a public key usable with "alg"');
    if (jkt !== undefined && thumbprint !== jkt) throw notBound();
    // jose refuses a malformed key or one unfit for `alg`; verificationKey a private, secret or
    // short RSA one.
    const imported = await importJWK(jwk, alg as string).catch(() => undefined);
    const key =
      imported === undefined || imported instanceof Uint8Array
        ? undefined
        : verificationKey(imported, scheme);
    if (key === undefined) throw invalid('"jwk" header is not a public key usable with "alg"');
    return { jkt: thumbprint, key, scheme };
  }

  /** The checks after the header's: the signature, the claims, `ath`. Synchronous. */
  function checkSigned(
    proof: string,
    prepared: PreparedHeader,
    expect: ProofExpectation,
  ): CheckedProof {
    const at = options.now();
    if (!verifySignature(proof, prepared.scheme, prepared.key)) throw unverified();
    let payload: JWTPayload;
    try {
      payload = validateClaims(proof, DPOP_TYP, DPOP_TYP, at);
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
    if (Math.abs(at - iat) > options.iatWindow)
      throw invalid('"iat" claim is outside the accepted window');
    if (expect.accessToken !== undefined) {
      if (typeof ath !== 'string') throw invalid('"ath" claim is missing');
      // One-shot `hash` builds no Hash object: half the cost of `createHash` on every proof.
      if (ath !== hash('sha256', expect.accessToken, 'base64url'))
        throw invalid('"ath" claim does not match the access token');
    }
    return { jkt: prepared.jkt, jti, iat, nonce: payload.nonce };
  }

  /**
   * `expect`: the original method, the normalised external URL (htu.ts), the access token for
   * `ath` and its `cnf.jkt` (neither at a token endpoint). Answers with the key's RFC 7638
   * thumbprint `jkt`, `jti`, `iat` and the unchecked `nonce`; refuses with a `dpop_proof_invalid`
   * VerifyError, or `dpop_binding_mismatch` for a key other than `expect.jkt`. A header seen
   * before (its key imported) is checked synchronously: the answer is returned and a refusal
   * thrown; a new header waits for its key's thumbprint and import, so the answer is a promise
   * and a refusal from then on rejects it.
   */
  return function checkProof(
    proof: string,
    expect: ProofExpectation,
  ): CheckedProof | Promise<CheckedProof> {
    if (proof.length > MAX_PROOF_BYTES)
      throw invalid(`the DPoP proof is larger than ${MAX_PROOF_BYTES} bytes`);
    if (!looksLikeJwt(proof)) throw invalid('the DPoP proof is not a compact JWS');
    const segment = proof.slice(0, proof.indexOf('.'));
    const prepared = headers.get(segment);
    if (prepared === undefined)
      return prepareHeader(proof, expect.jkt).then((fresh) => {
        headers.set(segment, fresh);
        return checkSigned(proof, fresh, expect);
      });
    // A header kept for one token's key may come with another token.
    if (expect.jkt !== undefined && prepared.jkt !== expect.jkt) throw notBound();
    return checkSigned(proof, prepared, expect);
  };
}

/** A proof that passed: its key's thumbprint, `jti`, `iat` and the `nonce` left to the caller. */
export interface CheckedProof {
  readonly jkt: string;
  readonly jti: string;
  readonly iat: number;
  readonly nonce: unknown;
}

/**
 * `dpop+jwt`, also spelled `application/dpop+jwt` or in other case: RFC 7515 §4.1.9 makes the
 * `application/` prefix optional and media types compare case-insensitively (RFC 2045 §5.1).
 */
function isDpopTyp(typ: unknown): boolean {
  return typeof typ === 'string' && /^(?:application\/)?dpop\+jwt$/i.test(typ);
}

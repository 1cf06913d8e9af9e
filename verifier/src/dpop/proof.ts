// One DPoP proof checked per RFC 9449 §4.3 (and §7 for a proof sent with an access token).
// Cheap header checks run before any crypto; jose then verifies the signature with the key the
// proof carries (EmbeddedJWK), and the claims are compared with the request the gate received.
//
// Checked: compact JWS of at most MAX_PROOF_BYTES; `typ: dpop+jwt`; `alg` in the allowlist
// (asymmetric only, so `none` and HMAC never pass); `jwk` a public key (no private members); the
// signature with that key; `jti` present; `htm` = the original method; `htu` = the external URL
// without query and fragment; `iat` within ±window; `ath` = base64url(SHA-256(token)) when a
// token is presented; `nonce` when the caller asks for one. Not checked here: replay of `jti`
// (binding.ts asks the replay store) and `cnf.jkt` (binding.ts compares the thumbprint).
import { createHash } from 'node:crypto';
import {
  calculateJwkThumbprint,
  decodeProtectedHeader,
  EmbeddedJWK,
  jwtVerify,
  type JWK,
  type JWTPayload,
} from 'jose';
import { VerifyError } from '../errors.js';
import { normalizeHtu } from './htu.js';

/** A proof is a short JWS with one public key in it; anything larger is refused unparsed. */
export const MAX_PROOF_BYTES = 2048;
const MAX_JTI_LENGTH = 256;
const JWS_COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
/** JWK members that only a private (or symmetric) key has (RFC 7518 §6). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const;

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

/** The SHA-256 of an access token as `ath` carries it (RFC 9449 §4.2). */
export function accessTokenHash(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}

export function createProofChecker(options: ProofCheckerOptions): ProofChecker {
  const algorithms = new Set(options.algorithms);
  const verifyOptions = { typ: 'dpop+jwt', algorithms: [...options.algorithms] };

  return async function checkProof(proof, expect) {
    if (proof.length > MAX_PROOF_BYTES)
      throw invalid(`the DPoP proof is larger than ${MAX_PROOF_BYTES} bytes`);
    if (!JWS_COMPACT.test(proof)) throw invalid('the DPoP proof is not a compact JWS');
    let header: ReturnType<typeof decodeProtectedHeader>;
    try {
      header = decodeProtectedHeader(proof);
    } catch {
      throw invalid('the DPoP proof header is not valid JSON');
    }
    if (header.typ !== 'dpop+jwt') throw invalid('"typ" header must be "dpop+jwt"');
    if (typeof header.alg !== 'string' || !algorithms.has(header.alg))
      throw invalid('"alg" is not an allowed DPoP algorithm');
    const jwk = header.jwk as JWK | undefined;
    if (jwk === null || typeof jwk !== 'object' || Array.isArray(jwk))
      throw invalid('"jwk" header must hold the public key');
    if (PRIVATE_MEMBERS.some((member) => member in jwk))
      throw invalid('"jwk" header must not carry private key members');

    let payload: JWTPayload;
    const at = options.now();
    try {
      ({ payload } = await jwtVerify(proof, EmbeddedJWK, {
        ...verifyOptions,
        currentDate: new Date(at),
      }));
    } catch {
      throw invalid('the DPoP proof signature or claims did not verify');
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
      if (ath !== accessTokenHash(expect.accessToken))
        throw invalid('"ath" claim does not match the access token');
    }
    return {
      jkt: await calculateJwkThumbprint(jwk, 'sha256'),
      jti,
      iat,
      nonce: (payload as Record<string, unknown>).nonce,
    };
  };
}

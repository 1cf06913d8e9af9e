// The outcome of a successful token check, whatever the token type; what the decision cache keeps.
import type { Identity } from './identity.js';

export interface VerifiedToken {
  readonly identity: Identity;
  /** Seconds since the epoch; the cache never keeps a decision past it. */
  readonly exp: number;
  /** Seconds since the epoch, tolerance already applied; undefined when the token has no `nbf`. */
  readonly nbf: number | undefined;
  /** The JWS `kid` the token was verified with, so entries can be dropped when the key leaves. */
  readonly kid: string | undefined;
  /** Seconds since the epoch until which the key that verified it is trusted; undefined: no key. */
  readonly keyTrustedUntil?: number | undefined;
  /** `cnf.jkt` of a DPoP-bound token (RFC 9449 §6): the thumbprint its proofs must be signed with. */
  readonly jkt?: string | undefined;
  /** What pushed revocations are matched against (`iat`, `sid`, `email`). */
  readonly session?: SessionClaims | undefined;
}

/** The claims of a verified token that revocations are matched against (besides iss and sub). */
export interface SessionClaims {
  /** Seconds since the epoch; a token without `iat` cannot be shown newer than a watermark. */
  readonly iat: number | undefined;
  /** OIDC session id, when the IdP puts one into access tokens (Keycloak does). */
  readonly sid: string | undefined;
  /** The token's own `email` claim, lower-cased; never an address from user-info. */
  readonly email: string | undefined;
}

const MAX_CLAIM_LENGTH = 1024;

/** Reads the session claims of verified token claims; odd types are ignored, not trusted. */
export function readSessionClaims(claims: Record<string, unknown>): SessionClaims {
  const { iat, sid, email } = claims;
  const short = (value: unknown): string | undefined =>
    typeof value === 'string' && value.length > 0 && value.length <= MAX_CLAIM_LENGTH
      ? value
      : undefined;
  const address = short(email);
  return {
    iat: typeof iat === 'number' && Number.isFinite(iat) ? iat : undefined,
    sid: short(sid),
    email: address?.toLowerCase(),
  };
}

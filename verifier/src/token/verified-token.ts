// The outcome of a successful token check, whatever the token type; what the decision cache keeps.
import type { Identity } from './identity.js';
import type { SessionClaims } from '../revocation/subjects.js';

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

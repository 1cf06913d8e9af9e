// OIDC Back-Channel Logout 1.0 §2.6: a logout token is verified like an ID token (signature by
// the issuer's keys, `iss`, `aud` one of our client ids, `iat` recent, `typ: logout+jwt` when
// sent), MUST carry `sub` or `sid` and the back-channel-logout member in `events`, MUST NOT carry
// `nonce`. What it revokes: every token of that subject and/or session issued before its `iat`.
import type { KeySet } from '../token/key-set.js';
import { unverifiedSender, verifyEventToken } from './event-token.js';
import { ReceiverError } from './receiver-error.js';
import type { Revocation } from './revocation.js';

export const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';

export interface LogoutIssuer {
  readonly issuer: string;
  /** The client ids a logout token may be addressed to. */
  readonly audiences: readonly string[];
  readonly algorithms: readonly string[];
  readonly clockTolerance: number;
  readonly keys: KeySet;
}

export interface VerifiedLogout {
  readonly issuer: string;
  readonly jti: string;
  readonly revocations: readonly Revocation[];
}

export type LogoutTokenVerifier = (token: string) => Promise<VerifiedLogout>;

export function createLogoutTokenVerifier(options: {
  readonly issuers: ReadonlyMap<string, LogoutIssuer>;
  /** Seconds a logout token may be old (by `iat`). */
  readonly maxAge: number;
  readonly now: () => number;
}): LogoutTokenVerifier {
  const { now } = options;
  return async function verifyLogoutToken(token) {
    const issuer = options.issuers.get(unverifiedSender(token));
    if (issuer === undefined)
      throw new ReceiverError(
        'issuer_unknown',
        '"iss" is not an issuer whose logout tokens are accepted',
      );
    const { payload, jti, iat, events } = await verifyEventToken(token, {
      issuer: issuer.issuer,
      audiences: issuer.audiences,
      algorithms: issuer.algorithms,
      keys: issuer.keys,
      typ: 'logout+jwt',
      typRequired: false,
      clockTolerance: issuer.clockTolerance,
      maxAge: options.maxAge,
      now,
    });
    const member = events[BACKCHANNEL_LOGOUT_EVENT];
    if (member === null || typeof member !== 'object' || Array.isArray(member))
      throw new ReceiverError(
        'events_invalid',
        `"events" has no "${BACKCHANNEL_LOGOUT_EVENT}" object`,
      );
    if ('nonce' in payload)
      throw new ReceiverError('nonce_present', 'a logout token must not carry "nonce"');
    const sub = nonEmpty(payload.sub);
    const sid = nonEmpty(payload.sid);
    if (sub === undefined && sid === undefined)
      throw new ReceiverError('subject_missing', 'a logout token must carry "sub" or "sid"');
    // The IdP's own clock dated the logout; its tokens are dated by the same clock. A token issued
    // in the logout's second counts as older (whole-second `iat`s cannot tell them apart).
    const at = Math.min(iat + 1, now() / 1000 + issuer.clockTolerance);
    const revocations: Revocation[] = [];
    if (sub !== undefined) revocations.push({ kind: 'sub', iss: issuer.issuer, value: sub, at });
    if (sid !== undefined) revocations.push({ kind: 'sid', iss: issuer.issuer, value: sid, at });
    return { issuer: issuer.issuer, jti, revocations };
  };
}

function nonEmpty(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 && value.length <= 1024 ? value : undefined;
}

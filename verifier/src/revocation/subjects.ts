// What a revocation names and what a token is matched by. A watermark "tokens of this subject
// issued before t are revoked" is kept per (iss, sub), per (iss, sid) and per verified e-mail
// address; these are the store's keys.

/** The claims of a verified token that revocations are matched against (besides iss and sub). */
export interface SessionClaims {
  /** Seconds since the epoch; a token without `iat` cannot be shown newer than a watermark. */
  readonly iat: number | undefined;
  /** OIDC session id, when the IdP puts one into access tokens (Keycloak does). */
  readonly sid: string | undefined;
  /** The token's own `email` claim, lower-cased; never an address from user-info. */
  readonly email: string | undefined;
}

export type WatermarkKind = 'sub' | 'sid' | 'email';

/**
 * One store key. The issuer comes from configuration or a verified event and precedes the value,
 * which is last, so no value can make two different subjects share a key.
 */
export function watermarkKey(kind: WatermarkKind, iss: string, value: string): string {
  return kind === 'email' ? `email\n${value.toLowerCase()}` : `${kind}\n${iss}\n${value}`;
}

/** The keys a token is checked against, most common first. */
export function keysOfToken(
  iss: string,
  sub: string,
  session: SessionClaims | undefined,
): string[] {
  const keys = sub === '' ? [] : [watermarkKey('sub', iss, sub)];
  if (session?.sid !== undefined) keys.push(watermarkKey('sid', iss, session.sid));
  if (session?.email !== undefined) keys.push(watermarkKey('email', iss, session.email));
  return keys;
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

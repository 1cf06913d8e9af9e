// What a revocation names and what a token is matched by. A watermark "tokens of this subject
// issued before t are revoked" is kept per (iss, sub), per (iss, sid) and per verified e-mail
// address; these are the store's keys.
import type { SessionClaims } from '../token/verified-token.js';

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

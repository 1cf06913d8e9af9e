// The two digests of a token: the decision-cache key and the fingerprint written to logs.
import { createHash } from 'node:crypto';

/** SHA-256 of `prefix` + token as base64url: one flat 43-character string per cache entry. */
export function tokenHash(token: string, prefix: string): string {
  return createHash('sha256').update(prefix).update(token).digest('base64url');
}

/** First 8 hex characters of the token's own SHA-256: short enough to be useless as a credential. */
export function fingerprint(token: string): string {
  return createHash('sha256').update(token).digest('hex').slice(0, 8);
}

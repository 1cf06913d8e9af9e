// The two digests of a token: the decision-cache key and the fingerprint written to logs.
import { hash } from 'node:crypto';

/**
 * SHA-256 of `prefix` + token as base64url: one flat 43-character string per cache entry.
 * One-shot `hash` builds no Hash object: about half the cost of `createHash` on Node 20.
 */
export function tokenHash(token: string, prefix: string): string {
  return hash('sha256', prefix + token, 'base64url');
}

/** First 8 hex characters of the token's own SHA-256: short enough to be useless as a credential. */
export function fingerprint(token: string): string {
  return hash('sha256', token, 'hex').slice(0, 8);
}

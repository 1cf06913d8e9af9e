// Watermarks: "tokens of this subject issued before t are revoked", kept per (iss, sub), per
// (iss, sid) and per verified e-mail address until no token they can match is still valid; written
// by the receivers, read by the per-request check.
import type { VerifierConfig } from '../config/model.js';
import type { RevocationCheck } from '../decision/plugins.js';
import type { RevocationStore } from './store.js';

export type WatermarkKind = 'sub' | 'sid' | 'email';

/** "Tokens of `iss` whose `kind` is `value` issued before `at` (seconds) are revoked." */
export interface Revocation {
  readonly kind: WatermarkKind;
  readonly iss: string;
  readonly value: string;
  readonly at: number;
}

export type ApplyRevocations = (revocations: readonly Revocation[]) => Promise<number>;

/**
 * One store key. The issuer comes from configuration or a verified event and precedes the value,
 * which is last, so no value can make two different subjects share a key.
 */
export function watermarkKey(kind: WatermarkKind, iss: string, value: string): string {
  return kind === 'email' ? `email\n${value.toLowerCase()}` : `${kind}\n${iss}\n${value}`;
}

/**
 * Seconds a token of each configured issuer can stay valid: JWTs the longest accepted lifetime
 * plus the tolerance; opaque tokens their answer cache (after it the IdP is asked again).
 */
export function tokenLifetimes(config: Pick<VerifierConfig, 'issuers'>): Map<string, number> {
  const lifetimes = new Map<string, number>();
  for (const issuer of config.issuers.values())
    lifetimes.set(
      issuer.issuer,
      issuer.type === 'jwt' ? issuer.maxTokenAge + issuer.clockTolerance : issuer.cacheTtl,
    );
  return lifetimes;
}

/**
 * Writes each revocation that can match a token here, for the lifetime of the tokens it can match;
 * a subject of an issuer we do not accept tokens from is skipped, as is one no valid token can
 * match any more. Resolves with the number written; rejects when the store cannot take it.
 */
export function createRevocationApplier(
  store: RevocationStore,
  lifetimes: ReadonlyMap<string, number>,
  now: () => number,
): ApplyRevocations {
  const longest = Math.max(0, ...lifetimes.values());
  return async function applyRevocations(revocations) {
    let written = 0;
    for (const { kind, iss, value, at } of revocations) {
      const lifetime = kind === 'email' ? longest : lifetimes.get(iss);
      if (lifetime === undefined) continue;
      const ttl = at + lifetime - now() / 1000;
      if (ttl <= 0) continue;
      await store.revoke(watermarkKey(kind, iss, value), at, ttl);
      written++;
    }
    return written;
  };
}

/**
 * The per-request check: after the decision cache, before anything is answered, so a revoked
 * token is refused even when it was cached. A map lookup per key, most common first; nothing at
 * all while the store holds no watermark. `onUnchecked` counts each token served while the shared
 * store is unreachable (`checked` policies; `required` ones refuse).
 */
export function createRevocationCheck(
  store: RevocationStore,
  onUnchecked: () => void,
): RevocationCheck {
  return function checkRevocation({ identity, session }, mode) {
    if (!store.isCurrent()) {
      if (mode === 'required') return 'unavailable';
      onUnchecked();
    }
    if (store.size === 0) return 'valid';
    const { issuer, sub } = identity;
    const keys = sub === '' ? [] : [watermarkKey('sub', issuer, sub)];
    if (session?.sid !== undefined) keys.push(watermarkKey('sid', issuer, session.sid));
    if (session?.email !== undefined) keys.push(watermarkKey('email', issuer, session.email));
    for (const key of keys) {
      const before = store.revokedBefore(key);
      // A token without `iat` cannot be shown to be newer than the revocation.
      if (before !== undefined && (session?.iat === undefined || session.iat < before))
        return 'revoked';
    }
    return 'valid';
  };
}

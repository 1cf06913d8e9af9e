// Watermarks: "tokens of this subject issued before t are revoked", kept per (iss, sub), per
// (iss, sid) and per (iss, verified e-mail address) until no token they can match is still valid;
// written by the receivers, read by the per-request check.
import type { Clock, EpochSeconds, Seconds } from '../clock.js';
import type { RevocationCheck } from '../decision/decision.js';
import type { RevocationStore } from './store.js';

/** "Tokens of `iss` whose `kind` is `value` issued before `at` are revoked." */
export interface Revocation {
  readonly kind: 'sub' | 'sid' | 'email';
  readonly iss: string;
  readonly value: string;
  readonly at: EpochSeconds;
}

/** One store key: the value last, so no value can make two different subjects share a key. */
export function watermarkKey(kind: Revocation['kind'], iss: string, value: string): string {
  return `${kind}\n${iss}\n${kind === 'email' ? value.toLowerCase() : value}`;
}

/**
 * Writes each revocation for the lifetime of the tokens it can match, skipping an issuer we accept
 * no tokens from and what no valid token can match any more; resolves with the number written,
 * rejects when the store cannot take it.
 */
export function createRevocationApplier(
  store: RevocationStore,
  lifetimes: ReadonlyMap<string, Seconds>,
  now: Clock,
) {
  return async function applyRevocations(revocations: readonly Revocation[]): Promise<number> {
    let written = 0;
    for (const { kind, iss, value, at } of revocations) {
      const lifetime = lifetimes.get(iss);
      const ttl = at + (lifetime ?? 0) - now();
      if (lifetime === undefined || ttl <= 0) continue;
      await store.revoke(watermarkKey(kind, iss, value), at, ttl);
      written++;
    }
    return written;
  };
}

/**
 * The per-request check, after the decision cache, so a revoked token is refused even when it was
 * cached: a map lookup per key, nothing while the store holds no watermark. `onUnchecked` counts
 * each token served while the shared store is unreachable (`checked`; `required` refuses). While
 * the view misses a watermark of the shared store (it overflowed), a token it does not refuse is
 * `unavailable` under every policy: it may be the one revoked.
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
    return store.isComplete() ? 'valid' : 'unavailable';
  };
}

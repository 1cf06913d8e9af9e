// Applying revocations: one watermark per subject, session or address, kept until no token it can
// match is still valid (the watermark plus the longest lifetime a matching token can have).
import type { VerifierConfig } from '../config/model.js';
import { watermarkKey, type WatermarkKind } from './subjects.js';
import type { RevocationStore } from './store.js';

/** "Tokens of `iss` whose `kind` is `value` issued before `at` (seconds) are revoked." */
export interface Revocation {
  readonly kind: WatermarkKind;
  readonly iss: string;
  readonly value: string;
  readonly at: number;
}

export type ApplyRevocations = (revocations: readonly Revocation[]) => Promise<number>;

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
 * Writes each revocation that can match a token here; a subject of an issuer we do not accept
 * tokens from is skipped. Resolves with the number written; rejects when the store cannot take it.
 */
export function createRevocationApplier(
  store: RevocationStore,
  lifetimes: ReadonlyMap<string, number>,
  now: () => number,
): ApplyRevocations {
  const longest = Math.max(0, ...lifetimes.values());
  return async function applyRevocations(revocations) {
    let written = 0;
    for (const revocation of revocations) {
      const lifetime = revocation.kind === 'email' ? longest : lifetimes.get(revocation.iss);
      if (lifetime === undefined) continue;
      const ttl = revocation.at + lifetime - now() / 1000;
      if (ttl <= 0) continue;
      await store.revoke(
        watermarkKey(revocation.kind, revocation.iss, revocation.value),
        revocation.at,
        ttl,
      );
      written++;
    }
    return written;
  };
}

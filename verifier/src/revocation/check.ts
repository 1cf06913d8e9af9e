// The per-request revocation check: after the decision cache, before anything is answered, so a
// revoked token is refused even when its decision was cached. A map lookup per key; nothing at all
// while the store holds no watermark.
import type { PolicyConfig } from '../config/model.js';
import type { Decision } from '../decision/decision.js';
import { keysOfToken } from './subjects.js';
import type { RevocationStore } from './store.js';

/** `checked` or `required` (the policy's `revocation`). */
export type RevocationMode = PolicyConfig['revocation'];
export type RevocationVerdict = 'valid' | 'revoked' | 'unavailable';

export type RevocationCheck = (decision: Decision, mode: RevocationMode) => RevocationVerdict;

export function createRevocationCheck(
  store: RevocationStore,
  /** Called for each token served while the shared store is unreachable (`checked` policies). */
  onUnchecked: () => void,
): RevocationCheck {
  return function checkRevocation(decision, mode) {
    const { identity } = decision;
    if (identity === undefined) return 'valid';
    if (!store.isCurrent()) {
      if (mode === 'required') return 'unavailable';
      onUnchecked();
    }
    if (store.size === 0) return 'valid';
    const iat = decision.session?.iat;
    for (const key of keysOfToken(identity.issuer, identity.sub, decision.session)) {
      const before = store.revokedBefore(key);
      // A token without `iat` cannot be shown to be newer than the revocation.
      if (before !== undefined && (iat === undefined || iat < before)) return 'revoked';
    }
    return 'valid';
  };
}

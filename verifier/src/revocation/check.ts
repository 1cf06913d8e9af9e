// The per-request revocation check: after the decision cache, before anything is answered, so a
// revoked token is refused even when it was cached. A map lookup per key; nothing at all while the
// store holds no watermark.
import type { RevocationCheck } from '../decision/plugins.js';
import { keysOfToken } from './subjects.js';
import type { RevocationStore } from './store.js';

export function createRevocationCheck(
  store: RevocationStore,
  /** Called for each token served while the shared store is unreachable (`checked` policies). */
  onUnchecked: () => void,
): RevocationCheck {
  return function checkRevocation({ identity, session }, mode) {
    if (!store.isCurrent()) {
      if (mode === 'required') return 'unavailable';
      onUnchecked();
    }
    if (store.size === 0) return 'valid';
    const iat = session?.iat;
    for (const key of keysOfToken(identity.issuer, identity.sub, session)) {
      const before = store.revokedBefore(key);
      // A token without `iat` cannot be shown to be newer than the revocation.
      if (before !== undefined && (iat === undefined || iat < before)) return 'revoked';
    }
    return 'valid';
  };
}

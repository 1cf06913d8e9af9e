// How long a minted value lives: the entry's TTL, never past the token that earned it. Most
// downstreams cannot revoke a derived key, so this bound is the revocation.

import { MintError } from './mint-error.js';
import type { Caller } from './types.js';

/** The expiry (epoch seconds) of a value minted now: min(now + ttlSeconds, caller.exp). */
export function expiryFor(caller: Caller, now: number, ttlSeconds: number): number {
  const issuedAt = Math.floor(now);
  const expiresAt = Math.min(issuedAt + ttlSeconds, Math.floor(caller.exp));
  if (!(expiresAt > issuedAt)) {
    throw new MintError('claim_missing', 'the token\'s "exp" is not in the future');
  }
  return expiresAt;
}

// Most kinds mint synchronously (one HMAC or one signature); the Minter contract is a promise,
// and a failure must arrive as a rejection rather than a throw.

import type { Caller, MintedValue } from './types.js';

export function syncMint(
  mint: (caller: Caller, now: number) => MintedValue,
): (caller: Caller, now: number) => Promise<MintedValue> {
  return (caller, now) => {
    try {
      return Promise.resolve(mint(caller, now));
    } catch (error) {
      return Promise.reject(error);
    }
  };
}

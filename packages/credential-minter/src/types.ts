// The nouns every kind shares: who the value is minted for, what comes out, and the minter itself.
// Time is epoch seconds throughout, as in JWT `exp`.

import type { PublicJwk } from './jws-key.js';

/** The verified caller, from the verifier's decision (never from the request). */
export interface Caller {
  iss: string;
  sub: string;
  clientId?: string;
  scopes: readonly string[];
  /** The verified token's payload. */
  claims: Readonly<Record<string, unknown>>;
  /** The token's `exp`, epoch seconds. */
  exp: number;
  /** The access token itself; only the `token-exchange` kind sends it anywhere (to the issuer). */
  token: string;
}

/** A minted value and the moment it stops being accepted downstream (epoch seconds). */
export interface MintedValue {
  value: string;
  expiresAt: number;
}

export interface Minter {
  readonly kind: string;
  /** Mints for the caller; lifetime min(ttlSeconds, caller.exp - now). Throws MintError. */
  mint(caller: Caller, now: number): Promise<MintedValue>;
  /**
   * Asymmetric `jwt` entries only: the public keys a downstream verifies against, the current one
   * first and, after a rotation, the one before it (values it signed are still live).
   */
  publicJwks?(): readonly PublicJwk[];
}

/** What the host supplies: the caller's issuer's token endpoint (from discovery) and a fetch. */
export interface MintContext {
  tokenEndpoint?: () => Promise<string>;
  fetch?: typeof fetch;
}

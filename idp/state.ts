// Mutable state of a running dev IdP that tests observe and steer through the control API:
// hit counters, claims queued for the next tokens, and the simulated outage mode.

/** How the IdP answers OIDC requests: normally, with 503s, or by resetting connections. */
export type OutageMode = 'up' | 'error' | 'reset';
export const OUTAGE_MODES: readonly OutageMode[] = ['up', 'error', 'reset'];

export interface IdpCounters {
  discoveryFetches: number;
  jwksFetches: number;
  authorizeRequests: number;
  tokensIssued: number;
  tokenErrors: number;
  /** Logout tokens delivered to a back-channel logout URI (any answer). */
  logoutTokensSent: number;
}

export interface IdpState {
  readonly counters: IdpCounters;
  outage: OutageMode;
  /** Claim sets merged into the next access tokens from /token, one set per token. */
  readonly nextClaims: Record<string, unknown>[];
  resetCounters(): void;
}

export function createIdpState(): IdpState {
  const counters: IdpCounters = {
    discoveryFetches: 0,
    jwksFetches: 0,
    authorizeRequests: 0,
    tokensIssued: 0,
    tokenErrors: 0,
    logoutTokensSent: 0,
  };
  return {
    counters,
    outage: 'up',
    nextClaims: [],
    resetCounters() {
      for (const name of Object.keys(counters) as (keyof IdpCounters)[]) counters[name] = 0;
    },
  };
}

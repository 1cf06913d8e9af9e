// Client for the dev IdP: real token requests (client-credentials grant) and its dev-only control
// API (/dev/*), used by the runner, the suites and the harnesses.

export interface IdpStats {
  discoveryFetches: number;
  jwksFetches: number;
  authorizeRequests: number;
  tokensIssued: number;
  tokenErrors: number;
  /** Back-channel logout tokens delivered (any answer). */
  logoutTokensSent: number;
  outage: 'up' | 'error' | 'reset';
}

export interface TokenShape {
  readonly clientId?: string;
  /** Space-separated scopes; defaults to `secrets:read`. Pass '' for a token with no scope. */
  readonly scope?: string;
  /** Extra or overriding claims (`null` removes one); minted through the dev control API. */
  readonly claims?: Record<string, unknown>;
  readonly header?: Record<string, unknown>;
  readonly alg?: 'RS256' | 'ES256';
  readonly expiresIn?: number;
}

export const DEFAULT_CLIENT = 'spa-demo';
export const DEFAULT_SCOPE = 'secrets:read';

export function createIdpClient(issuer: string) {
  async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await fetch(`${issuer}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await response.text();
    if (!response.ok)
      throw new Error(
        `dev IdP ${method} ${path} answered ${response.status}: ${text.slice(0, 200)}`,
      );
    return JSON.parse(text) as T;
  }

  /** Client-credentials grant at the real token endpoint: the token a demo client gets. */
  async function requestToken(clientId = DEFAULT_CLIENT, scope = DEFAULT_SCOPE): Promise<string> {
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId });
    if (scope) form.set('scope', scope);
    const response = await fetch(`${issuer}/token`, {
      method: 'POST',
      body: form,
      signal: AbortSignal.timeout(10_000),
    });
    const body = (await response.json()) as { access_token?: string; error?: string };
    if (!response.ok || !body.access_token) {
      throw new Error(
        `token request for "${clientId}" failed: ${response.status} ${body.error ?? ''}`,
      );
    }
    return body.access_token;
  }

  /**
   * A token for `clientId` with `scope`: from the token endpoint when nothing else is asked for,
   * otherwise minted by the control API with the given claims, header, algorithm or lifetime.
   */
  async function mintToken(shape: TokenShape = {}): Promise<string> {
    const scope = shape.scope ?? DEFAULT_SCOPE;
    const plain = !shape.claims && !shape.header && !shape.alg && shape.expiresIn === undefined;
    if (plain) return requestToken(shape.clientId, scope);
    const { access_token } = await call<{ access_token: string }>('POST', '/dev/token', {
      ...shape,
      scope: scope || undefined,
    });
    return access_token;
  }

  return {
    issuer,
    requestToken,
    mintToken,
    stats: () => call<IdpStats>('GET', '/dev/stats'),
    resetStats: () => call<IdpStats>('POST', '/dev/stats/reset', {}),
    keys: () => call<{ active: string; keys: { kid: string; alg: string }[] }>('GET', '/dev/keys'),
    rotateKey: (options: { alg?: string; keepPrevious?: boolean } = {}) =>
      call<{ kid: string; dropped?: string; keys: { kid: string; alg: string }[] }>(
        'POST',
        '/dev/rotate',
        options,
      ),
    queueClaims: (claims: Record<string, unknown>, count = 1) =>
      call<{ queued: number }>('POST', '/dev/next-token-claims', { claims, count }),
    /** "Signed out elsewhere": the IdP sends a back-channel logout token for `sub` to the gate. */
    signOut: (sub: string, options: { sid?: string; clientId?: string } = {}) =>
      call<{ delivered: { uri: string; status: number | 'unreachable' }[] }>(
        'POST',
        '/dev/sign-out',
        { sub, ...options },
      ),
    /** A CAEP event from the IdP's Shared Signals transmitter (pushed, and queued for polling). */
    raiseSecurityEvent: (event: {
      event?: 'session-revoked' | 'credential-change';
      sub?: string;
      email?: string;
      delivery?: 'push' | 'poll';
    }) =>
      call<{
        jti: string;
        pushed: { uri: string; status: number | 'unreachable' }[];
        queued: boolean;
      }>('POST', '/dev/ssf/events', event),
    ssfStats: () => call<{ pending: number; acknowledged: number }>('GET', '/dev/ssf/stats'),
    setOutage: (mode: 'up' | 'error' | 'reset') =>
      call<{ outage: string }>('POST', '/dev/outage', { mode }),
  };
}

export type IdpClient = ReturnType<typeof createIdpClient>;

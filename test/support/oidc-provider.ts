// node-oidc-provider (npm `oidc-provider`, a certified OpenID Provider) as a real IdP for the
// suites: client credentials with resource indicators (RFC 8707), so its access tokens are
// RFC 9068 JWTs (`typ: at+jwt`, `client_id`, `scope`, `aud` = the resource), DPoP (RFC 9449)
// bound when the token request carries a proof, key rotation and an outage switch. It serves on
// loopback from one node:http server whose handler is the current provider, so rotating keys
// keeps the port (and the issuer) while the key set changes. With `backchannelLogoutUri` every
// client is registered for OpenID Connect Back-Channel Logout and `backchannelLogout()` makes the
// provider send its own logout token, exactly as when a session of that user ends. Users sign in
// at one of two levels (`acr`), chosen by the request's `acr_values` (oidc-provider-sign-in.ts).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import * as DPoP from 'dpop';
import Provider, { errors, type ClientMetadata } from 'oidc-provider';
import {
  ACR_VALUES,
  createLoginFinisher,
  signInClaims,
  stepUpPolicy,
} from './oidc-provider-sign-in.js';
import { exchangeClient, registerTokenExchange } from './oidc-provider-exchange.js';

export interface OidcProviderOptions {
  /** Client ids registered for client credentials; each one's secret is `${id}-secret`. */
  readonly clients?: readonly string[];
  /** The resource (RFC 8707) tokens are issued for: their `aud`. */
  readonly resource?: string;
  /** Scopes a client may ask for. */
  readonly scopes?: readonly string[];
  /** Access token lifetime in seconds. */
  readonly accessTokenTtl?: number;
  /** Fixed port (0: any free one). */
  readonly port?: number;
  /** Registers every client for back-channel logout (`features.backchannelLogout`) at this URI. */
  readonly backchannelLogoutUri?: string;
  /**
   * A public browser client (code + PKCE, no secret) redirecting to `redirectUri`, signed in through
   * the provider's own development login and consent pages (`features.devInteractions`).
   */
  readonly browserClient?: { readonly clientId: string; readonly redirectUri: string };
  /** A client that may exchange access tokens (RFC 8693, oidc-provider-exchange.ts). */
  readonly tokenExchangeClient?: string;
}

export interface TokenRequest {
  readonly scope?: string;
  /** A DPoP key pair (from `generateDpopKeyPair`): the token is bound to it (`cnf.jkt`). */
  readonly dpop?: DPoP.KeyPair;
}

export interface OidcProviderHarness {
  readonly issuer: string;
  readonly jwksUri: string;
  readonly tokenEndpoint: string;
  readonly resource: string;
  readonly clients: readonly string[];
  /** An access token from the real token endpoint (client_secret_basic, client credentials). */
  token(clientId: string, request?: TokenRequest): Promise<string>;
  /** The `kid`s the provider's JWKS publishes now. */
  kids(): readonly string[];
  /**
   * A new signing key. `keepOld`: the old key stays published (and signs no more); without it
   * the old key leaves the JWKS at once.
   */
  rotateKeys(options?: { keepOld?: boolean }): void;
  /**
   * The provider's own back-channel logout for `sub` (and `sid`) to `clientId`'s registered URI,
   * the call its end-session action makes; rejects unless the receiver answers 200 or 204.
   */
  backchannelLogout(clientId: string, sub: string, sid?: string): Promise<void>;
  /** Sign-ins from now on are dated `seconds` ago (`auth_time`): a stale session, made at once. */
  backdateSignIns(seconds: number): void;
  /** `down`: every request (discovery, JWKS, token) has its connection dropped. */
  setOutage(down: boolean): void;
  /** Requests the provider answered, by path (`/jwks`, `/token`, …). */
  hits(path: string): number;
  /** The subject and audience of an opaque access token the provider issued (e.g. exchanged). */
  issuedToken(value: string): Promise<{ accountId: string; aud: unknown } | undefined>;
  close(): Promise<void>;
}

export const PROVIDER_DEFAULTS = Object.freeze({
  clients: ['spa-demo', 'partner-app'] as readonly string[],
  resource: 'https://api.secret-gate.test',
  scopes: ['secrets:read', 'openid'] as readonly string[],
  accessTokenTtl: 300,
});

/** A non-extractable ES256 key pair for DPoP proofs (panva's `dpop` package). */
export function generateDpopKeyPair(): Promise<DPoP.KeyPair> {
  return DPoP.generateKeyPair('ES256');
}

/** A DPoP proof (RFC 9449 §4) for one request; `accessToken` adds `ath` for a resource request. */
export function dpopProof(
  keyPair: DPoP.KeyPair,
  url: string,
  method: string,
  accessToken?: string,
  nonce?: string,
): Promise<string> {
  return DPoP.generateProof(keyPair, url, method, nonce, accessToken);
}

function signingKey(): Record<string, unknown> {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), alg: 'ES256', use: 'sig' };
}

/** Starts the provider on loopback and resolves once it accepts requests. */
export async function startOidcProvider(
  options: OidcProviderOptions = {},
): Promise<OidcProviderHarness> {
  const clients = options.clients ?? PROVIDER_DEFAULTS.clients;
  const resource = options.resource ?? PROVIDER_DEFAULTS.resource;
  const scopes = options.scopes ?? PROVIDER_DEFAULTS.scopes;
  const ttl = options.accessTokenTtl ?? PROVIDER_DEFAULTS.accessTokenTtl;
  const counts = new Map<string, number>();
  let outage = false;
  let keys = [signingKey()];
  let provider: Provider | undefined;
  let handle: ReturnType<Provider['callback']> | undefined;
  let signInAge = 0;
  const finishLogin = createLoginFinisher(
    () => provider!,
    () => signInAge,
  );

  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    counts.set(path, (counts.get(path) ?? 0) + 1);
    if (outage || handle === undefined) return void req.socket.destroy();
    if (req.method === 'POST' && /^\/interaction\/[^/]+$/.test(path)) {
      // The login answer is the harness's (the level asked for); consent stays the provider's.
      const provide = handle;
      void finishLogin(req, res).then(
        (done) => done || void provide(req, res),
        () => {
          res.statusCode = 400;
          res.end();
        },
      );
      return;
    }
    void handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const issuer = `http://127.0.0.1:${port}`;

  const logout: Partial<ClientMetadata> =
    options.backchannelLogoutUri === undefined
      ? {}
      : {
          backchannel_logout_uri: options.backchannelLogoutUri,
          backchannel_logout_session_required: false,
        };
  const browser = options.browserClient;
  const browserClients: ClientMetadata[] =
    browser === undefined
      ? []
      : [
          {
            client_id: browser.clientId,
            grant_types: ['authorization_code'],
            response_types: ['code'],
            redirect_uris: [browser.redirectUri],
            post_logout_redirect_uris: [browser.redirectUri],
            token_endpoint_auth_method: 'none',
            id_token_signed_response_alg: 'ES256',
            // The SPA reads when the user signed in to know whether a max_age needs prompt=login.
            require_auth_time: true,
            scope: scopes.join(' '),
            ...logout,
          },
        ];

  function build(): void {
    provider = new Provider(issuer, {
      clients: [
        ...browserClients,
        ...clients.map((id): ClientMetadata => ({
          client_id: id,
          client_secret: `${id}-secret`,
          grant_types: ['client_credentials'],
          response_types: [],
          redirect_uris: [],
          token_endpoint_auth_method: 'client_secret_basic',
          // Its keys are P-256 only: every signed response of the client uses ES256.
          id_token_signed_response_alg: 'ES256',
          scope: scopes.join(' '),
          ...logout,
        })),
        ...(options.tokenExchangeClient === undefined
          ? []
          : [exchangeClient(options.tokenExchangeClient)]),
      ],
      // Signing keys first: the provider signs with the first key of an algorithm.
      jwks: { keys },
      scopes: [...scopes],
      acrValues: [...ACR_VALUES],
      interactions: { policy: stepUpPolicy() },
      // RFC 9470 resource servers read these from the access token: JWT access tokens get them.
      extraTokenClaims: (ctx) => signInClaims(ctx),
      ttl: { ClientCredentials: ttl, AccessToken: ttl },
      features: {
        devInteractions: { enabled: browser !== undefined },
        clientCredentials: { enabled: true },
        dPoP: { enabled: true },
        backchannelLogout: { enabled: options.backchannelLogoutUri !== undefined },
        resourceIndicators: {
          enabled: true,
          defaultResource: () => resource,
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx, indicator) => {
            if (indicator !== resource) throw new errors.InvalidTarget();
            return {
              scope: scopes.join(' '),
              audience: resource,
              accessTokenTTL: ttl,
              accessTokenFormat: 'jwt',
              jwt: { sign: { alg: 'ES256' } },
            };
          },
        },
      },
      routes: { jwks: '/jwks', token: '/token' },
      // The provider's outgoing requests (logout tokens) refuse special-use addresses to guard
      // against SSRF; the receivers here are on loopback, so its dispatcher is left out.
      fetch: (input: string | URL | Request, init?: RequestInit) => {
        const { dispatcher: _guard, ...rest } = (init ?? {}) as RequestInit & {
          dispatcher?: unknown;
        };
        return fetch(input, rest);
      },
    });
    if (options.tokenExchangeClient !== undefined) registerTokenExchange(provider, () => keys);
    handle = provider.callback();
  }
  build();

  return {
    issuer,
    jwksUri: `${issuer}/jwks`,
    tokenEndpoint: `${issuer}/token`,
    resource,
    clients,
    async token(clientId, request = {}) {
      const form = new URLSearchParams({ grant_type: 'client_credentials', resource });
      form.set('scope', request.scope ?? 'secrets:read');
      if (request.scope === '') form.delete('scope');
      const headers: Record<string, string> = {
        authorization: `Basic ${Buffer.from(`${clientId}:${clientId}-secret`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      };
      if (request.dpop !== undefined)
        headers.dpop = await dpopProof(request.dpop, `${issuer}/token`, 'POST');
      const response = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers,
        body: form,
        signal: AbortSignal.timeout(10_000),
      });
      const body = (await response.json()) as {
        access_token?: string;
        error?: string;
        error_description?: string;
      };
      if (!response.ok || body.access_token === undefined)
        throw new Error(
          `oidc-provider token for "${clientId}": ${response.status} ${body.error ?? ''} ${body.error_description ?? ''}`,
        );
      return body.access_token;
    },
    async backchannelLogout(clientId, sub, sid) {
      const client = await provider!.Client.find(clientId);
      if (client === undefined) throw new Error(`oidc-provider has no client "${clientId}"`);
      await (
        client as unknown as { backchannelLogout(sub: string, sid?: string): Promise<void> }
      ).backchannelLogout(sub, sid);
    },
    kids: () => keys.map((key) => String(key.kid)),
    rotateKeys({ keepOld = false } = {}) {
      const next = signingKey();
      // The new key first, so it is the one that signs; the old one stays only to verify.
      keys = keepOld ? [next, ...keys] : [next];
      build();
    },
    backdateSignIns(seconds) {
      signInAge = seconds;
    },
    setOutage(down) {
      outage = down;
    },
    hits: (path) => counts.get(path) ?? 0,
    async issuedToken(value) {
      const token = await provider!.AccessToken.find(value);
      return token === undefined ? undefined : { accountId: token.accountId, aud: token.aud };
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

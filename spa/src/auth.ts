// OpenID Connect sign-in for a public browser client: authorization code + PKCE (RFC 7636) with
// oauth4webapi, discovery from the configured issuer. The code is redeemed with a DPoP proof
// (RFC 9449) signed by a fresh non-extractable ES256 key, so the access token is bound to a key
// script cannot read out. The resulting session (key included) lives in this page's memory only.
// A step-up sign-in adds the gate's `acr_values` / `max_age` (RFC 9470) to the request, or the
// scopes an `insufficient_scope` challenge named to its own (incremental authorization).
import * as oauth from 'oauth4webapi';
import type { AppConfig } from './config.js';
import { savePendingSignIn, takePendingSignIn, type PendingStepUp } from './pending-sign-in.js';
import { stepUpParameters, stepUpScope } from './step-up.js';

/** What the app keeps after sign-in, only in this page's memory. */
export interface Session {
  readonly accessToken: string;
  /** From `expires_in`; absent when the IdP did not say. */
  readonly expiresAt?: Date;
  readonly subject: string;
  readonly name?: string;
  readonly idToken?: string;
  /** The ID token's `auth_time` (epoch seconds), when the IdP stated when the user signed in. */
  readonly authTime?: number;
  /**
   * The DPoP key handle when the IdP bound the token to it (`token_type: DPoP`). Its private key
   * is a non-extractable CryptoKey: never in storage, gone with the page.
   */
  readonly dpop?: oauth.DPoPHandle;
}

export type SignInErrorCode =
  'idp-unreachable' | 'no-pending-sign-in' | 'refused' | 'exchange-failed';

/** A sign-in that could not finish; `message` is safe to show (never a code or token). */
export class SignInError extends Error {
  readonly code: SignInErrorCode;
  constructor(code: SignInErrorCode, message: string) {
    super(message);
    this.name = 'SignInError';
    this.code = code;
  }
}

/** A completed sign-in, and the step-up it answered when it was one. */
export interface SignedIn {
  readonly session: Session;
  readonly stepUp?: PendingStepUp;
}

export interface AuthEnvironment {
  readonly origin: string;
  readonly storage: Storage;
  readonly now: () => number;
}

/** True when the URL is an authorization response (the IdP sent the browser back to us). */
export function isAuthorizationResponse(url: URL): boolean {
  return url.searchParams.has('code') || url.searchParams.has('error');
}

/**
 * Prepares the client once: client metadata, redirect URI (the app's origin + "/"), and a
 * memoised discovery that is retried after a failure. Plain http is allowed only for the loopback
 * issuers that config parsing lets through.
 */
export function createAuth(config: AppConfig, env: AuthEnvironment) {
  // The clock offset goes into every DPoP proof's `iat` (a browser clock off by minutes would
  // otherwise have each proof refused).
  const client: oauth.Client = {
    client_id: config.clientId,
    ...(config.clockSkewSeconds === undefined
      ? {}
      : { [oauth.clockSkew]: config.clockSkewSeconds }),
  };
  const clientAuth = oauth.None();
  const redirectUri = new URL('/', env.origin).href;
  // RFC 8707 resource indicator and/or Auth0's `audience`, on both requests, so `aud` is the API.
  const apiParameters = Object.fromEntries(
    config.audienceParameters.map((name) => [name, config.audience]),
  );
  const http = config.issuer.protocol === 'http:' ? { [oauth.allowInsecureRequests]: true } : {};
  let discovery: Promise<oauth.AuthorizationServer> | undefined;

  function discover(): Promise<oauth.AuthorizationServer> {
    discovery ??= oauth
      .discoveryRequest(config.issuer, { algorithm: 'oidc', ...http })
      .then((response) => oauth.processDiscoveryResponse(config.issuer, response))
      .catch(() => {
        discovery = undefined;
        throw new SignInError(
          'idp-unreachable',
          'The sign-in service could not be reached. Try again in a moment.',
        );
      });
    return discovery;
  }

  /**
   * Builds the authorization request and remembers its one-time values for the way back. A step-up
   * adds what the gate asked for; `authTime` (the current sign-in's) decides on `prompt=login`.
   */
  async function authorizationUrl(stepUp?: {
    readonly request: PendingStepUp;
    readonly authTime?: number | undefined;
  }): Promise<URL> {
    const as = await discover();
    if (!as.authorization_endpoint) {
      throw new SignInError(
        'idp-unreachable',
        'The sign-in service has no authorization endpoint.',
      );
    }
    const codeVerifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const nonce = oauth.generateRandomNonce();
    const url = new URL(as.authorization_endpoint);
    url.search = new URLSearchParams({
      client_id: config.clientId,
      redirect_uri: redirectUri,
      response_type: 'code',
      scope: stepUp ? stepUpScope(config.scope, stepUp.request) : config.scope,
      ...apiParameters,
      code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      nonce,
      ...(stepUp
        ? stepUpParameters(stepUp.request, stepUp.authTime, Math.floor(env.now() / 1000))
        : {}),
    }).toString();
    savePendingSignIn(env.storage, {
      state,
      nonce,
      codeVerifier,
      startedAt: env.now(),
      ...(stepUp ? { stepUp: stepUp.request } : {}),
    });
    return url;
  }

  /** Validates the authorization response, redeems the code and returns the in-memory session. */
  async function completeSignIn(callbackUrl: URL): Promise<SignedIn> {
    const pending = takePendingSignIn(env.storage, env.now());
    if (!pending) {
      throw new SignInError(
        'no-pending-sign-in',
        'This sign-in was not started from this tab or took too long. Sign in again.',
      );
    }
    const as = await discover();
    let params: URLSearchParams;
    try {
      params = oauth.validateAuthResponse(as, client, callbackUrl, pending.state);
    } catch (error) {
      if (error instanceof oauth.AuthorizationResponseError) {
        throw new SignInError(
          'refused',
          `The sign-in service refused the sign-in (${error.error}).`,
        );
      }
      throw new SignInError(
        'refused',
        'The answer from the sign-in service did not match this sign-in.',
      );
    }
    let result: oauth.TokenEndpointResponse;
    let dpop: oauth.DPoPHandle;
    try {
      dpop = oauth.DPoP(client, await oauth.generateKeyPair('ES256'));
      const redeem = async () =>
        oauth.processAuthorizationCodeResponse(
          as,
          client,
          await oauth.authorizationCodeGrantRequest(
            as,
            client,
            clientAuth,
            params,
            redirectUri,
            pending.codeVerifier,
            { ...http, DPoP: dpop, additionalParameters: apiParameters },
          ),
          {
            expectedNonce: pending.nonce,
            requireIdToken: true,
            // With max_age sent, the ID token must carry an auth_time that meets it (OIDC Core
            // §3.1.3.7): an IdP that ignored it is caught here, not by a second challenge.
            ...(pending.stepUp?.maxAge === undefined ? {} : { maxAge: pending.stepUp.maxAge }),
          },
        );
      try {
        result = await redeem();
      } catch (error) {
        // An IdP that wants a DPoP nonce refuses before it spends the code; the handle has the
        // nonce now, so one retry carries it.
        if (!oauth.isDPoPNonceError(error)) throw error;
        result = await redeem();
      }
    } catch {
      throw new SignInError('exchange-failed', 'Sign-in could not be completed. Sign in again.');
    }
    const claims = oauth.getValidatedIdTokenClaims(result);
    if (!claims?.sub) {
      throw new SignInError('exchange-failed', 'The sign-in service did not name the user.');
    }
    const bound = result.token_type === 'dpop';
    const name = await displayName(as, claims, result.access_token, bound ? dpop : undefined);
    const session: Session = {
      accessToken: result.access_token,
      ...(typeof result.expires_in === 'number'
        ? { expiresAt: new Date(env.now() + result.expires_in * 1000) }
        : {}),
      subject: claims.sub,
      ...(name ? { name } : {}),
      ...(result.id_token ? { idToken: result.id_token } : {}),
      ...(typeof claims.auth_time === 'number' ? { authTime: claims.auth_time } : {}),
      // An IdP without DPoP support answers `token_type: Bearer`; the key is then of no use.
      ...(bound ? { dpop } : {}),
    };
    return { session, ...(pending.stepUp ? { stepUp: pending.stepUp } : {}) };
  }

  /**
   * The `name` claim from the ID token, else from UserInfo (some IdPs put profile claims only
   * there). Best effort: a failing UserInfo call leaves the name out, it does not fail sign-in.
   */
  async function displayName(
    as: oauth.AuthorizationServer,
    claims: oauth.IDToken,
    accessToken: string,
    dpop: oauth.DPoPHandle | undefined,
  ): Promise<string | undefined> {
    const fromIdToken = claims.name ?? claims.preferred_username;
    if (typeof fromIdToken === 'string' && fromIdToken) return fromIdToken;
    if (!as.userinfo_endpoint) return undefined;
    try {
      const response = await oauth.userInfoRequest(as, client, accessToken, {
        ...http,
        ...(dpop ? { DPoP: dpop } : {}),
      });
      const info = await oauth.processUserInfoResponse(as, client, claims.sub, response);
      const fromUserInfo = info.name ?? info.preferred_username;
      return typeof fromUserInfo === 'string' && fromUserInfo ? fromUserInfo : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Where to send the browser to end the IdP session too (RP-initiated logout), or undefined when
   * the IdP offers no end_session_endpoint. Uses metadata already fetched; never fetches.
   */
  async function endSessionUrl(session: Session): Promise<URL | undefined> {
    if (!discovery) return undefined;
    const as = await discovery.catch(() => undefined);
    if (!as?.end_session_endpoint) return undefined;
    const url = new URL(as.end_session_endpoint);
    url.searchParams.set('client_id', config.clientId);
    url.searchParams.set('post_logout_redirect_uri', redirectUri);
    if (session.idToken) url.searchParams.set('id_token_hint', session.idToken);
    return url;
  }

  return { authorizationUrl, completeSignIn, endSessionUrl, redirectUri };
}

export type Auth = ReturnType<typeof createAuth>;

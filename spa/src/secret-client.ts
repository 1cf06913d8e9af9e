// Fetches the caller's secret set from the gate through oauth4webapi, whose parser reads the
// WWW-Authenticate challenges of a refusal (RFC 9470 step-up among them). A DPoP session
// (RFC 9449) sends the token with the `DPoP` scheme and a fresh proof signed by the page's
// non-extractable key, and retries once when the gate asks for a server nonce; a bearer session
// sends `Bearer`.
// Every outcome is a value (entries or a notice); nothing here throws or logs the token.
import * as oauth from 'oauth4webapi';
import { BAD_RESPONSE, NETWORK_FAILURE, describeGateFailure, type Notice } from './gate-answer.js';
import { parseSecretSet, type SecretEntry } from './secret-set.js';

export type SecretResult =
  | { readonly ok: true; readonly entries: readonly SecretEntry[] }
  | { readonly ok: false; readonly notice: Notice };

/** What a request needs from the session: the token and, for a DPoP-bound one, its key handle. */
export interface GateCredentials {
  readonly accessToken: string;
  readonly dpop?: oauth.DPoPHandle | undefined;
}

/** Creates the fetcher once for a gate path (`/secret` or a named set's `/secret/<name>`); each
 * call is one GET (two on a nonce challenge). */
export function createSecretClient(fetchFn: typeof fetch, url: URL) {
  // Cookies must flow both ways (the gate sets CloudFront cookies here) and nothing is cached.
  const gateFetch: typeof fetch = (input, init) =>
    fetchFn(input, { ...init, cache: 'no-store', credentials: 'same-origin' });
  const requestOptions = {
    // Only GETs without a body go through here, so the options map onto RequestInit as they are.
    [oauth.customFetch]: (
      input: string,
      init: oauth.CustomFetchOptions<string, oauth.ProtectedResourceRequestBody>,
    ) =>
      gateFetch(input, {
        method: init.method,
        headers: init.headers,
        redirect: init.redirect,
        signal: init.signal,
      }),
    // The page is already on this origin; plain http only happens on a local gate.
    [oauth.allowInsecureRequests]: url.protocol === 'http:',
  };
  const accept = { Accept: 'application/json' };

  /** The gate's answer, with its WWW-Authenticate challenges parsed when it sent any. */
  async function send(
    credentials: GateCredentials,
  ): Promise<{ response: Response; challenges?: oauth.WWWAuthenticateChallenge[] }> {
    const { accessToken, dpop } = credentials;
    for (let attempt = 0; ; attempt++) {
      try {
        const response = await oauth.protectedResourceRequest(
          accessToken,
          'GET',
          url,
          new Headers(accept),
          null,
          { ...requestOptions, ...(dpop ? { DPoP: dpop } : {}) },
        );
        return { response };
      } catch (error) {
        // The handle has cached the gate's DPoP-Nonce already; one retry carries it.
        if (attempt === 0 && dpop && oauth.isDPoPNonceError(error)) continue;
        if (error instanceof oauth.WWWAuthenticateChallengeError) {
          return { response: error.response, challenges: error.cause };
        }
        throw error;
      }
    }
  }

  return async function fetchSecret(
    credentials: GateCredentials,
    now: () => Date,
  ): Promise<SecretResult> {
    let answer: Awaited<ReturnType<typeof send>>;
    try {
      answer = await send(credentials);
    } catch {
      return { ok: false, notice: NETWORK_FAILURE };
    }
    const { response, challenges } = answer;
    if (!response.ok) {
      // Drain the body so the connection can be reused; its text is never shown.
      await response.body?.cancel().catch(() => undefined);
      const notice = describeGateFailure(
        {
          status: response.status,
          retryAfter: response.headers.get('Retry-After'),
          wwwAuthenticate: response.headers.get('WWW-Authenticate'),
          challenges,
        },
        now(),
      );
      return { ok: false, notice };
    }
    let body: unknown;
    try {
      body = await response.json();
    } catch {
      return { ok: false, notice: BAD_RESPONSE };
    }
    const entries = parseSecretSet(body);
    return entries ? { ok: true, entries } : { ok: false, notice: BAD_RESPONSE };
  };
}

export type FetchSecret = ReturnType<typeof createSecretClient>;

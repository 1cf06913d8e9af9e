// The client an app creates once: it fetches a set from the gate with the token its getter hands
// over (Bearer, or DPoP with a fresh proof per request, RFC 9449), and answers with a value,
// never a throw. oauth4webapi sends the request, signs the proof, retries once on a DPoP nonce
// challenge and parses WWW-Authenticate; this module only turns the answer into a set or an error.
import * as oauth from 'oauth4webapi';
import { ABORTED, BAD_RESPONSE, NETWORK_ERROR, errorFromAnswer } from './gate-error.js';
import type { SecretGateError } from './gate-error.js';
import { gateClock, renewalDelaySeconds, renewalPolicy, type RenewalPolicy } from './renewal.js';
import { readSetBody } from './secret-set.js';
import type { StepUpChallenge } from './step-up.js';

/** The token for one request and, for a DPoP-bound token, the key handle that signs its proof. */
export interface GateCredentials {
  readonly accessToken: string;
  readonly dpop?: oauth.DPoPHandle | undefined;
}

/**
 * Asked before every request, renewals included, so a token the app refreshed is picked up
 * without a new sign-in. A string is a Bearer token; undefined means signed out.
 */
export type CredentialsGetter = () =>
  GateCredentials | string | undefined | Promise<GateCredentials | string | undefined>;

/** A set as the gate handed it over. Times are epoch seconds. */
export interface SecretSet {
  /** The set's name, or undefined for the caller's default set (`/secret`). */
  readonly name: string | undefined;
  /** The values by name, static and minted alike (`expires_at` is not one of them). */
  readonly values: Readonly<Record<string, string>>;
  /** Expiry of each minted value on the gate's clock, as the gate sent it; empty when none. */
  readonly expiresAt: Readonly<Record<string, number>>;
  /** Seconds to add to the page's clock to get the gate's (from its `Date` header). */
  readonly gateClockOffset: number;
  /** When the client will fetch the set again, on the page's clock; absent for a static set. */
  readonly renewAt?: number;
}

export type SetResult =
  | { readonly ok: true; readonly set: SecretSet }
  | { readonly ok: false; readonly error: SecretGateError };

export interface SecretGateClientOptions {
  /** The token getter, asked before each request. */
  readonly getCredentials: CredentialsGetter;
  /** The gate's `/secret` path; relative to the page's location. Default `/secret`. */
  readonly url?: string | URL;
  /** Called with what the gate asks for when a set needs a step-up; the result says it too. */
  readonly onStepUp?: (challenge: StepUpChallenge, set: string | undefined) => void;
  /** When to renew minted values (default: 10 % of their lifetime before expiry, at least 5 s). */
  readonly renewal?: Partial<RenewalPolicy>;
  /** The fetch to use (default: the global one, looked up per call). */
  readonly fetch?: typeof fetch;
  /** The page's clock in milliseconds (default `Date.now`). */
  readonly now?: () => number;
}

export interface FetchSetOptions {
  /** A named set (`/secret/<name>`); absent for the caller's default set. */
  readonly set?: string | undefined;
  readonly signal?: AbortSignal | undefined;
}

// Cookies flow both ways (the gate may set CloudFront cookies) and nothing is cached. `cache` is a
// browser field Node's typings leave out; Node's fetch accepts it.
const BROWSER_INIT = { cache: 'no-store', credentials: 'same-origin' } as RequestInit;

function baseUrl(url: string | URL | undefined): URL {
  const location = (globalThis as { location?: { href: string } }).location;
  try {
    return new URL(url ?? '/secret', location?.href);
  } catch {
    throw new TypeError(
      `secret-gate client: "url" must be absolute outside a page, got "${String(url)}"`,
    );
  }
}

/** Creates the client once; `fetchSet` is one GET (two on a DPoP nonce challenge). */
export function createSecretGateClient(options: SecretGateClientOptions) {
  const base = baseUrl(options.url);
  const now = options.now ?? Date.now;
  const policy = renewalPolicy(options.renewal);
  const fetchFn: typeof fetch = options.fetch ?? ((input, init) => fetch(input, init));
  const requestOptions = {
    [oauth.customFetch]: (
      input: string,
      init: oauth.CustomFetchOptions<string, oauth.ProtectedResourceRequestBody>,
    ) =>
      fetchFn(input, {
        method: init.method,
        headers: init.headers,
        redirect: init.redirect,
        signal: init.signal,
        ...BROWSER_INIT,
      }),
    // Plain http only happens on a local gate; the URL is the app's own choice, not input.
    [oauth.allowInsecureRequests]: base.protocol === 'http:',
  };

  function setUrl(set: string | undefined): URL {
    const path = base.pathname.replace(/\/$/, '');
    return new URL(set === undefined ? path : `${path}/${encodeURIComponent(set)}`, base);
  }

  async function send(credentials: GateCredentials, url: URL, signal: AbortSignal | undefined) {
    const { accessToken, dpop } = credentials;
    const headers = new Headers({ Accept: 'application/json' });
    for (let attempt = 0; ; attempt++) {
      try {
        const response = await oauth.protectedResourceRequest(
          accessToken,
          'GET',
          url,
          headers,
          null,
          {
            ...requestOptions,
            ...(dpop ? { DPoP: dpop } : {}),
            ...(signal ? { signal } : {}),
          },
        );
        return { response, challenges: undefined };
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

  /** Fetches one set: its values and expiries, or what went wrong. Never throws. */
  async function fetchSet(fetchOptions: FetchSetOptions = {}): Promise<SetResult> {
    const { set, signal } = fetchOptions;
    // A getter that fails has no token to give: nothing is sent, as when signed out.
    const given = await Promise.resolve()
      .then(options.getCredentials)
      .catch(() => undefined);
    if (given === undefined || given === '') {
      return { ok: false, error: { code: 'unauthorized', message: 'No access token to send.' } };
    }
    const credentials = typeof given === 'string' ? { accessToken: given } : given;
    let answer: Awaited<ReturnType<typeof send>>;
    try {
      answer = await send(credentials, setUrl(set), signal);
    } catch {
      return { ok: false, error: signal?.aborted ? ABORTED : NETWORK_ERROR };
    }
    const { response, challenges } = answer;
    const pageNowMs = now();
    if (!response.ok) {
      // Only a 502 body is read (the gate's mint reason); others are drained, never shown.
      const body =
        response.status === 502
          ? await response.json().catch(() => undefined)
          : await response.body?.cancel().catch(() => undefined);
      const error = errorFromAnswer(
        {
          status: response.status,
          retryAfter: response.headers.get('Retry-After'),
          challenges,
          body,
        },
        pageNowMs,
      );
      if (error.stepUp) options.onStepUp?.(error.stepUp, set);
      return { ok: false, error };
    }
    let parsed: unknown;
    try {
      parsed = await response.json();
    } catch {
      return { ok: false, error: signal?.aborted ? ABORTED : BAD_RESPONSE };
    }
    const body = readSetBody(parsed);
    if (!body) return { ok: false, error: BAD_RESPONSE };
    const gateNow = gateClock(response.headers.get('Date'), pageNowMs);
    const gateClockOffset = gateNow - Math.floor(pageNowMs / 1000);
    const delay = renewalDelaySeconds(body.expiresAt, gateNow, policy);
    return {
      ok: true,
      set: {
        name: set,
        ...body,
        gateClockOffset,
        ...(delay === undefined ? {} : { renewAt: pageNowMs / 1000 + delay }),
      },
    };
  }

  return { fetchSet };
}

export type SecretGateClient = ReturnType<typeof createSecretGateClient>;

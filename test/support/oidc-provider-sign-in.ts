// How node-oidc-provider's users sign in for the step-up suites (RFC 9470): two levels
// (`acrValues`), a login prompt whenever the session's level is not one the request's
// `acr_values` names, the login finished by the harness with the level the request asked for,
// and `acr` / `amr` / `auth_time` copied into its JWT access tokens. The provider's development
// login page stays the face of it; only its answer is the harness's:
// - `acr_values` naming `urn:secret-gate:mfa`: the second factor is taken as done,
//   acr `urn:secret-gate:mfa`, amr ["pwd", "otp"];
// - anything else: acr `urn:secret-gate:password`, amr ["pwd"].
import type { IncomingMessage, ServerResponse } from 'node:http';
import type Provider from 'oidc-provider';
import { interactionPolicy, type KoaContextWithOIDC } from 'oidc-provider';

export const ACR_PASSWORD = 'urn:secret-gate:password';
export const ACR_MFA = 'urn:secret-gate:mfa';
/** The provider's `acrValues` (discovery's `acr_values_supported`), weakest first. */
export const ACR_VALUES = [ACR_PASSWORD, ACR_MFA] as const;

const requestedAcrs = (value: unknown): string[] =>
  typeof value === 'string' ? value.split(' ').filter(Boolean) : [];

/**
 * The default interaction policy plus one login check: `acr_values` are voluntary in OIDC Core and
 * the provider does not prompt for them, but a step-up needs the stronger sign-in, not the session
 * it already has (Keycloak and Auth0 step up the same way).
 */
export function stepUpPolicy(): interactionPolicy.Prompt[] {
  const policy = interactionPolicy.base();
  policy.get('login')?.checks.add(
    new interactionPolicy.Check(
      'acr_values_not_met',
      'the requested authentication level is not the session one',
      (ctx) => {
        const requested = requestedAcrs(ctx.oidc.params?.acr_values);
        const met = requested.length === 0 || requested.includes(ctx.oidc.session?.acr ?? '');
        return met
          ? interactionPolicy.Check.NO_NEED_TO_PROMPT
          : interactionPolicy.Check.REQUEST_PROMPT;
      },
    ),
  );
  return policy;
}

/** `acr`, `amr` and `auth_time` of the sign-in behind a user's access token (none for a client's). */
export function signInClaims(ctx: KoaContextWithOIDC): Record<string, unknown> | undefined {
  const code = ctx.oidc.entities.AuthorizationCode;
  if (code === undefined) return undefined;
  return {
    ...(code.acr === undefined ? {} : { acr: code.acr }),
    ...(code.amr === undefined ? {} : { amr: code.amr }),
    ...(code.authTime === undefined ? {} : { auth_time: code.authTime }),
  };
}

async function formOf(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/**
 * Finishes a login submitted on the development login page (POST /interaction/:uid) with the
 * level the authorization request asked for, signed in `ageSeconds()` ago. Resolves false, body
 * untouched, for any other interaction (consent), which the provider's own page handles.
 */
export function createLoginFinisher(provider: () => Provider, ageSeconds: () => number) {
  return async function finishLogin(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const current = provider();
    const details = await current.interactionDetails(req, res);
    if (details.prompt.name !== 'login') return false;
    const login = (await formOf(req)).get('login') || 'dana';
    const mfa = requestedAcrs(details.params.acr_values).includes(ACR_MFA);
    await current.interactionFinished(
      req,
      res,
      {
        login: {
          accountId: login,
          acr: mfa ? ACR_MFA : ACR_PASSWORD,
          amr: mfa ? ['pwd', 'otp'] : ['pwd'],
          ts: Math.floor(Date.now() / 1000) - ageSeconds(),
        },
      },
      { mergeWithLastSubmission: false },
    );
    return true;
  };
}

export interface CodeSignIn {
  readonly issuer: string;
  readonly clientId: string;
  readonly redirectUri: string;
  readonly resource: string;
  readonly scope?: string;
  readonly acrValues?: string;
  readonly maxAge?: number;
}

/** A cookie jar of one: the provider's session and interaction cookies, by name. */
function jar() {
  const cookies = new Map<string, string>();
  return {
    header: () => [...cookies].map(([name, value]) => `${name}=${value}`).join('; '),
    keep(response: Response) {
      for (const line of response.headers.getSetCookie()) {
        const [pair = '', ...attributes] = line.split(';');
        const at = pair.indexOf('=');
        const name = pair.slice(0, at).trim();
        const expired = attributes.some((a) => /^\s*expires=Thu, 01 Jan 1970/i.test(a));
        if (expired) cookies.delete(name);
        else cookies.set(name, pair.slice(at + 1));
      }
    },
  };
}

/**
 * The authorization code flow (PKCE, RFC 8707 `resource`) as a browser would run it against the
 * development login and consent pages, without a browser: each redirect followed by hand with the
 * provider's cookies, the login form answered for "dana", consent given. Resolves to the access
 * token the public client redeems (Bearer: no DPoP proof on the token request).
 */
export async function signInWithCode(request: CodeSignIn): Promise<string> {
  const cookies = jar();
  const verifier = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url');
  const challenge = Buffer.from(
    await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)),
  ).toString('base64url');
  const start = new URL(`${request.issuer}/auth`);
  start.search = new URLSearchParams({
    client_id: request.clientId,
    redirect_uri: request.redirectUri,
    response_type: 'code',
    scope: request.scope ?? 'openid secrets:read',
    resource: request.resource,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...(request.acrValues === undefined ? {} : { acr_values: request.acrValues }),
    ...(request.maxAge === undefined ? {} : { max_age: String(request.maxAge) }),
  }).toString();
  let next: { url: URL; form?: URLSearchParams } = { url: start };
  for (let step = 0; step < 12; step++) {
    const response = await fetch(next.url, {
      method: next.form ? 'POST' : 'GET',
      redirect: 'manual',
      headers: { cookie: cookies.header() },
      ...(next.form ? { body: next.form } : {}),
      signal: AbortSignal.timeout(10_000),
    });
    cookies.keep(response);
    const location = response.headers.get('location');
    if (location !== null) {
      const target = new URL(location, next.url);
      if (target.href.startsWith(request.redirectUri)) return redeem(request, target, verifier);
      next = { url: target };
      continue;
    }
    // An interaction page: its form names the prompt it asks for (login, then consent).
    const page = await response.text();
    const prompt = /name="prompt" value="(\w+)"/.exec(page)?.[1];
    if (response.status !== 200 || prompt === undefined)
      throw new Error(`oidc-provider sign-in stopped at ${next.url.pathname}: ${response.status}`);
    next = {
      url: next.url,
      form: new URLSearchParams(
        prompt === 'login' ? { prompt, login: 'dana', password: 'any' } : { prompt },
      ),
    };
  }
  throw new Error('oidc-provider sign-in did not come back to the redirect URI');
}

async function redeem(request: CodeSignIn, callback: URL, verifier: string): Promise<string> {
  const code = callback.searchParams.get('code');
  if (code === null)
    throw new Error(`oidc-provider refused the sign-in: ${callback.searchParams.get('error')}`);
  const response = await fetch(`${request.issuer}/token`, {
    method: 'POST',
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: request.redirectUri,
      code_verifier: verifier,
      client_id: request.clientId,
      resource: request.resource,
    }),
    signal: AbortSignal.timeout(10_000),
  });
  const body = (await response.json()) as { access_token?: string; error?: string };
  if (body.access_token === undefined)
    throw new Error(`oidc-provider token: ${response.status} ${body.error ?? ''}`);
  return body.access_token;
}

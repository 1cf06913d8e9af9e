// The dev IdP as its clients see it: a real OIDC provider on a loopback port, driven with
// oauth4webapi (the SPA's flow) and checked with jose (the verifier's view of its tokens).
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeProtectedHeader,
  jwtVerify,
  type JSONWebKeySet,
} from 'jose';
import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadIdpConfig } from './config.js';
import { startIdp, type Idp } from './server.js';

const REDIRECT_URI = 'http://127.0.0.1:5173/callback';
const insecure = { [oauth.allowInsecureRequests]: true };

let idp: Idp;
let base: string;

beforeAll(async () => {
  idp = await startIdp(loadIdpConfig({ IDP_PORT: '0' }));
  base = idp.issuer;
});
afterAll(() => idp.close());

async function post(
  path: string,
  form: Record<string, string>,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    body: new URLSearchParams(form),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function control(path: string, body: unknown = {}): Promise<Record<string, unknown>> {
  const response = await fetch(`${base}/dev/${path}`, {
    method: 'POST',
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as Record<string, unknown>;
}

async function clientCredentials(clientId = 'spa-demo', scope = 'secrets:read'): Promise<string> {
  const { status, body } = await post('/token', {
    grant_type: 'client_credentials',
    client_id: clientId,
    scope,
  });
  expect(status).toBe(200);
  return body.access_token as string;
}

async function verifyAccessToken(token: string) {
  return jwtVerify(token, createRemoteJWKSet(new URL(`${base}/jwks`)), {
    issuer: base,
    audience: 'secret-gate-api',
    typ: 'at+jwt',
    algorithms: ['RS256', 'ES256'],
  });
}

/** Starts an authorization request and returns the code from the redirect. */
async function authorize(params: Record<string, string>): Promise<Response> {
  const url = new URL(`${base}/authorize`);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return fetch(url, { redirect: 'manual' });
}

async function pkceCode(verifier: string, clientId = 'spa-demo'): Promise<string> {
  const response = await authorize({
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    response_type: 'code',
    scope: 'openid secrets:read',
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  expect(response.status).toBe(302);
  return new URL(response.headers.get('location') ?? '').searchParams.get('code') ?? '';
}

describe('discovery and keys', () => {
  it('publishes its issuer as http://127.0.0.1:<port> with a JWKS holding an RS256 and an ES256 key', async () => {
    const discovery = (await (
      await fetch(`${base}/.well-known/openid-configuration`)
    ).json()) as Record<string, string>;
    expect(discovery.issuer).toBe(`http://127.0.0.1:${idp.port}`);
    expect(discovery.jwks_uri).toBe(`${base}/jwks`);
    const jwks = (await (await fetch(`${base}/jwks`)).json()) as JSONWebKeySet;
    expect(jwks.keys.map((key) => key.alg).sort()).toEqual(['ES256', 'RS256']);
    for (const key of jwks.keys) expect(key).not.toHaveProperty('d');
  });
});

describe('client-credentials grant', () => {
  it('gives spa-demo an RFC 9068 access token for the API audience with the requested scope', async () => {
    const token = await clientCredentials('spa-demo', 'secrets:read');
    const { payload, protectedHeader } = await verifyAccessToken(token);
    expect(protectedHeader).toMatchObject({ alg: 'RS256', typ: 'at+jwt', kid: idp.keys.activeKid });
    expect(payload).toMatchObject({
      iss: base,
      aud: 'secret-gate-api',
      sub: 'spa-demo',
      client_id: 'spa-demo',
      azp: 'spa-demo',
      scope: 'secrets:read',
    });
    expect(typeof payload.jti).toBe('string');
  });

  it('gives partner-app a token naming partner-app', async () => {
    const { payload } = await verifyAccessToken(await clientCredentials('partner-app'));
    expect(payload).toMatchObject({
      client_id: 'partner-app',
      azp: 'partner-app',
      sub: 'partner-app',
    });
  });

  it('always signs with the active RS256 key, never round-robin with the ES256 key', async () => {
    const tokens = await Promise.all([1, 2, 3, 4].map(() => clientCredentials()));
    expect(new Set(tokens.map((token) => decodeProtectedHeader(token).alg))).toEqual(
      new Set(['RS256']),
    );
  });

  it('refuses an unknown client with 401 invalid_client and no token', async () => {
    const { status, body } = await post('/token', {
      grant_type: 'client_credentials',
      client_id: 'intruder',
    });
    expect(status).toBe(401);
    expect(body).toEqual({ error: 'invalid_client', error_description: 'unknown "client_id"' });
  });

  it.each(['password', 'refresh_token'])('refuses the %s grant', async (grant) => {
    const { status, body } = await post('/token', {
      grant_type: grant,
      client_id: 'spa-demo',
      username: 'x',
      refresh_token: 'x',
    });
    expect(status).toBe(400);
    expect(body.error).toBe('unsupported_grant_type');
    expect(body).not.toHaveProperty('access_token');
  });
});

describe('authorization code + PKCE (the SPA flow)', () => {
  it('completes with oauth4webapi and yields an access token for the signed-in user', async () => {
    const as = await oauth.processDiscoveryResponse(
      new URL(base),
      await oauth.discoveryRequest(new URL(base), insecure),
    );
    const client = { client_id: 'spa-demo' };
    const verifier = oauth.generateRandomCodeVerifier();
    const code = await pkceCode(verifier);
    const callback = oauth.validateAuthResponse(
      as,
      client,
      new URL(`${REDIRECT_URI}?code=${code}`),
      oauth.expectNoState,
    );
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      oauth.None(),
      callback,
      REDIRECT_URI,
      verifier,
      insecure,
    );
    const result = await oauth.processAuthorizationCodeResponse(as, client, response);
    expect(result.refresh_token).toBeUndefined();
    const { payload } = await verifyAccessToken(result.access_token);
    expect(payload).toMatchObject({
      sub: 'demo-user',
      client_id: 'spa-demo',
      azp: 'spa-demo',
      scope: 'openid secrets:read',
    });
    expect(oauth.getValidatedIdTokenClaims(result)).toMatchObject({
      sub: 'demo-user',
      name: 'Dana Demo',
      aud: 'spa-demo',
    });

    const userinfo = await oauth.userInfoRequest(as, client, result.access_token, insecure);
    expect(await oauth.processUserInfoResponse(as, client, 'demo-user', userinfo)).toEqual({
      sub: 'demo-user',
      name: 'Dana Demo',
    });
  });

  it('answers UserInfo without a bearer token with 401', async () => {
    const response = await fetch(`${base}/userinfo`);
    expect(response.status).toBe(401);
  });

  const redeem = (code: string, extra: Record<string, string>) =>
    post('/token', {
      grant_type: 'authorization_code',
      client_id: 'spa-demo',
      code,
      redirect_uri: REDIRECT_URI,
      ...extra,
    });

  it('refuses a code redeemed without code_verifier (the check oauth2-mock-server skips)', async () => {
    const code = await pkceCode(oauth.generateRandomCodeVerifier());
    const { status, body } = await redeem(code, {});
    expect(status).toBe(400);
    expect(body).toEqual({
      error: 'invalid_request',
      error_description: '"code_verifier" is missing or malformed',
    });
  });

  it('refuses a code_verifier that does not match the challenge', async () => {
    const code = await pkceCode(oauth.generateRandomCodeVerifier());
    const { status, body } = await redeem(code, {
      code_verifier: oauth.generateRandomCodeVerifier(),
    });
    expect(status).toBe(400);
    expect(body).not.toHaveProperty('access_token');
  });

  it('redeems a code once only', async () => {
    const verifier = oauth.generateRandomCodeVerifier();
    const code = await pkceCode(verifier);
    expect((await redeem(code, { code_verifier: verifier })).status).toBe(200);
    const again = await redeem(code, { code_verifier: verifier });
    expect(again.status).toBe(400);
    expect(again.body).not.toHaveProperty('access_token');
  });

  it('refuses a code that was never issued', async () => {
    const { status, body } = await redeem('made-up-code', {
      code_verifier: oauth.generateRandomCodeVerifier(),
    });
    expect(status).toBe(400);
    expect(body).not.toHaveProperty('access_token');
  });

  it('refuses a code redeemed by another client', async () => {
    const verifier = oauth.generateRandomCodeVerifier();
    const code = await pkceCode(verifier);
    const { status, body } = await redeem(code, {
      code_verifier: verifier,
      client_id: 'partner-app',
    });
    expect(status).toBe(400);
    expect(body).toMatchObject({
      error: 'invalid_grant',
      error_description: '"code" was issued to another client',
    });
  });

  it.each([
    ['no code_challenge', { code_challenge: '', code_challenge_method: '' }, 'invalid_request'],
    ['the plain method', { code_challenge_method: 'plain' }, 'invalid_request'],
    ['an unknown client', { client_id: 'intruder' }, 'unauthorized_client'],
    ['a redirect_uri off loopback', { redirect_uri: 'https://evil.example/cb' }, 'invalid_request'],
  ])('refuses an authorization request with %s', async (_name, change, error) => {
    const response = await authorize({
      client_id: 'spa-demo',
      redirect_uri: REDIRECT_URI,
      response_type: 'code',
      code_challenge: 'x'.repeat(43),
      code_challenge_method: 'S256',
      ...change,
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toBe(error);
  });
});

describe('dev control API', () => {
  it('rotates the signing key and keeps the old one published by default', async () => {
    const before = await clientCredentials();
    const rotated = await control('rotate');
    const after = await clientCredentials();
    expect(decodeProtectedHeader(after).kid).toBe(rotated.kid);
    expect(decodeProtectedHeader(before).kid).not.toBe(rotated.kid);
    await expect(verifyAccessToken(before)).resolves.toBeDefined();
    await expect(verifyAccessToken(after)).resolves.toBeDefined();
  });

  it('drops the previous signing key when keepPrevious is false', async () => {
    const before = await clientCredentials();
    const oldKid = decodeProtectedHeader(before).kid;
    const rotated = await control('rotate', { keepPrevious: false });
    expect(rotated.dropped).toBe(oldKid);
    const jwks = (await (await fetch(`${base}/jwks`)).json()) as JSONWebKeySet;
    expect(jwks.keys.map((key) => key.kid)).not.toContain(oldKid);
    await expect(jwtVerify(before, createLocalJWKSet(jwks))).rejects.toThrow();
  });

  it('merges queued claims into the next token only', async () => {
    await control('next-token-claims', { claims: { scope: 'other:scope', tenant: 't1' } });
    const shaped = (await verifyAccessToken(await clientCredentials())).payload;
    const plain = (await verifyAccessToken(await clientCredentials())).payload;
    expect(shaped).toMatchObject({ scope: 'other:scope', tenant: 't1' });
    expect(plain.scope).toBe('secrets:read');
    expect(plain).not.toHaveProperty('tenant');
  });

  it('mints tokens with chosen claims, algorithm and lifetime', async () => {
    const { access_token } = await control('token', {
      clientId: 'partner-app',
      alg: 'ES256',
      claims: { scope: null },
    });
    const { payload, protectedHeader } = await verifyAccessToken(access_token as string);
    expect(protectedHeader.alg).toBe('ES256');
    expect(payload.client_id).toBe('partner-app');
    expect(payload).not.toHaveProperty('scope');
    const expired = await control('token', { expiresIn: -120 });
    await expect(verifyAccessToken(expired.access_token as string)).rejects.toThrow(/exp/);
  });

  it('answers bad control input with 400 and the field name', async () => {
    const response = await fetch(`${base}/dev/rotate`, { method: 'POST', body: '{"alg":"HS256"}' });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error_description: string }).error_description).toMatch(
      /"alg"/,
    );
  });

  it('counts JWKS fetches and issued tokens', async () => {
    await control('stats/reset');
    await fetch(`${base}/jwks`);
    await clientCredentials();
    const stats = (await (await fetch(`${base}/dev/stats`)).json()) as Record<string, number>;
    expect(stats).toMatchObject({ jwksFetches: 1, tokensIssued: 1, tokenErrors: 0 });
  });

  it('simulates an outage: 503 or reset connections, the control API still answers', async () => {
    await control('outage', { mode: 'error' });
    expect((await fetch(`${base}/jwks`)).status).toBe(503);
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
    await control('outage', { mode: 'reset' });
    await expect(fetch(`${base}/jwks`)).rejects.toThrow();
    await control('outage', { mode: 'up' });
    expect((await fetch(`${base}/jwks`)).status).toBe(200);
  });
});

describe('production-like runs', () => {
  it('has no control API when IDP_DEV_CONTROL=off', async () => {
    const locked = await startIdp(loadIdpConfig({ IDP_PORT: '0', IDP_DEV_CONTROL: 'off' }));
    try {
      const response = await fetch(`${locked.issuer}/dev/token`, { method: 'POST', body: '{}' });
      expect(response.status).toBe(404);
      expect(await response.text()).not.toContain('access_token');
    } finally {
      await locked.close();
    }
  });
});

describe('configuration', () => {
  it('reports every bad IDP_ variable in one TypeError', () => {
    expect(() =>
      loadIdpConfig({ IDP_PORT: 'x', IDP_ISSUER: 'ftp://a', IDP_DEV_CONTROL: 'maybe' }),
    ).toThrow(
      new TypeError(
        'invalid dev IdP configuration: "IDP_PORT" must be an integer from 0 to 65535; "IDP_ISSUER" must be an http(s) URL; "IDP_DEV_CONTROL" must be on or off',
      ),
    );
  });

  it('defaults to port 8081, audience secret-gate-api and the two demo clients', () => {
    expect(loadIdpConfig({})).toMatchObject({
      port: 8081,
      host: '127.0.0.1',
      audience: 'secret-gate-api',
      clients: ['spa-demo', 'partner-app'],
      control: true,
    });
  });
});

// The dev IdP's sign-in levels: acr_values decide acr/amr, auth_time is the request's time, and
// both tokens of the code flow say so (the verifier's step-up policies read the access token's).
import { decodeJwt } from 'jose';
import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadIdpConfig } from './config.js';
import { startIdp, type Idp } from './server.js';
import { ACR_MFA, ACR_PASSWORD, authenticate } from './sign-in.js';

const REDIRECT_URI = 'http://127.0.0.1:5173/callback';
const insecure = { [oauth.allowInsecureRequests]: true };
const NOW = 1_750_000_000;

describe('authenticate', () => {
  it.each([
    ['', ACR_PASSWORD, ['pwd']],
    [ACR_PASSWORD, ACR_PASSWORD, ['pwd']],
    ['urn:other:level', ACR_PASSWORD, ['pwd']],
    [ACR_MFA, ACR_MFA, ['pwd', 'otp']],
    [`urn:other:level ${ACR_MFA}`, ACR_MFA, ['pwd', 'otp']],
  ])('signs in with acr_values %j at %s, amr %j, auth_time now', (acrValues, acr, amr) => {
    const query = new URLSearchParams(acrValues ? { acr_values: acrValues } : {});
    expect(authenticate(query, NOW)).toEqual({ acr, amr, authTime: NOW });
  });

  it.each([['max_age=0'], ['max_age=300'], ['prompt=login']])(
    'meets %s with a sign-in made now',
    (query) => {
      expect(authenticate(new URLSearchParams(query), NOW).authTime).toBe(NOW);
    },
  );
});

describe('the code flow through the dev IdP', () => {
  let idp: Idp;
  let as: oauth.AuthorizationServer;
  const client = { client_id: 'spa-demo' };

  beforeAll(async () => {
    idp = await startIdp(loadIdpConfig({ IDP_PORT: '0' }));
    const issuer = new URL(idp.issuer);
    as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, insecure),
    );
  });
  afterAll(() => idp?.close());

  async function signIn(extra: Record<string, string>) {
    const verifier = oauth.generateRandomCodeVerifier();
    const nonce = oauth.generateRandomNonce();
    const url = new URL(`${idp.issuer}/authorize`);
    url.search = new URLSearchParams({
      client_id: client.client_id,
      redirect_uri: REDIRECT_URI,
      response_type: 'code',
      scope: 'openid secrets:read',
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      nonce,
      ...extra,
    }).toString();
    const redirect = await fetch(url, { redirect: 'manual' });
    const callback = oauth.validateAuthResponse(
      as,
      client,
      new URL(redirect.headers.get('location') ?? ''),
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
    const maxAge = extra.max_age === undefined ? {} : { maxAge: Number(extra.max_age) };
    const result = await oauth.processAuthorizationCodeResponse(as, client, response, {
      expectedNonce: nonce,
      requireIdToken: true,
      ...maxAge,
    });
    return { access: decodeJwt(result.access_token), id: oauth.getValidatedIdTokenClaims(result) };
  }

  it('gives a sign-in without acr_values the password level in both tokens', async () => {
    const before = Math.floor(Date.now() / 1000);
    const { access, id } = await signIn({});
    for (const claims of [access, id]) {
      expect(claims).toMatchObject({ acr: ACR_PASSWORD, amr: ['pwd'] });
      expect(claims?.auth_time).toBeGreaterThanOrEqual(before);
    }
  });

  it('performs the second factor for acr_values urn:secret-gate:mfa, with max_age=0 and prompt=login met', async () => {
    const before = Math.floor(Date.now() / 1000);
    const { access, id } = await signIn({ acr_values: ACR_MFA, max_age: '0', prompt: 'login' });
    for (const claims of [access, id]) {
      expect(claims).toMatchObject({ acr: ACR_MFA, amr: ['pwd', 'otp'] });
      expect(claims?.auth_time).toBeGreaterThanOrEqual(before);
    }
  });

  it('puts no sign-in claims into a client-credentials token', async () => {
    const response = await fetch(`${idp.issuer}/token`, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: 'spa-demo',
        scope: 'secrets:read',
      }),
    });
    const claims = decodeJwt(((await response.json()) as { access_token: string }).access_token);
    expect(claims).not.toHaveProperty('acr');
    expect(claims).not.toHaveProperty('amr');
    expect(claims).not.toHaveProperty('auth_time');
  });

  it('lets a test make the next access token look signed in long ago', async () => {
    const longAgo = Math.floor(Date.now() / 1000) - 3600;
    const queued = await fetch(`${idp.issuer}/dev/next-token-claims`, {
      method: 'POST',
      body: JSON.stringify({ claims: { auth_time: longAgo } }),
    });
    expect(queued.status).toBe(200);
    const { access } = await signIn({});
    expect(access.auth_time).toBe(longAgo);
  });
});

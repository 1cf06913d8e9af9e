// DPoP-bound tokens from the dev IdP (RFC 9449 §5): a valid proof at /token binds the access token
// to the proof key, for the client-credentials and the authorization-code grant.
import { calculateJwkThumbprint, createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signProof, thumbprintOf, unsignedProof } from '../verifier/src/testing/dpop-proof.js';
import { loadIdpConfig } from './config.js';
import { startIdp, type Idp } from './server.js';

const REDIRECT_URI = 'http://127.0.0.1:5173/callback';
const insecure = { [oauth.allowInsecureRequests]: true };
let idp: Idp;
let tokenUrl: string;

beforeAll(async () => {
  idp = await startIdp(loadIdpConfig({ IDP_PORT: '0' }));
  tokenUrl = `${idp.issuer}/token`;
});
afterAll(() => idp.close());

async function clientCredentials(dpop?: string) {
  const response = await fetch(tokenUrl, {
    method: 'POST',
    headers: dpop === undefined ? {} : { DPoP: dpop },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: 'spa-demo',
      scope: 'secrets:read',
    }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('DPoP at the dev IdP token endpoint', () => {
  it('binds a client-credentials token to the proof key: cnf.jkt and token_type DPoP', async () => {
    const { status, body } = await clientCredentials(
      await signProof({ htm: 'POST', htu: tokenUrl }),
    );
    expect(status).toBe(200);
    expect(body.token_type).toBe('DPoP');
    const { payload } = await jwtVerify(
      body.access_token as string,
      createRemoteJWKSet(new URL(`${idp.issuer}/jwks`)),
      { issuer: idp.issuer, audience: 'secret-gate-api' },
    );
    expect(payload.cnf).toEqual({ jkt: await thumbprintOf('ec') });
  });

  it('keeps a token requested without a proof a bearer token', async () => {
    const { status, body } = await clientCredentials();
    expect(status).toBe(200);
    expect(body.token_type).toBe('Bearer');
    expect(decodeJwt(body.access_token as string)).not.toHaveProperty('cnf');
  });

  it.each([
    ['a proof for another URL', () => signProof({ htm: 'POST', htu: 'http://127.0.0.1:1/token' })],
    ['a proof for GET', () => signProof({ htm: 'GET', htu: tokenUrl })],
    ['an old proof', () => signProof({ htm: 'POST', htu: tokenUrl, iat: Date.now() / 1000 - 600 })],
    ['an unsigned proof', async () => unsignedProof({ htm: 'POST', htu: tokenUrl })],
    ['garbage', async () => 'not-a-proof'],
  ])('refuses %s with invalid_dpop_proof and no token', async (_, makeProof) => {
    const { status, body } = await clientCredentials(await makeProof());
    expect(status).toBe(400);
    expect(body.error).toBe('invalid_dpop_proof');
    expect(body).not.toHaveProperty('access_token');
  });

  it('refuses a proof used twice', async () => {
    const proof = await signProof({ htm: 'POST', htu: tokenUrl });
    expect((await clientCredentials(proof)).status).toBe(200);
    const again = await clientCredentials(proof);
    expect(again.status).toBe(400);
    expect(again.body.error_description).toBe('the DPoP proof was used before');
  });

  it('binds an authorization-code token when oauth4webapi sends a DPoP proof', async () => {
    const as = await oauth.processDiscoveryResponse(
      new URL(idp.issuer),
      await oauth.discoveryRequest(new URL(idp.issuer), insecure),
    );
    const client = { client_id: 'spa-demo' };
    const keyPair = await oauth.generateKeyPair('ES256');
    const DPoP = oauth.DPoP({}, keyPair);
    const verifier = oauth.generateRandomCodeVerifier();
    const authorize = new URL(`${idp.issuer}/authorize`);
    authorize.search = new URLSearchParams({
      client_id: 'spa-demo',
      redirect_uri: REDIRECT_URI,
      response_type: 'code',
      scope: 'openid secrets:read',
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();
    const redirect = await fetch(authorize, { redirect: 'manual' });
    const code = new URL(redirect.headers.get('location') ?? '').searchParams.get('code') ?? '';
    const params = oauth.validateAuthResponse(
      as,
      client,
      new URL(`${REDIRECT_URI}?code=${code}`),
      oauth.expectNoState,
    );
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      oauth.None(),
      params,
      REDIRECT_URI,
      verifier,
      { ...insecure, DPoP },
    );
    const result = await oauth.processAuthorizationCodeResponse(as, client, response);
    expect(result.token_type).toBe('dpop');
    const jwk = await crypto.subtle.exportKey('jwk', keyPair.publicKey);
    expect(decodeJwt(result.access_token).cnf).toEqual({
      jkt: await calculateJwkThumbprint(jwk as never),
    });
  });
});

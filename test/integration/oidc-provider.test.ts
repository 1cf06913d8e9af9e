// A certified OpenID Provider (node-oidc-provider) as the gate's IdP, through the real NGINX and
// the real verifier started by the runner behind `npm start -- --issuer`: RFC 9068 JWT access
// tokens from client credentials with a resource indicator, two clients with their own secret
// sets, DPoP-bound tokens (proofs by panva's `dpop`), key rotation, and the provider down while
// the verifier keeps serving from its cached key set.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../stack/start-stack.js';
import { startSuiteStack } from '../support/local-target.js';
import {
  dpopProof,
  generateDpopKeyPair,
  startOidcProvider,
  type OidcProviderHarness,
} from '../support/oidc-provider.js';

const SETS = {
  default: { 'x-api-key': 'op-default-key' },
  clients: {
    'spa-demo': { 'x-api-key': 'op-spa-demo-key' },
    'partner-app': { 'x-api-key': 'op-partner-key' },
  },
};

let provider: OidcProviderHarness;
let stack: Stack;
let scratch: string;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'sg-oidc-provider-'));
  provider = await startOidcProvider();
  const secretsFile = join(scratch, 'secrets.json');
  writeFileSync(secretsFile, JSON.stringify(SETS));
  stack = await startSuiteStack({
    secretsFile,
    ownIdp: {
      issuer: provider.issuer,
      audience: provider.resource,
      // No JWKS URL: the verifier finds it through the provider's discovery document.
      preset: 'rfc9068',
      clientId: 'spa-demo',
    },
  });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  await provider?.close();
  rmSync(scratch, { recursive: true, force: true });
});

const secret = (headers: Record<string, string> = {}) => fetch(stack.urls.secret, { headers });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Polls until `check` holds (the edge cache may keep an earlier answer for a few seconds). */
async function eventually(check: () => Promise<boolean>, ms = 15_000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return false;
}

describe.sequential('secret-gate with node-oidc-provider as the IdP', () => {
  it('is issued RFC 9068 access tokens: at+jwt, client_id, scope, aud = the resource', async () => {
    const token = await provider.token('spa-demo');
    expect(decodeProtectedHeader(token)).toMatchObject({ typ: 'at+jwt', alg: 'ES256' });
    expect(decodeJwt(token)).toMatchObject({
      iss: provider.issuer,
      aud: provider.resource,
      client_id: 'spa-demo',
      scope: 'secrets:read',
    });
    expect(stack.isRunning('idp')).toBe(false);
  });

  it('serves each client its own set, and no secret without a token', async () => {
    const spa = await secret(bearer(await provider.token('spa-demo')));
    expect(spa.status).toBe(200);
    expect(await spa.json()).toEqual(SETS.clients['spa-demo']);
    const partner = await secret(bearer(await provider.token('partner-app')));
    expect(partner.status).toBe(200);
    expect(await partner.json()).toEqual(SETS.clients['partner-app']);
    const none = await secret();
    expect(none.status).toBe(401);
    expect(await none.text()).not.toContain('op-');
  });

  it('answers 403 insufficient_scope to a token granted only openid', async () => {
    const response = await secret(bearer(await provider.token('spa-demo', { scope: 'openid' })));
    expect(response.status).toBe(403);
    expect(response.headers.get('www-authenticate')).toContain('insufficient_scope');
  });

  it('serves a DPoP-bound token with a proof of its key, and refuses it as Bearer or with another key', async () => {
    const keys = await generateDpopKeyPair();
    const token = await provider.token('partner-app', { dpop: keys });
    expect(decodeJwt(token).cnf).toEqual({ jkt: expect.any(String) });
    const proved = await secret({
      authorization: `DPoP ${token}`,
      dpop: await dpopProof(keys, stack.urls.secret, 'GET', token),
    });
    expect(proved.status).toBe(200);
    expect(await proved.json()).toEqual(SETS.clients['partner-app']);

    expect((await secret(bearer(token))).status).toBe(401);
    const stranger = await generateDpopKeyPair();
    const wrongKey = await secret({
      authorization: `DPoP ${token}`,
      dpop: await dpopProof(stranger, stack.urls.secret, 'GET', token),
    });
    expect(wrongKey.status).toBe(401);
    expect(await wrongKey.text()).not.toContain('op-');
  });

  it('keeps serving from its cached key set while the provider is down', async () => {
    const token = await provider.token('spa-demo');
    provider.setOutage(true);
    try {
      const before = provider.hits('/jwks');
      const response = await secret(bearer(token));
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual(SETS.clients['spa-demo']);
      expect(provider.hits('/jwks')).toBe(before);
    } finally {
      provider.setOutage(false);
    }
  });

  it('follows a key rotation: a token signed with the new key is served, one of the retired key is refused', async () => {
    const old = await provider.token('spa-demo');
    expect((await secret(bearer(old))).status).toBe(200);
    const [oldKid] = provider.kids();
    provider.rotateKeys();
    const fresh = await provider.token('spa-demo');
    expect(decodeProtectedHeader(fresh).kid).not.toBe(oldKid);
    // An unknown `kid` makes the verifier fetch the key set again (once per cooldown).
    expect(await eventually(async () => (await secret(bearer(fresh))).status === 200)).toBe(true);
    // The retired key left the JWKS: its tokens' cached decisions are dropped, the edge copy
    // lives no longer than its few seconds.
    expect(await eventually(async () => (await secret(bearer(old))).status === 401)).toBe(true);
  });
});

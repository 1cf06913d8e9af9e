// Token exchange against a real IdP: node-oidc-provider with the RFC 8693 grant registered. The
// provider checks the gate's client authentication (client_secret_basic or private_key_jwt) and
// the subject token, then issues a token for the requested audience naming the caller (`sub`)
// and the gate acting for them (`act`).

import { generateKeyPairSync } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider, { errors, type KoaContextWithOIDC } from 'oidc-provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMinter, mintEntrySchema, type MintEntryInput, type Minter } from './index.js';
import { caller, createKeyDir } from './test-fixtures.js';

const grantType = 'urn:ietf:params:oauth:grant-type:token-exchange';
const keys = createKeyDir();
const clientKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });
let provider: Provider;
let server: Server;
let issuer: string;

async function exchange(ctx: KoaContextWithOIDC): Promise<void> {
  const params = ctx.oidc.params as Record<string, string | string[] | undefined>;
  const client = ctx.oidc.client!;
  const subject = await provider.AccessToken.find(String(params.subject_token));
  if (
    subject === undefined ||
    params.subject_token_type !== 'urn:ietf:params:oauth:token-type:access_token'
  ) {
    throw new errors.InvalidGrant('subject token not recognised');
  }
  const audience = [params.audience ?? []].flat();
  if (audience.includes('forbidden-api')) throw new errors.InvalidTarget('audience not allowed');
  const token = new provider.AccessToken({
    accountId: subject.accountId,
    client,
    scope: typeof params.scope === 'string' ? params.scope : undefined,
    aud: audience,
    gty: 'token_exchange',
    grantId: subject.grantId ?? 'exchange',
  });
  ctx.body = {
    access_token: await token.save(),
    issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
    token_type: 'Bearer',
    expires_in: token.expiration,
  };
}

beforeAll(async () => {
  server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const exchangeClient = { grant_types: [grantType], response_types: [], redirect_uris: [] };
  provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'spa-demo',
        client_secret: 'spa-demo-secret',
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
      },
      { ...exchangeClient, client_id: 'gate', client_secret: 'gate-secret-value' },
      {
        ...exchangeClient,
        client_id: 'gate-jwt',
        token_endpoint_auth_method: 'private_key_jwt',
        token_endpoint_auth_signing_alg: 'ES256',
        jwks: {
          keys: [
            { ...clientKey.publicKey.export({ format: 'jwk' }), kid: 'gate-key-1', use: 'sig' },
          ],
        },
      },
    ],
    ttl: { AccessToken: 600 },
    // RFC 8693 §4.1: the exchanged token says who acts for the subject.
    extraTokenClaims: (ctx) =>
      (ctx?.oidc.params as { grant_type?: string } | undefined)?.grant_type === grantType
        ? { act: { sub: ctx.oidc.client!.clientId } }
        : undefined,
    features: { clientCredentials: { enabled: true } },
  });
  provider.registerGrantType(
    grantType,
    exchange,
    ['audience', 'resource', 'scope', 'subject_token', 'subject_token_type'],
    ['audience', 'resource'],
  );
  const handle = provider.callback();
  server.on('request', (req, res) => void handle(req, res));
});

afterAll(async () => {
  keys.remove();
  await new Promise((resolve) => server.close(resolve));
});

/** An access token the provider itself issued to the SPA for user-42 (the caller's token). */
async function subjectToken(): Promise<string> {
  const client = (await provider.Client.find('spa-demo'))!;
  const token = { accountId: 'user-42', client, scope: 'openid', gty: 'test', grantId: 'sign-in' };
  return new provider.AccessToken(token).save();
}

function minter(entry: Omit<Extract<MintEntryInput, { kind: 'token-exchange' }>, 'kind'>): Minter {
  return createMinter(mintEntrySchema.parse({ kind: 'token-exchange', ...entry }), {
    tokenEndpoint: () => Promise.resolve(`${issuer}/token`),
  });
}

describe('token-exchange', () => {
  it.each([
    ['client_secret_basic', 'gate'],
    ['private_key_jwt', 'gate-jwt'],
  ] as const)(
    'with %s, the issued token names the caller, the audience and the gate as actor',
    async (method, clientId) => {
      const clientAuth =
        method === 'client_secret_basic'
          ? { method, secretFile: keys.write('gate.secret', 'gate-secret-value\n') }
          : {
              method,
              kid: 'gate-key-1',
              keyFile: keys.write(
                'gate-jwt.pem',
                clientKey.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
              ),
            };
      const now = Math.floor(Date.now() / 1000);
      const minted = await minter({
        clientId,
        clientAuth,
        audience: 'reports-api',
        scope: 'openid',
        ttlSeconds: 300,
      }).mint(caller({ iss: issuer, token: await subjectToken(), exp: now + 3600 }), now);
      const issued = await provider.AccessToken.find(minted.value);
      expect(issued?.accountId).toBe('user-42');
      expect(issued?.aud).toEqual(['reports-api']);
      expect(issued?.extra).toEqual({ act: { sub: clientId } });
      expect(issued?.scope).toBe('openid');
      // The IdP said 600 s; the entry's 300 s is the bound.
      expect(minted.expiresAt).toBe(now + 300);
    },
  );

  it("never outlives the caller's token even when the IdP gives longer", async () => {
    const now = Math.floor(Date.now() / 1000);
    const minted = await minter({
      clientId: 'gate',
      clientAuth: {
        method: 'client_secret_basic',
        secretFile: keys.write('gate2.secret', 'gate-secret-value'),
      },
      audience: 'reports-api',
    }).mint(caller({ iss: issuer, token: await subjectToken(), exp: now + 42 }), now);
    expect(minted.expiresAt).toBe(now + 42);
  });

  it.each([
    [
      'an unknown subject token',
      'reports-api',
      'not-a-token-the-idp-issued',
      'gate-secret-value',
      'invalid_grant',
    ],
    ['a forbidden audience', 'forbidden-api', undefined, 'gate-secret-value', 'invalid_target'],
    ['a wrong client secret', 'reports-api', undefined, 'wrong-secret', 'invalid_client'],
  ])(
    "%s is refused with the IdP's error code and no token echoed",
    async (_, audience, token, secret, code) => {
      const now = Math.floor(Date.now() / 1000);
      const subject = token ?? (await subjectToken());
      const attempt = minter({
        clientId: 'gate',
        clientAuth: {
          method: 'client_secret_basic',
          secretFile: keys.write(`s-${code}.secret`, secret),
        },
        audience,
      }).mint(caller({ iss: issuer, token: subject, exp: now + 3600 }), now);
      const error = await attempt.then(
        () => undefined,
        (e: unknown) => e as Error & { code?: string },
      );
      expect(error).toMatchObject({ name: 'MintError', code: 'exchange_refused' });
      expect(error?.message).toContain(code);
      expect(error?.message).not.toContain(subject);
      expect(error?.message).not.toContain(secret);
    },
  );

  it('an IdP that cannot be reached is exchange_failed', async () => {
    const now = Math.floor(Date.now() / 1000);
    const unreachable = createMinter(
      mintEntrySchema.parse({
        kind: 'token-exchange',
        clientId: 'gate',
        clientAuth: { method: 'client_secret_basic', secretFile: keys.write('g3.secret', 'x') },
      }),
      { tokenEndpoint: () => Promise.resolve('http://127.0.0.1:9/token') },
    );
    await expect(
      unreachable.mint(caller({ iss: issuer, exp: now + 60 }), now),
    ).rejects.toMatchObject({
      code: 'exchange_failed',
    });
  });
});

// The `jwt` kind: what a downstream verifying with jose sees, for each algorithm; templates over
// the caller; the published JWKS across a key rotation.

import { generateKeyPairSync } from 'node:crypto';
import { utimesSync } from 'node:fs';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { createMinter, mintEntrySchema, type MintEntryInput } from './index.js';
import { NOW, caller, createKeyDir } from './test-fixtures.js';

const keys = createKeyDir();
afterAll(() => keys.remove());
const minter = (entry: MintEntryInput) => createMinter(mintEntrySchema.parse(entry));
const verifyAt = { currentDate: new Date(NOW * 1000) };

function pem(type: 'ec' | 'ed25519' | 'rsa'): string {
  const { privateKey } =
    type === 'ec'
      ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
      : type === 'rsa'
        ? generateKeyPairSync('rsa', { modulusLength: 2048 })
        : generateKeyPairSync('ed25519');
  return privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
}

describe('jwt', () => {
  it('an HS256 JWT carries iss, sub, aud, the templated claims, iat and exp', async () => {
    const secret = 'an-hs256-shared-secret-of-32-bytes!!';
    const keyFile = keys.write('hs256.key', `${secret}\n`);
    const minted = await minter({
      kind: 'jwt',
      alg: 'HS256',
      keyFile,
      iss: 'https://gate.example.com',
      aud: 'reports-api',
      ttlSeconds: 120,
      claims: {
        tenant: '{claims.tenant}',
        groups: '{claims.groups}',
        label: '{client_id}:{sub}',
        scope: '{scope}',
        plan: 'gold',
        limits: { rpm: 60 },
      },
    }).mint(caller(), NOW);
    const { payload, protectedHeader } = await jwtVerify(minted.value, Buffer.from(secret), {
      ...verifyAt,
      issuer: 'https://gate.example.com',
      audience: 'reports-api',
    });
    expect(protectedHeader).toEqual({ alg: 'HS256', typ: 'JWT' });
    expect(payload).toEqual({
      iss: 'https://gate.example.com',
      sub: 'user-42',
      aud: 'reports-api',
      tenant: 'acme',
      groups: ['eng', 'ops'],
      label: 'spa-demo:user-42',
      scope: 'secrets:read search',
      plan: 'gold',
      limits: { rpm: 60 },
      iat: NOW,
      exp: NOW + 120,
    });
    expect(minted.expiresAt).toBe(NOW + 120);
  });

  it.each([
    ['ES256', 'ec'],
    ['RS256', 'rsa'],
    ['EdDSA', 'ed25519'],
  ] as const)('an %s JWT verifies against the published JWKS', async (alg, type) => {
    const keyFile = keys.write(`${alg}.pem`, pem(type));
    const jwt = minter({ kind: 'jwt', alg, keyFile, aud: 'api' });
    const minted = await jwt.mint(caller(), NOW);
    const jwks = { keys: [...(jwt.publicJwks?.() ?? [])] };
    expect(jwks.keys).toHaveLength(1);
    expect(jwks.keys[0]).not.toHaveProperty('d');
    const { payload } = await jwtVerify(minted.value, createLocalJWKSet(jwks), {
      ...verifyAt,
      audience: 'api',
    });
    expect(payload.sub).toBe('user-42');
    expect(decodeProtectedHeader(minted.value).kid).toBe(jwks.keys[0]?.kid);
  });

  it('reads a private JWK file as well as PEM', async () => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const keyFile = keys.write('es256.jwk', JSON.stringify(privateKey.export({ format: 'jwk' })));
    const jwt = minter({ kind: 'jwt', alg: 'ES256', keyFile, kid: 'gate-1' });
    const minted = await jwt.mint(caller(), NOW);
    const jwks = createLocalJWKSet({ keys: [...(jwt.publicJwks?.() ?? [])] });
    await expect(jwtVerify(minted.value, jwks, verifyAt)).resolves.toBeDefined();
    expect(decodeProtectedHeader(minted.value).kid).toBe('gate-1');
  });

  it('a rewritten key file signs the next mint; the JWKS keeps the key before it', async () => {
    const keyFile = keys.write('rotating.pem', pem('ec'));
    const jwt = createMinter(mintEntrySchema.parse({ kind: 'jwt', alg: 'ES256', keyFile }), {});
    const first = await jwt.mint(caller(), NOW);
    const kidBefore = decodeProtectedHeader(first.value).kid;
    keys.write('rotating.pem', pem('ec'));
    utimesSync(keyFile, new Date(), new Date(Date.now() + 5000));
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const second = await jwt.mint(caller(), NOW);
    const kidAfter = decodeProtectedHeader(second.value).kid;
    expect(kidAfter).not.toBe(kidBefore);
    const published = (jwt.publicJwks?.() ?? []).map((jwk) => jwk.kid);
    expect(published).toEqual([kidAfter, kidBefore]);
    const set = createLocalJWKSet({ keys: [...(jwt.publicJwks?.() ?? [])] });
    await expect(jwtVerify(first.value, set, verifyAt)).resolves.toBeDefined();
    await expect(jwtVerify(second.value, set, verifyAt)).resolves.toBeDefined();
  });

  it('a claim the caller lacks is a MintError naming the claim, not a half-filled JWT', async () => {
    const keyFile = keys.write('hs.key', 'x'.repeat(32));
    const jwt = minter({ kind: 'jwt', alg: 'HS256', keyFile, claims: { org: '{claims.org_id}' } });
    await expect(jwt.mint(caller(), NOW)).rejects.toMatchObject({
      name: 'MintError',
      code: 'claim_missing',
      message: expect.stringContaining('"org_id"') as unknown,
    });
    await expect(
      minter({ kind: 'jwt', alg: 'HS256', keyFile, sub: '{client_id}' }).mint(
        caller({ clientId: undefined }),
        NOW,
      ),
    ).rejects.toMatchObject({
      code: 'claim_missing',
      message: expect.stringContaining('"client_id"') as unknown,
    });
  });
});

// The public keys of gate-signed minted `jwt` values through real NGINX: anyone may GET
// /.well-known/secret-gate/jwks.json (no token) and check with it the value a user got from
// /secret; only public key parts are published, and the answer is briefly cacheable.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../stack/ports.js';
import { verifierConfig } from '../../stack/service-env.js';
import { startStack, type Stack } from '../../stack/start-stack.js';
import { call } from '../support/gate-table.js';

const JWKS_PATH = '/.well-known/secret-gate/jwks.json';

let dir: string;
let stack: Stack;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sg-minted-jwks-'));
  const keyFile = join(dir, 'reports.pem');
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  writeFileSync(keyFile, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
  const idp = await freePort();
  const issuer = `http://127.0.0.1:${idp}`;
  const config = verifierConfig({
    issuer,
    jwksUri: `${issuer}/jwks`,
    audience: 'secret-gate-api',
  }) as { policies: Record<string, Record<string, unknown>> };
  config.policies.secret = {
    ...config.policies.secret,
    mint: {
      'reports-token': {
        kind: 'jwt',
        alg: 'ES256',
        keyFile,
        iss: 'https://gate.example.com',
        aud: 'reports-api',
        ttlSeconds: 120,
      },
    },
  };
  const configFile = join(dir, 'verifier.json');
  writeFileSync(configFile, JSON.stringify(config));
  stack = await startStack({ ports: { idp }, env: { verifier: { VERIFIER_CONFIG: configFile } } });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('JWKS of gate-signed minted values', () => {
  it('publishes the public key without a token, and it checks the value /secret delivered', async () => {
    const published = await fetch(`${stack.urls.gate}${JWKS_PATH}`);
    expect(published.status).toBe(200);
    expect(published.headers.get('content-type')).toBe('application/jwk-set+json');
    expect(published.headers.get('cache-control')).toBe('public, max-age=300');
    const jwks = (await published.json()) as JSONWebKeySet;
    expect(jwks.keys).toHaveLength(1);
    expect(jwks.keys[0]).toMatchObject({ kty: 'EC', crv: 'P-256' });
    expect(jwks.keys[0]).not.toHaveProperty('d');

    const answer = await call(
      stack.urls.secret,
      await stack.mintToken({ claims: { sub: 'jwks-user' } }),
    );
    expect(answer.status, answer.body).toBe(200);
    const value = (JSON.parse(answer.body) as { 'reports-token': string })['reports-token'];
    const { payload, protectedHeader } = await jwtVerify(value, createLocalJWKSet(jwks), {
      issuer: 'https://gate.example.com',
      audience: 'reports-api',
    });
    expect(payload.sub).toBe('jwks-user');
    expect(protectedHeader.kid).toBe(jwks.keys[0]?.kid);
  });

  it('answers only GET', async () => {
    const posted = await fetch(`${stack.urls.gate}${JWKS_PATH}`, { method: 'POST' });
    expect(posted.status).toBe(405);
  });
});

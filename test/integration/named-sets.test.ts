// Named secret sets through real NGINX and the real verifier: /secret/<name> asks the verifier for
// policy <name> and serves that policy's sets (the secrets file's `policies.<name>`), and only to a
// token that policy allows. Every other answer holds no secret of any policy.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../stack/ports.js';
import { verifierConfig } from '../../stack/service-env.js';
import { startStack, type Stack } from '../../stack/start-stack.js';
import { createAttackerKey } from '../attacks/tokens.js';
import { allSecretValues, type SecretsFile } from '../support/secrets.js';

const secrets = {
  default: { 'x-api-key': 'named-test-default' },
  clients: { 'spa-demo': { 'x-api-key': 'named-test-spa-demo' } },
  policies: {
    payments: {
      default: { 'payments-publishable-key': 'named-test-payments-default' },
      clients: { 'partner-app': { 'payments-publishable-key': 'named-test-payments-partner' } },
    },
  },
} satisfies SecretsFile;
const values = allSecretValues(secrets);

let dir: string;
let stack: Stack;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sg-named-sets-'));
  const secretsFile = join(dir, 'secrets.json');
  writeFileSync(secretsFile, JSON.stringify(secrets), { mode: 0o644 });
  const idp = await freePort();
  const issuer = `http://127.0.0.1:${idp}`;
  const config = verifierConfig({ issuer, jwksUri: `${issuer}/jwks`, audience: 'secret-gate-api' });
  const policies = (config as { policies: Record<string, unknown> }).policies;
  // A policy of its own: another scope, so a /secret token is not a payments token.
  policies.payments = { issuers: [issuer], scopes: ['payments:read'] };
  const configFile = join(dir, 'verifier.json');
  writeFileSync(configFile, JSON.stringify(config));
  stack = await startStack({
    ports: { idp },
    secretsFile,
    env: { verifier: { VERIFIER_CONFIG: configFile } },
  });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Answer {
  status: number;
  headers: Headers;
  body: string;
}

async function get(path: string, token?: string, method = 'GET'): Promise<Answer> {
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const response = await fetch(`${stack.urls.gate}${path}`, { method, headers });
  return { status: response.status, headers: response.headers, body: await response.text() };
}

function expectNoSecret(answer: Answer): void {
  for (const value of values) expect(answer.body).not.toContain(value);
  expect(answer.headers.get('cache-control')).toBe('no-store');
}

/** A token for the payments policy (its scope), minted by the dev IdP's control API. */
const payments = (clientId = 'spa-demo', claims: Record<string, unknown> = {}) =>
  stack.mintToken({ clientId, scope: 'payments:read', claims });
const now = () => Math.floor(Date.now() / 1000);

/** A token for payments signed by a key the issuer never published, under the issuer's kid. */
async function wronglySigned(): Promise<string> {
  const valid = await payments();
  const header = JSON.parse(Buffer.from(valid.split('.')[0] ?? '', 'base64url').toString()) as {
    kid: string;
  };
  const claims = JSON.parse(
    Buffer.from(valid.split('.')[1] ?? '', 'base64url').toString(),
  ) as Record<string, unknown>;
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid: header.kid, typ: 'at+jwt' })
    .sign(createAttackerKey(header.kid).privateKey);
}

describe('GET /secret/payments', () => {
  it("hands a token the payments policy allows that policy's default set, not to be stored", async () => {
    const answer = await get('/secret/payments', await payments());
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual(secrets.policies.payments.default);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(answer.headers.get('content-type')).toBe('application/json');
  });

  it('hands a client with a set of its own in the policy that set, and again from the edge cache', async () => {
    const token = await payments('partner-app');
    for (let i = 0; i < 2; i++) {
      const answer = await get('/secret/payments', token);
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body)).toEqual(secrets.policies.payments.clients['partner-app']);
    }
  });

  it.each([
    ['no token', () => Promise.resolve(undefined), 401],
    ['a garbage token', () => Promise.resolve('garbage'), 401],
    ['an expired token', () => payments('spa-demo', { iat: now() - 900, exp: now() - 300 }), 401],
    ['a wrongly signed token', wronglySigned, 401],
    ['a token for another audience', () => payments('spa-demo', { aud: 'another-api' }), 401],
    ['a /secret token (the policy wants payments:read)', () => stack.mintToken(), 403],
  ])('answers %s with %i and no secret', async (_, token, status) => {
    const answer = await get('/secret/payments', await token());
    expect(answer.status).toBe(status);
    expectNoSecret(answer);
  });

  it('keeps /secret its own: a payments token is refused there, a /secret token gets its set', async () => {
    const refused = await get('/secret', await payments());
    expect(refused.status).toBe(403);
    expectNoSecret(refused);
    const allowed = await get('/secret', await stack.mintToken());
    expect(JSON.parse(allowed.body)).toEqual(secrets.clients['spa-demo']);
  });

  it('refuses HEAD with 405 and a query string with 400, before any token is looked at', async () => {
    const token = await payments();
    const head = await get('/secret/payments', token, 'HEAD');
    expect(head.status).toBe(405);
    expect(head.headers.get('allow')).toBe('GET');
    const query = await get('/secret/payments?access_token=x', token);
    expect(query.status).toBe(400);
    expectNoSecret(query);
  });
});

/** Every answer the verifier gave (`verifier_decisions_total`, summed), from its metrics. */
async function verifierDecisions(): Promise<number> {
  const keyFile = stack.env.verifier.VERIFIER_EDGE_KEY_FILE;
  const key: Record<string, string> =
    keyFile === undefined ? {} : { 'x-sg-edge-key': readFileSync(keyFile, 'utf8') };
  const text = await (await fetch(`${stack.urls.verifier}/metrics`, { headers: key })).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith('verifier_decisions_total'))
    .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
}

describe('a name no policy has', () => {
  it('is a JSON 404 at the edge: the verifier is not asked, whatever the token', async () => {
    const before = await verifierDecisions();
    for (const token of [undefined, 'garbage', await stack.mintToken(), await payments()]) {
      const answer = await get('/secret/anything', token);
      expect(answer.status).toBe(404);
      expect(JSON.parse(answer.body)).toEqual({ error: 'not_found' });
      expect(answer.headers.get('www-authenticate')).toBeNull();
    }
    expect(await verifierDecisions()).toBe(before);
    // The same count moves for a name a policy has, so it is the one NGINX would ask.
    await get('/secret/payments', await payments());
    expect(await verifierDecisions()).toBeGreaterThan(before);
  });

  it.each(['/secret/unknown', '/secret/secret'])(
    'never serves anything at %s, whatever the token',
    async (path) => {
      for (const token of [undefined, await stack.mintToken(), await payments()]) {
        const answer = await get(path, token);
        expect(answer.status).toBe(404);
        for (const value of values) expect(answer.body).not.toContain(value);
      }
    },
  );

  it.each(['/secret/Payments', '/secret/payments/', '/secret/payments/x', '/secret/pay.ments'])(
    'answers %s, which names no set, with a JSON 404 or the SPA, never a secret',
    async (path) => {
      const answer = await get(path, await payments());
      expect(answer.status === 404 || answer.headers.get('content-type') === 'text/html').toBe(
        true,
      );
      for (const value of values) expect(answer.body).not.toContain(value);
    },
  );
});

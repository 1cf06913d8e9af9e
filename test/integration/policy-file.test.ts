// A policy file under the runner (`npm start -- --config FILE`), through real NGINX and the real
// verifier: its named sets are the ones the SPA offers, an operator variable restricts every policy
// the file leaves that field to (not only /secret), and a step-up set answers a weak sign-in with
// the RFC 9470 challenge, not 403.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../../stack/start-stack.js';
import { allSecretValues, type SecretsFile } from '../support/secrets.js';

const MFA = 'urn:secret-gate:mfa';
const secrets = {
  default: { 'x-api-key': 'policy-file-default' },
  clients: {},
  policies: {
    payments: { default: { 'payments-key': 'policy-file-payments' }, clients: {} },
    audit: { default: { 'audit-key': 'policy-file-audit' }, clients: {} },
  },
} satisfies SecretsFile;
const POLICIES = {
  policies: {
    secret: { scopes: ['secrets:read'] },
    payments: { scopes: ['secrets:read'], acrValues: [MFA], maxAge: 300 },
    // Says its own clients: the operator's VERIFIER_ALLOWED_CLIENTS does not apply here.
    audit: { scopes: ['secrets:read'], clients: ['partner-app'] },
  },
};

let dir: string;
let stack: Stack;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sg-policy-file-'));
  const secretsFile = join(dir, 'secrets.json');
  writeFileSync(secretsFile, JSON.stringify(secrets), { mode: 0o644 });
  const policyFile = join(dir, 'policies.json');
  writeFileSync(policyFile, JSON.stringify(POLICIES));
  stack = await startStack({
    secretsFile,
    policyFile,
    verifierVariables: { VERIFIER_ALLOWED_CLIENTS: 'spa-demo' },
  });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function get(path: string, token?: string) {
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const response = await fetch(`${stack.urls.gate}${path}`, { headers });
  return { status: response.status, headers: response.headers, body: await response.text() };
}
const now = () => Math.floor(Date.now() / 1000);
const token = (clientId: string, claims: Record<string, unknown> = {}) =>
  stack.mintToken({ clientId, claims });

describe('a policy file under the runner', () => {
  it("offers the SPA the file's named sets", async () => {
    const config = JSON.parse((await get('/config.json')).body) as { secretSets: string };
    expect(config.secretSets).toBe('payments audit');
  });

  it('restricts every policy by VERIFIER_ALLOWED_CLIENTS, the step-up set included', async () => {
    const partner = await token('partner-app', { acr: MFA, auth_time: now() });
    for (const path of ['/secret', '/secret/payments']) {
      const answer = await get(path, partner);
      expect(answer.status).toBe(403);
      for (const value of allSecretValues(secrets)) expect(answer.body).not.toContain(value);
    }
  });

  it('leaves a policy that names its clients to the file', async () => {
    expect((await get('/secret/audit', await token('partner-app'))).status).toBe(200);
    expect((await get('/secret/audit', await token('spa-demo'))).status).toBe(403);
  });

  it('answers a weak sign-in on the step-up set 401 with the RFC 9470 challenge, then serves it', async () => {
    const weak = await get('/secret/payments', await token('spa-demo'));
    expect(weak.status).toBe(401);
    expect(weak.headers.get('www-authenticate')).toContain(
      'error="insufficient_user_authentication"',
    );
    expect(weak.headers.get('www-authenticate')).toContain(`acr_values="${MFA}"`);
    const strong = await get(
      '/secret/payments',
      await token('spa-demo', { acr: MFA, auth_time: now() }),
    );
    expect(strong.status).toBe(200);
    expect(JSON.parse(strong.body)).toEqual(secrets.policies.payments.default);
  });
});

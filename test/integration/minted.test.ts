// Minted values through real NGINX, the real verifier and the dev IdP: a policy with `mint` answers
// /secret with its static set plus the caller's own minted values and their expiry, in one JSON
// object; each user gets their own, the edge cache never hands one token's values to another, a
// sign-out ends them, and a value that cannot be minted is an error answer, never a static set.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../stack/ports.js';
import { verifierConfig } from '../../stack/service-env.js';
import { REPO_ROOT, startStack, type Stack } from '../../stack/start-stack.js';
import { call, type GateAnswer } from '../support/gate-table.js';
import type { SecretsFile } from '../support/secrets.js';

const secrets = {
  default: { 'x-api-key': 'minted-test-default' },
  clients: { 'spa-demo': { 'x-api-key': 'minted-test-spa-demo' } },
  policies: {
    tenant: { default: { 'x-api-key': 'minted-test-tenant' }, clients: {} },
    broken: { default: { 'x-api-key': 'minted-test-broken' }, clients: {} },
  },
} satisfies SecretsFile;
const STATIC_VALUES = [
  'minted-test-default',
  'minted-test-spa-demo',
  'minted-test-tenant',
  'minted-test-broken',
];
const KEY = 'k'.repeat(48);
const TTL = 120;

let dir: string;
let stack: Stack;
let brokenKey: string;

/** A `jwt` value signed with the test key: `sub` and `user_id` from the caller. */
const chatToken = (keyFile: string, extra: Record<string, unknown> = {}) => ({
  kind: 'jwt',
  alg: 'HS256',
  keyFile,
  ttlSeconds: TTL,
  aud: 'chat',
  claims: { user_id: '{sub}', ...extra },
});

function verifierFile(issuer: string, keyFile: string, mint: Record<string, unknown>): object {
  const config = verifierConfig({ issuer, jwksUri: `${issuer}/jwks`, audience: 'secret-gate-api' });
  const policies = (config as { policies: Record<string, Record<string, unknown>> }).policies;
  const secret = policies.secret!;
  policies.secret = { ...secret, mint };
  policies.tenant = {
    ...secret,
    mint: { 'tenant-token': chatToken(keyFile, { t: '{claims.tenant}' }) },
  };
  policies.broken = { ...secret, mint: { 'chat-token': chatToken(brokenKey) } };
  return config;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sg-minted-'));
  const secretsFile = join(dir, 'secrets.json');
  writeFileSync(secretsFile, JSON.stringify(secrets), { mode: 0o644 });
  const keyFile = join(dir, 'chat.key');
  writeFileSync(keyFile, KEY, { mode: 0o600 });
  brokenKey = join(dir, 'broken.key');
  writeFileSync(brokenKey, KEY, { mode: 0o600 });
  const idp = await freePort();
  const issuer = `http://127.0.0.1:${idp}`;
  const configFile = join(dir, 'verifier.json');
  writeFileSync(
    configFile,
    JSON.stringify(verifierFile(issuer, keyFile, { 'chat-token': chatToken(keyFile) })),
  );
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

interface MintedAnswer {
  'x-api-key': string;
  'chat-token': string;
  expires_at: Record<string, number>;
}

const now = () => Math.floor(Date.now() / 1000);
const token = (sub: string, claims: Record<string, unknown> = {}) =>
  stack.mintToken({ claims: { sub, ...claims } });

async function minted(bearer: string, path = '/secret'): Promise<MintedAnswer> {
  const answer = await call(`${stack.urls.gate}${path}`, bearer);
  expect(answer.status, answer.body).toBe(200);
  expect(answer.headers.get('cache-control')).toBe('no-store');
  expect(answer.headers.get('content-type')).toBe('application/json');
  return JSON.parse(answer.body) as MintedAnswer;
}

async function chatClaims(value: string) {
  const { payload } = await jwtVerify(value, new TextEncoder().encode(KEY), { audience: 'chat' });
  return payload;
}

function expectNoSecret(answer: GateAnswer): void {
  for (const value of STATIC_VALUES) expect(answer.body).not.toContain(value);
  expect(answer.body).not.toContain('chat-token');
  expect(answer.headers.get('cache-control')).toBe('no-store');
}

/** `verifier_minted_sets_total` of the policy and source, from the verifier's /metrics. */
async function served(source: string, policy = 'secret'): Promise<number> {
  const text = await (await fetch(`${stack.urls.verifier}/metrics`)).text();
  const line = new RegExp(
    `^verifier_minted_sets_total\\{policy="${policy}",source="${source}"\\} (\\d+)$`,
    'm',
  ).exec(text);
  return Number(line?.[1] ?? 0);
}

describe('a set with minted values, through NGINX', () => {
  it("answers one JSON object: the static values, the caller's minted value and its expiry", async () => {
    const bearer = await token('mia');
    const before = now();
    const body = await minted(bearer);
    expect(body['x-api-key']).toBe('minted-test-spa-demo');
    const claims = await chatClaims(body['chat-token']);
    expect(claims).toMatchObject({ sub: 'mia', user_id: 'mia' });
    expect(Object.keys(body.expires_at)).toEqual(['chat-token']);
    expect(body.expires_at['chat-token']).toBe(claims.exp);
    expect(body.expires_at['chat-token']).toBeGreaterThanOrEqual(before + TTL - 1);
    expect(body.expires_at['chat-token']).toBeLessThanOrEqual(now() + TTL);
  });

  it("never outlives the caller's token", async () => {
    const body = await minted(await stack.mintToken({ claims: { sub: 'noor' }, expiresIn: 30 }));
    expect(body.expires_at['chat-token']).toBeLessThanOrEqual(now() + 30);
  });

  it("gives each user their own value, and never one token's value to another (edge cache)", async () => {
    const [ana, ben] = [await token('ana'), await token('ben')];
    for (let round = 0; round < 3; round++) {
      expect((await chatClaims((await minted(ana))['chat-token'])).sub).toBe('ana');
      expect((await chatClaims((await minted(ben))['chat-token'])).sub).toBe('ben');
    }
  });

  it('mints once for 100 concurrent first fetches of one user', async () => {
    const bearer = await token('cleo');
    const before = { minted: await served('minted'), cache: await served('cache') };
    const bodies = await Promise.all(Array.from({ length: 100 }, () => minted(bearer)));
    expect(new Set(bodies.map((body) => body['chat-token'])).size).toBe(1);
    expect((await served('minted')) - before.minted).toBe(1);
  });

  it('refuses a signed-out user with 401 at the next fetch, and mints nothing for them', async () => {
    const bearer = await token('rita');
    await minted(bearer);
    const { delivered } = await stack.idp.signOut('rita');
    expect(delivered.map((d) => d.status)).toEqual([200]);
    const mintedBefore = await served('minted');
    const answer = await call(stack.urls.secret, bearer);
    expect(answer.status).toBe(401);
    expectNoSecret(answer);
    expect(await served('minted')).toBe(mintedBefore);
  });

  it('answers 403 with the reason when a template names a claim the token lacks', async () => {
    const answer = await call(`${stack.urls.gate}/secret/tenant`, await token('tia'));
    expect(answer.status).toBe(403);
    expect(JSON.parse(answer.body)).toEqual({ error: 'forbidden', reason: 'claim_missing' });
    expectNoSecret(answer);
    const body = await minted(await token('tia', { tenant: 'acme' }), '/secret/tenant');
    expect(body['x-api-key']).toBe('minted-test-tenant');
  });

  it('answers 502 mint_failed, never the static set, when a value cannot be minted', async () => {
    chmodSync(brokenKey, 0o644);
    // The minting package looks at a key file again once a second.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const answer = await call(`${stack.urls.gate}/secret/broken`, await token('bo'));
    expect(answer.status).toBe(502);
    expect(JSON.parse(answer.body)).toEqual({ error: 'mint_failed', reason: 'key_unavailable' });
    expectNoSecret(answer);
  });

  it('answers a missing or garbage token with 401 and no value', async () => {
    for (const bearer of [undefined, 'garbage.token.here']) {
      const answer = await call(stack.urls.secret, bearer);
      expect(answer.status).toBe(401);
      expectNoSecret(answer);
    }
  });
});

describe('a bad mint entry', () => {
  it('stops the start with one line naming the set and the field', () => {
    const keyFile = join(dir, 'open.key');
    writeFileSync(keyFile, KEY, { mode: 0o644 });
    const problems = { 'chat-token': { ...chatToken(keyFile), alg: 'none' }, expires_at: {} };
    const file = join(dir, 'bad.json');
    writeFileSync(file, JSON.stringify(verifierFile('http://127.0.0.1:1', keyFile, problems)));
    const run = spawnSync(
      process.execPath,
      [join(REPO_ROOT, 'verifier/dist/main.js'), '--check-config'],
      {
        env: { PATH: process.env.PATH, VERIFIER_CONFIG: file },
        encoding: 'utf8',
      },
    );
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('policies.secret.mint.chat-token.alg');
    expect(run.stderr).toMatch(/policies\.secret\.mint\.expires_at: .*expiry member/);
    // The tenant policy's entry is well formed; its key file is open to others.
    expect(run.stderr).toMatch(/policies\.tenant\.mint\.tenant-token: .*open to group or others/);
    expect(run.stderr).not.toContain(KEY);
  });
});

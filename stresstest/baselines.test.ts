// The comparison gates, run as real processes: each answers /hello, refuses /secret with a JSON 401
// and no secret unless the request carries a token it accepts, and then hands out the secrets.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadIdpConfig } from '../idp/config.js';
import { startIdp, type Idp } from '../idp/server.js';
import {
  BASELINE_NAMES,
  BASELINE_SECRETS,
  startBaseline,
  type StartedGate,
} from '../perf/baselines.js';
import { createConfinement, PROFILES } from '../perf/limits.js';
import { fetchRs256Spki, mintTokens } from '../perf/tokens.js';

const SECRET_VALUE = JSON.parse(BASELINE_SECRETS)['x-api-key'] as string;

let idp: Idp;
let otherIdp: Idp;
let dir: string;
let token: string;
let foreignToken: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sg-baselines-'));
  idp = await startIdp(loadIdpConfig({ IDP_PORT: '0' }));
  otherIdp = await startIdp(loadIdpConfig({ IDP_PORT: '0' }));
  [token] = (await mintTokens({ issuer: idp.issuer, count: 1 })) as [string];
  [foreignToken] = (await mintTokens({ issuer: otherIdp.issuer, count: 1 })) as [string];
});

afterAll(async () => {
  await idp?.close();
  await otherIdp?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function get(url: string, authorization?: string) {
  const reply = await fetch(url, { headers: authorization ? { authorization } : {} });
  return { status: reply.status, body: await reply.text() };
}

describe.each(BASELINE_NAMES)('baseline %s', (name) => {
  let gate: StartedGate;

  beforeAll(async () => {
    // Tests only pin to every core: limits belong to stress runs, not to a shared test machine.
    const confinement = createConfinement({
      profile: PROFILES.study,
      cpus: '0-1',
      support: { mode: 'pin', reason: 'test' },
    });
    gate = await startBaseline(name, {
      dir: join(dir, name),
      confinement,
      issuer: idp.issuer,
      audience: 'secret-gate-api',
      spki: await fetchRs256Spki(idp.issuer),
    });
  });

  afterAll(async () => {
    await gate?.stop();
  });

  it('answers /hello with 200 and no auth', async () => {
    expect((await get(`${gate.baseUrl}/hello`)).status).toBe(200);
  });

  it.each([
    ['no Authorization header', undefined],
    ['a garbage bearer token', 'Bearer not-a-jwt'],
    ['a token whose payload is not JSON', 'Bearer eyJhbGciOiJSUzI1NiJ9.bm90LWpzb24.c2ln'],
    ['a Basic credential', 'Basic dXNlcjpwYXNz'],
  ])('refuses /secret with a JSON 401 and no secret for %s', async (_, authorization) => {
    const reply = await get(`${gate.baseUrl}/secret`, authorization);
    expect(reply.status).toBe(401);
    expect(JSON.parse(reply.body)).toEqual({ error: 'unauthorized' });
    expect(reply.body).not.toContain(SECRET_VALUE);
  });

  it('hands out the secrets JSON for a valid token from the dev IdP', async () => {
    const reply = await get(`${gate.baseUrl}/secret`, `Bearer ${token}`);
    expect(reply.status).toBe(200);
    expect(JSON.parse(reply.body)).toEqual(JSON.parse(BASELINE_SECRETS));
  });
});

describe('baseline njs-verify checks the signature itself', () => {
  let gate: StartedGate;

  beforeAll(async () => {
    const confinement = createConfinement({
      profile: PROFILES.study,
      cpus: '0-1',
      support: { mode: 'pin', reason: 'test' },
    });
    gate = await startBaseline('njs-verify', {
      dir: join(dir, 'njs-verify-signature'),
      confinement,
      issuer: idp.issuer,
      audience: 'secret-gate-api',
      spki: await fetchRs256Spki(idp.issuer),
    });
  });

  afterAll(async () => {
    await gate?.stop();
  });

  it('refuses a well-formed token signed by another IdP', async () => {
    const reply = await get(`${gate.baseUrl}/secret`, `Bearer ${foreignToken}`);
    expect(reply.status).toBe(401);
    expect(reply.body).not.toContain(SECRET_VALUE);
  });

  it('refuses a valid signature whose payload was swapped', async () => {
    const [header, , signature] = token.split('.');
    const [, payload] = foreignToken.split('.');
    const reply = await get(`${gate.baseUrl}/secret`, `Bearer ${header}.${payload}.${signature}`);
    expect(reply.status).toBe(401);
    expect(reply.body).not.toContain(SECRET_VALUE);
  });
});

// The DPoP step inside the real authorizer: fixed keys, a frozen clock, a local JWKS server.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Decision } from '../decision/decision.js';
import {
  AUDIENCE,
  ISSUER,
  manualClock,
  mintToken,
  startJwksServer,
  type JwksServer,
} from '../testing/fixtures.js';
import { signProof, thumbprintOf } from '../testing/dpop-proof.js';
import { buildService, type TestService } from '../testing/service.js';
import { answerOf, statusOf } from '../testing/answer.js';

// Every shared replay store here is one that does not answer (the outage tests below).
vi.mock('./redis-replay-store.js', () => ({
  createRedisReplayStore: () => ({
    remember: () => Promise.reject(new Error('connection refused')),
    isReady: () => true,
    close: async () => {},
  }),
}));

const clock = manualClock();
const T = clock.seconds();
const ORIGIN = 'https://gate.example.com';
const HTU = `${ORIGIN}/secret`;
const NONCE_KEY = 'n'.repeat(40);
let jwks: JwksServer;
type Service = 'off' | 'allowed' | 'required' | 'nonce' | 'sharedAllowed' | 'sharedRequired';
const services: Record<Service, TestService> = {} as never;
let jkt: string;

function fileConfig(dpop: string) {
  return {
    issuers: [{ issuer: ISSUER, audience: AUDIENCE, jwksUri: jwks.url, algorithms: ['RS256'] }],
    policies: { secret: { issuers: [ISSUER], scopes: ['secrets:read'], dpop } },
  };
}

beforeAll(async () => {
  jwks = await startJwksServer(['rsaA']);
  jkt = await thumbprintOf('ec');
  for (const mode of ['off', 'allowed', 'required'] as const)
    services[mode] = buildService({}, { now: clock.now, file: fileConfig(mode) });
  services.nonce = buildService(
    { VERIFIER_DPOP_NONCE_KEY: NONCE_KEY },
    { now: clock.now, file: fileConfig('allowed') },
  );
  const shared = { VERIFIER_REDIS_URL: 'redis://127.0.0.1:6379' };
  services.sharedAllowed = buildService(shared, { now: clock.now, file: fileConfig('allowed') });
  services.sharedRequired = buildService(shared, { now: clock.now, file: fileConfig('required') });
  await Promise.all(Object.values(services).map(({ service }) => service.start()));
});
afterAll(async () => {
  await Promise.all(Object.values(services).map(({ service }) => service.stop(0)));
  await jwks.close();
});

const boundToken = () => mintToken({ now: T, claims: { cnf: { jkt } } });
const header = (decision: Decision, name: string) =>
  answerOf(decision).headers.find(([key]) => key.toLowerCase() === name.toLowerCase())?.[1];

async function ask(
  mode: keyof typeof services,
  request: { scheme: 'Bearer' | 'DPoP'; token: string; proof?: string; method?: string },
): Promise<Decision> {
  return services[mode].service.authorize({
    policy: 'secret',
    authorization: `${request.scheme} ${request.token}`,
    dpop: request.proof,
    originalMethod: request.method ?? 'GET',
    originalUri: '/secret',
    originalOrigin: ORIGIN,
  });
}

const proofFor = (token: string, extra: Parameters<typeof signProof>[0] | object = {}) =>
  signProof({ htu: HTU, accessToken: token, iat: T, ...extra });

describe('DPoP at /verify, policy dpop: allowed', () => {
  it('allows a bound token with a fresh proof, and asks for a new proof on every request', async () => {
    const token = await boundToken();
    const first = await ask('allowed', { scheme: 'DPoP', token, proof: await proofFor(token) });
    expect(statusOf(first)).toBe(204);
    const second = await ask('allowed', { scheme: 'DPoP', token, proof: await proofFor(token) });
    expect(statusOf(second)).toBe(204);
    expect(services.allowed.lines.join('\n')).not.toContain(token);
  });

  it('refuses the same proof twice, even though the token decision is cached', async () => {
    const token = await boundToken();
    const proof = await proofFor(token);
    expect(statusOf(await ask('allowed', { scheme: 'DPoP', token, proof }))).toBe(204);
    const replay = await ask('allowed', { scheme: 'DPoP', token, proof });
    expect(statusOf(replay)).toBe(401);
    expect(replay.reason).toBe('dpop_proof_replayed');
    expect(header(replay, 'WWW-Authenticate')).toBe(
      'DPoP error="invalid_dpop_proof", error_description="the DPoP proof was used before", algs="ES256 ES384 PS256 RS256 EdDSA"',
    );
  });

  it('refuses a bound token presented as Bearer (no downgrade), with a DPoP challenge', async () => {
    const decision = await ask('allowed', { scheme: 'Bearer', token: await boundToken() });
    expect(statusOf(decision)).toBe(401);
    expect(decision.reason).toBe('dpop_binding_mismatch');
    expect(header(decision, 'WWW-Authenticate')).toMatch(/^DPoP error="invalid_token"/);
  });

  it('refuses the DPoP scheme with an unbound token', async () => {
    const token = await mintToken({ now: T });
    const decision = await ask('allowed', { scheme: 'DPoP', token, proof: await proofFor(token) });
    expect(decision.reason).toBe('dpop_binding_mismatch');
  });

  it('still allows an unbound bearer token', async () => {
    const decision = await ask('allowed', { scheme: 'Bearer', token: await mintToken({ now: T }) });
    expect(statusOf(decision)).toBe(204);
  });

  it.each([
    ['no proof', async () => undefined, 'dpop_proof_missing'],
    [
      'a proof by another key',
      async (t: string) => proofFor(t, { key: 'ecB' }),
      'dpop_binding_mismatch',
    ],
    [
      'a proof for another method',
      async (t: string) => proofFor(t, { htm: 'POST' }),
      'dpop_proof_invalid',
    ],
    ['a stale proof', async (t: string) => proofFor(t, { iat: T - 120 }), 'dpop_proof_invalid'],
  ])('refuses %s', async (_, makeProof, reason) => {
    const token = await boundToken();
    const decision = await ask('allowed', { scheme: 'DPoP', token, proof: await makeProof(token) });
    expect(statusOf(decision)).toBe(401);
    expect(decision.reason).toBe(reason);
    expect(header(decision, 'WWW-Authenticate')).toMatch(/^DPoP error="[a-z_]+"/);
  });

  it('refuses a DPoP request whose token is bad with a DPoP challenge, not a Bearer one', async () => {
    const token = await mintToken({ now: T, claims: { cnf: { jkt }, aud: 'another-api' } });
    const decision = await ask('allowed', { scheme: 'DPoP', token, proof: await proofFor(token) });
    expect(decision.reason).toBe('audience_mismatch');
    expect(header(decision, 'WWW-Authenticate')).toMatch(/^DPoP error="invalid_token"/);
  });

  it('refuses a token whose cnf names another confirmation method', async () => {
    const token = await mintToken({ now: T, claims: { cnf: { 'x5t#S256': 'abc' } } });
    const decision = await ask('allowed', { scheme: 'Bearer', token });
    expect(decision.reason).toBe('claim_invalid');
  });
});

describe('DPoP at /verify, other modes', () => {
  it('required: refuses an unbound bearer token and asks for DPoP when no token came', async () => {
    const bearer = await ask('required', { scheme: 'Bearer', token: await mintToken({ now: T }) });
    expect(bearer.reason).toBe('dpop_required');
    const none = await services.required.service.authorize({ policy: 'secret' });
    expect(statusOf(none)).toBe(401);
    expect(header(none, 'WWW-Authenticate')).toBe('DPoP algs="ES256 ES384 PS256 RS256 EdDSA"');
    const token = await boundToken();
    const bound = await ask('required', { scheme: 'DPoP', token, proof: await proofFor(token) });
    expect(statusOf(bound)).toBe(204);
  });

  it('off: a bound token is still no bearer token, and the DPoP scheme is not read', async () => {
    const token = await boundToken();
    const asBearer = await ask('off', { scheme: 'Bearer', token });
    expect(asBearer.reason).toBe('dpop_binding_mismatch');
    expect(header(asBearer, 'WWW-Authenticate')).toMatch(/^Bearer /);
    const asDpop = await ask('off', { scheme: 'DPoP', token, proof: await proofFor(token) });
    expect(asDpop.reason).toBe('token_missing');
  });

  it('nonces: asks for one with DPoP-Nonce, accepts a proof that carries it', async () => {
    const token = await boundToken();
    const first = await ask('nonce', { scheme: 'DPoP', token, proof: await proofFor(token) });
    expect(statusOf(first)).toBe(401);
    expect(header(first, 'WWW-Authenticate')).toMatch(/^DPoP error="use_dpop_nonce"/);
    const nonce = header(first, 'DPoP-Nonce');
    expect(nonce).toBeTruthy();
    const retry = await ask('nonce', {
      scheme: 'DPoP',
      token,
      proof: await proofFor(token, { claims: { nonce } }),
    });
    expect(statusOf(retry)).toBe(204);
    expect(header(retry, 'DPoP-Nonce')).toBe(nonce);
  });
});

describe('DPoP replay store trouble', () => {
  it('fails closed for required, and checks replays per process for allowed', async () => {
    const token = await boundToken();
    const proof = await proofFor(token);
    const required = await ask('sharedRequired', { scheme: 'DPoP', token, proof });
    expect(required.reason).toBe('dpop_replay_unavailable');
    expect(header(required, 'WWW-Authenticate')).toMatch(/^DPoP error="invalid_dpop_proof"/);
    expect(statusOf(await ask('sharedAllowed', { scheme: 'DPoP', token, proof }))).toBe(204);
    const replayed = await ask('sharedAllowed', { scheme: 'DPoP', token, proof });
    expect(replayed.reason).toBe('dpop_proof_replayed');
    expect(services.sharedAllowed.lines.join('\n')).toContain(
      'this process checks replays on its own meanwhile',
    );
  });
});

// X-Accel-Expires: how long NGINX may reuse an answer. Never past the cap, the token's `exp` or its
// key set's trust; never for a 401; 0 when the cap is 0. And client ids NGINX would alter are
// refused with their own code instead of being passed on changed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Decision } from './decision/decision.js';
import {
  AUDIENCE,
  ISSUER,
  manualClock,
  mintToken,
  startJwksServer,
  type JwksServer,
} from './testing/fixtures.js';
import { answerOf } from './testing/answer.js';
import { buildService, type TestService } from './testing/service.js';

const clock = manualClock();
const T = clock.seconds();
let jwks: JwksServer;
let capped: TestService;
let off: TestService;

const env = {
  VERIFIER_ISSUER: ISSUER,
  VERIFIER_AUDIENCE: AUDIENCE,
  VERIFIER_REQUIRED_SCOPES: 'secrets:read',
  VERIFIER_CLOCK_TOLERANCE: '0s',
};

beforeAll(async () => {
  jwks = await startJwksServer(['rsaA']);
  capped = buildService(
    { ...env, VERIFIER_JWKS_URI: jwks.url, VERIFIER_EDGE_CACHE_TTL: '5s' },
    { now: clock.now },
  );
  off = buildService(
    { ...env, VERIFIER_JWKS_URI: jwks.url, VERIFIER_EDGE_CACHE_TTL: '0' },
    { now: clock.now },
  );
  await capped.service.start();
  await off.service.start();
});
afterAll(async () => {
  await capped.service.stop(0);
  await off.service.stop(0);
  await jwks.close();
});

const accelExpires = (decision: Decision) =>
  answerOf(decision).headers.find(([name]) => name === 'X-Accel-Expires')?.[1];
const ask = (svc: TestService, token: string | undefined) =>
  svc.service.authorize({
    authorization: token === undefined ? undefined : `Bearer ${token}`,
    policy: 'default',
  });

describe('X-Accel-Expires', () => {
  it('lets NGINX reuse an allow for the cap when the token lives longer', async () => {
    const token = await mintToken({ now: T, claims: { exp: T + 300 } });
    expect(accelExpires(await ask(capped, token))).toBe('5');
    // A cache hit says the same: the verifier's own cache keeps the token's window.
    expect(accelExpires(await ask(capped, token))).toBe('5');
  });

  it("never reaches past the token's exp, rounded down to whole seconds", async () => {
    const token = await mintToken({ now: T, claims: { exp: T + 3 } });
    expect(accelExpires(await ask(capped, token))).toBe('3');
    clock.advance(2.5);
    expect(accelExpires(await ask(capped, token))).toBe('0');
    clock.advance(-2.5);
  });

  it('keeps a 403 for missing scopes at most the cap', async () => {
    const token = await mintToken({ now: T, claims: { scope: 'openid' } });
    const decision = await ask(capped, token);
    expect(answerOf(decision).status).toBe(403);
    expect(accelExpires(decision)).toBe('5');
  });

  it('tells NGINX never to store a 401', async () => {
    const expired = await mintToken({ now: T - 600 });
    for (const decision of [
      await ask(capped, undefined),
      await ask(capped, 'garbage'),
      await ask(capped, expired),
    ]) {
      expect(answerOf(decision).status).toBe(401);
      expect(accelExpires(decision)).toBe('0');
    }
  });

  it('is 0 on every answer when the cap is 0', async () => {
    const token = await mintToken({ now: T });
    const decision = await ask(off, token);
    expect(answerOf(decision).status).toBe(204);
    expect(accelExpires(decision)).toBe('0');
  });

  it("stops at the key set's trust: last good fetch + maxStale", async () => {
    const stale = buildService(
      {
        ...env,
        VERIFIER_JWKS_URI: jwks.url,
        VERIFIER_EDGE_CACHE_TTL: '60s',
        VERIFIER_JWKS_REFRESH: '10s',
        VERIFIER_JWKS_MAX_STALE: '20s',
      },
      { now: clock.now },
    );
    await stale.service.start();
    try {
      const token = await mintToken({ now: T, claims: { exp: T + 300 } });
      // Fetched at T: trusted until T + 20 whatever the cap (60) or exp (300).
      expect(accelExpires(await ask(stale, token))).toBe('20');
    } finally {
      await stale.service.stop(0);
    }
  });
});

describe('client ids NGINX would alter', () => {
  it.each([
    ['a trailing space', 'shop-spa '],
    ['a leading space', ' shop-spa'],
    ['a tab', 'shop-spa\t'],
    ['a non-ASCII character', 'shop-spä'],
    ['a line break', 'shop\nspa'],
    ['257 characters', `${'a'.repeat(256)}b`],
  ])(
    'refuses a client id with %s (401 client_id_invalid), never choosing another set',
    async (_, azp) => {
      const token = await mintToken({ now: T, claims: { azp } });
      const decision = await ask(capped, token);
      expect(decision.reason).toBe('client_id_invalid');
      const answer = answerOf(decision);
      expect(answer.status).toBe(401);
      expect(answer.headers).toContainEqual([
        'WWW-Authenticate',
        'Bearer realm="secret-gate", error="invalid_token", error_description="client_id_invalid"',
      ]);
    },
  );

  it('passes ids of up to 256 visible characters with inner spaces unchanged', async () => {
    for (const azp of ['shop spa', 'a'.repeat(256), 'x']) {
      const token = await mintToken({ now: T, claims: { azp } });
      const decision = await ask(capped, token);
      expect(decision.outcome).toBe('allow');
      expect(answerOf(decision).headers).toContainEqual(['X-Auth-Client', azp]);
    }
  });
});

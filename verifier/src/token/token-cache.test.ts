import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statusOf, verdictOf } from '../testing/answer.js';
import { createAuthorizer } from '../decision/authorize.js';
import { loadConfig } from '../config/load.js';
import { createTokenCache } from './token-cache.js';
import { createTokenVerifier, type CacheLookup } from './token-verifier.js';
import type { JwtVerifier } from './jwt-verifier.js';
import type { VerifiedToken } from './verified-token.js';
import {
  AUDIENCE,
  captureLogger,
  ISSUER,
  manualClock,
  mintToken,
  startJwksServer,
  type JwksServer,
} from '../testing/fixtures.js';
import { buildService } from '../testing/service.js';

const identity = { sub: 'u', client: 'c', scopes: ['s'], issuer: ISSUER };
function entry(
  exp: number,
  extra: Partial<VerifiedToken> & { issuer?: string } = {},
): VerifiedToken {
  const { issuer = ISSUER, ...rest } = extra;
  return { identity: { ...identity, issuer }, exp, nbf: undefined, kid: 'k1', ...rest };
}

function cacheFor(
  clock: ReturnType<typeof manualClock>,
  bounds: { maxEntries: number; maxBytes: number; maxTtl: number },
) {
  return createTokenCache({ ...bounds, now: clock.now });
}

/**
 * An authorizer whose verifier (the same for every issuer named) counts its calls and holds each
 * one until `release()`, so that concurrent misses meet.
 */
function heldAuthorizer(
  config: ReturnType<typeof loadConfig>,
  clock: ReturnType<typeof manualClock>,
  issuers: string[],
  onLookup?: (lookup: CacheLookup) => void,
) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let verifications = 0;
  const verifier: JwtVerifier = async () => {
    verifications++;
    await gate;
    return {
      identity: { ...identity, scopes: [] },
      exp: clock.seconds() + 300,
      nbf: undefined,
      kid: 'k1',
    };
  };
  const authorize = createAuthorizer({
    config,
    verifyToken: createTokenVerifier({
      config,
      verifiers: new Map(issuers.map((issuer) => [issuer, verifier])),
      cache: createTokenCache({ ...config.cache, now: clock.now }),
      onLookup,
    }),
    logger: captureLogger().logger,
  });
  return { authorize, release: () => release(), verifications: () => verifications };
}

describe('decision cache invariants', () => {
  it('an entry never outlives its token exp', () => {
    const clock = manualClock();
    const cache = cacheFor(clock, { maxEntries: 10, maxBytes: 1e6, maxTtl: 3600 });
    cache.set('a', entry(clock.seconds() + 60));
    clock.advance(59);
    expect(cache.get('a')).toBeDefined();
    clock.advance(1);
    expect(cache.get('a')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('a hit answers exactly what was verified (identity, time window, key, binding, session)', () => {
    const clock = manualClock();
    const cache = cacheFor(clock, { maxEntries: 10, maxBytes: 1e6, maxTtl: 3600 });
    const stored = entry(clock.seconds() + 60, {
      nbf: clock.seconds() - 5,
      keyTrustedUntil: clock.seconds() + 30,
      jkt: 'thumbprint',
      session: { iat: clock.seconds() - 5, sid: 's1', email: undefined },
    });
    cache.set('a', stored);
    expect(cache.get('a')).toEqual(stored);
    const bearer = entry(clock.seconds() + 60);
    cache.set('b', bearer);
    expect(cache.get('b')).toEqual({ ...bearer, keyTrustedUntil: undefined });
  });

  it('a hit keeps the step-up claims, so a step-up policy checks them on every request', () => {
    const clock = manualClock();
    const cache = cacheFor(clock, { maxEntries: 10, maxBytes: 1e6, maxTtl: 3600 });
    const authentication = {
      acr: ['urn:secret-gate:mfa'],
      amr: ['pwd', 'otp'],
      authTime: clock.seconds() - 30,
      tolerance: 30,
    };
    const stored = entry(clock.seconds() + 60, { authentication });
    cache.set('a', stored);
    expect(cache.get('a')?.authentication).toEqual(authentication);
  });

  it('an entry never outlives maxTtl', () => {
    const clock = manualClock();
    const cache = cacheFor(clock, { maxEntries: 10, maxBytes: 1e6, maxTtl: 30 });
    cache.set('a', entry(clock.seconds() + 3600));
    clock.advance(29);
    expect(cache.get('a')).toBeDefined();
    clock.advance(2);
    expect(cache.get('a')).toBeUndefined();
  });

  it('re-checks nbf on every hit', () => {
    const clock = manualClock();
    const cache = cacheFor(clock, { maxEntries: 10, maxBytes: 1e6, maxTtl: 3600 });
    cache.set('a', entry(clock.seconds() + 600, { nbf: clock.seconds() + 10 }));
    expect(cache.get('a')).toBeUndefined();
  });

  it('an already expired token is not stored', () => {
    const clock = manualClock();
    const cache = cacheFor(clock, { maxEntries: 10, maxBytes: 1e6, maxTtl: 3600 });
    cache.set('a', entry(clock.seconds() - 1));
    expect(cache.size).toBe(0);
  });

  it('is bounded by entries', () => {
    const clock = manualClock();
    const cache = cacheFor(clock, { maxEntries: 3, maxBytes: 1e6, maxTtl: 3600 });
    for (const key of ['a', 'b', 'c', 'd']) cache.set(key, entry(clock.seconds() + 600));
    expect(cache.size).toBe(3);
    expect(cache.get('a')).toBeUndefined();
  });

  it('is bounded by bytes', () => {
    const clock = manualClock();
    const cache = cacheFor(clock, { maxEntries: 1000, maxBytes: 5000, maxTtl: 3600 });
    for (let i = 0; i < 100; i++) cache.set(`key-${i}`, entry(clock.seconds() + 600));
    expect(cache.size).toBeLessThan(100);
    expect(cache.bytes).toBeLessThanOrEqual(5000);
  });

  it('drops the entries of a kid that left, and entries without a kid', () => {
    const clock = manualClock();
    const cache = cacheFor(clock, { maxEntries: 10, maxBytes: 1e6, maxTtl: 3600 });
    const exp = clock.seconds() + 600;
    cache.set('k1', entry(exp, { kid: 'k1' }));
    cache.set('k2', entry(exp, { kid: 'k2' }));
    cache.set('none', entry(exp, { kid: undefined }));
    cache.set('other-issuer', entry(exp, { kid: 'k1', issuer: 'https://x' }));
    expect(cache.dropKeys(ISSUER, new Set(['k1']))).toBe(2);
    expect(cache.get('k2')).toBeDefined();
    expect(cache.get('other-issuer')).toBeDefined();
  });

  it("a hit past its issuer's trust horizon is a miss; issuers without a key set keep theirs", () => {
    const clock = manualClock();
    const horizon = clock.now() + 120;
    const cache = createTokenCache({
      maxEntries: 10,
      maxBytes: 1e6,
      maxTtl: 3600,
      now: clock.now,
      trustedUntilSeconds: (issuer) => (issuer === ISSUER ? horizon : undefined),
    });
    const exp = clock.seconds() + 600;
    cache.set('jwt', entry(exp));
    cache.set('opaque', entry(exp, { kid: undefined, issuer: 'https://introspection.test' }));
    clock.advance(120);
    expect(cache.get('jwt')).toBeDefined();
    clock.advance(1);
    expect(cache.get('jwt')).toBeUndefined();
    expect(cache.get('opaque')).toBeDefined();
    expect(cache.size).toBe(1);
  });
});

describe('decision cache in authorize', () => {
  let jwks: JwksServer;
  beforeAll(async () => {
    jwks = await startJwksServer(['rsaA']);
  });
  afterAll(() => jwks.close());

  it('a token expiring while cached is rejected', async () => {
    const clock = manualClock();
    const { service } = buildService(
      {
        VERIFIER_ISSUER: ISSUER,
        VERIFIER_AUDIENCE: AUDIENCE,
        VERIFIER_JWKS_URI: jwks.url,
        VERIFIER_CLOCK_TOLERANCE: '0',
      },
      { now: clock.now },
    );
    await service.start();
    const token = await mintToken({ now: clock.seconds(), claims: { exp: clock.seconds() + 60 } });
    expect(statusOf(await service.authorize({ authorization: `Bearer ${token}` }))).toBe(204);
    clock.advance(30);
    expect(statusOf(await service.authorize({ authorization: `Bearer ${token}` }))).toBe(204);
    clock.advance(30);
    expect(verdictOf(await service.authorize({ authorization: `Bearer ${token}` }))).toMatchObject({
      status: 401,
      reason: 'token_expired',
    });
    await service.stop(0);
  });

  it('with the IdP down past maxStale, a cached token gets 401 keys_unavailable like a fresh one', async () => {
    const clock = manualClock();
    const idp = await startJwksServer(['rsaA']);
    const { service } = buildService(
      {
        VERIFIER_ISSUER: ISSUER,
        VERIFIER_AUDIENCE: AUDIENCE,
        VERIFIER_JWKS_URI: idp.url,
        VERIFIER_JWKS_REFRESH: '60s',
        VERIFIER_JWKS_MAX_STALE: '120s',
      },
      { now: clock.now },
    );
    try {
      await service.start();
      const exp = clock.seconds() + 3600;
      const cached = await mintToken({ now: clock.seconds(), claims: { exp } });
      const fresh = await mintToken({ now: clock.seconds(), claims: { exp, sub: 'other' } });
      expect(statusOf(await service.authorize({ authorization: `Bearer ${cached}` }))).toBe(204);
      idp.setDown(true);
      clock.advance(120);
      // Within the trust horizon the last good keys (and decisions made with them) still serve.
      expect(statusOf(await service.authorize({ authorization: `Bearer ${cached}` }))).toBe(204);
      clock.advance(1);
      for (const token of [fresh, cached])
        expect(
          verdictOf(await service.authorize({ authorization: `Bearer ${token}` })),
        ).toMatchObject({ status: 401, reason: 'keys_unavailable' });
      idp.setDown(false);
      clock.advance(30);
      expect(statusOf(await service.authorize({ authorization: `Bearer ${cached}` }))).toBe(204);
    } finally {
      await service.stop(0);
      await idp.close();
    }
  });

  it('100 concurrent requests for one new token cause one verification', async () => {
    const clock = manualClock();
    const config = loadConfig({
      VERIFIER_ISSUER: ISSUER,
      VERIFIER_AUDIENCE: AUDIENCE,
      VERIFIER_JWKS_URI: jwks.url,
    });
    const { authorize, release, verifications } = heldAuthorizer(config, clock, [ISSUER]);
    const token = await mintToken({ now: clock.seconds() });
    const pending = Array.from({ length: 100 }, () =>
      authorize({ authorization: `Bearer ${token}` }),
    );
    release();
    const decisions = await Promise.all(pending.map(async (decision) => decision));
    expect(verifications()).toBe(1);
    expect(decisions.every((decision) => statusOf(decision) === 204)).toBe(true);
  });

  it('tells each lookup: a miss, the concurrent misses that join it, then hits', async () => {
    const clock = manualClock();
    const config = loadConfig({
      VERIFIER_ISSUER: ISSUER,
      VERIFIER_AUDIENCE: AUDIENCE,
      VERIFIER_JWKS_URI: jwks.url,
    });
    const lookups: CacheLookup[] = [];
    const { authorize, release } = heldAuthorizer(config, clock, [ISSUER], (lookup) =>
      lookups.push(lookup),
    );
    const token = await mintToken({ now: clock.seconds() });
    const pending = [1, 2, 3].map(() => authorize({ authorization: `Bearer ${token}` }));
    // Told within the call, before anything is awaited: what tracing reads into the request's span.
    expect(lookups).toEqual(['miss', 'coalesced', 'coalesced']);
    release();
    await Promise.all(pending.map(async (decision) => decision));
    await authorize({ authorization: `Bearer ${token}` });
    expect(lookups).toEqual(['miss', 'coalesced', 'coalesced', 'hit']);
    // No token: no lookup, nothing told.
    await authorize({});
    expect(lookups).toHaveLength(4);
  });

  it("a concurrent miss of another policy never rides on this policy's verification", async () => {
    const clock = manualClock();
    const config = loadConfig({ VERIFIER_CONFIG: '/test/config.json' }, () =>
      JSON.stringify({
        issuers: [
          { issuer: ISSUER, audience: AUDIENCE, jwksUri: jwks.url },
          { issuer: 'https://other.test', audience: AUDIENCE, jwksUri: jwks.url },
        ],
        policies: { open: { issuers: [ISSUER] }, partner: { issuers: ['https://other.test'] } },
      }),
    );
    const { authorize, release } = heldAuthorizer(config, clock, [ISSUER, 'https://other.test']);
    const token = await mintToken({ now: clock.seconds() });
    const open = authorize({ authorization: `Bearer ${token}`, policy: 'open' });
    const partner = authorize({ authorization: `Bearer ${token}`, policy: 'partner' });
    release();
    expect(statusOf(await open)).toBe(204);
    expect((await partner).reason).toBe('issuer_not_allowed');
    // And once cached, the hit is checked against the asking policy as well.
    const again = await authorize({ authorization: `Bearer ${token}`, policy: 'partner' });
    expect(again.reason).toBe('issuer_not_allowed');
  });

  it('one verification serves every policy, and each policy is evaluated on every hit', async () => {
    const clock = manualClock();
    const { service } = buildService(
      {},
      {
        now: clock.now,
        file: {
          issuers: [{ issuer: ISSUER, audience: AUDIENCE, jwksUri: jwks.url }],
          policies: {
            open: { issuers: [ISSUER] },
            admin: { issuers: [ISSUER], scopes: ['admin'] },
          },
        },
      },
    );
    await service.start();
    const token = await mintToken({ now: clock.seconds() });
    const ask = (policy: string) => service.authorize({ authorization: `Bearer ${token}`, policy });
    expect(statusOf(await ask('open'))).toBe(204);
    expect(verdictOf(await ask('admin'))).toEqual({ status: 403, reason: 'scope_insufficient' });
    expect(statusOf(await ask('open'))).toBe(204);
    expect(verdictOf(await ask('admin'))).toEqual({ status: 403, reason: 'scope_insufficient' });
    expect(service.cache.size).toBe(1);
    await service.stop(0);
  });

  it('a 401 is never cached', async () => {
    const clock = manualClock();
    const { service } = buildService(
      { VERIFIER_ISSUER: ISSUER, VERIFIER_AUDIENCE: AUDIENCE, VERIFIER_JWKS_URI: jwks.url },
      { now: clock.now },
    );
    await service.start();
    const token = await mintToken({ now: clock.seconds(), claims: { aud: 'someone-else' } });
    await service.authorize({ authorization: `Bearer ${token}` });
    expect(service.cache.size).toBe(0);
    await service.stop(0);
  });
});

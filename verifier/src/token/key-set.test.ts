import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { statusOf, verdictOf } from '../testing/answer.js';
import { createKeySet, type KeySet } from './key-set.js';
import {
  AUDIENCE,
  ISSUER,
  manualClock,
  mintToken,
  PRIVATE_JWKS,
  startJwksServer,
  type JwksServer,
} from '../testing/fixtures.js';
import { buildService } from '../testing/service.js';

let jwks: JwksServer;
let keySet: KeySet | undefined;
beforeEach(async () => {
  jwks = await startJwksServer(['rsaA']);
});
afterEach(async () => {
  keySet?.stop();
  keySet = undefined;
  await jwks.close();
});

function makeKeySet(
  clock: ReturnType<typeof manualClock>,
  extra: Partial<Parameters<typeof createKeySet>[0]> = {},
): KeySet {
  keySet = createKeySet({
    issuer: ISSUER,
    resolveUri: async () => jwks.url,
    refresh: 600,
    cooldown: 30,
    maxStale: 3600,
    timeout: 2,
    now: clock.now,
    ...extra,
  });
  return keySet;
}

const header = (kid: string) => ({ alg: 'RS256', kid });

describe('key set', () => {
  it('loads at start and is ready afterwards', async () => {
    const set = makeKeySet(manualClock());
    expect(set.isReady()).toBe(false);
    await set.start();
    expect(set.isReady()).toBe(true);
    expect(jwks.hits).toBe(1);
    await expect(set.getKey(header(PRIVATE_JWKS.rsaA.kid))).resolves.toBeDefined();
  });

  it('a flood of 1,000 random kids causes at most one fetch per cooldown', async () => {
    const clock = manualClock();
    const set = makeKeySet(clock);
    await set.start();
    const flood = Array.from({ length: 1000 }, (_, i) =>
      set.getKey(header(`random-${i}`)).catch((error: Error) => error),
    );
    const outcomes = await Promise.all(flood);
    expect(
      outcomes.every(
        (outcome) =>
          outcome instanceof Error && (outcome as { code?: string }).code === 'key_unknown',
      ),
    ).toBe(true);
    expect(jwks.hits).toBe(2);
    clock.advance(10);
    await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        set.getKey(header(`later-${i}`)).catch(() => undefined),
      ),
    );
    expect(jwks.hits).toBe(2);
    clock.advance(21);
    await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        set.getKey(header(`after-${i}`)).catch(() => undefined),
      ),
    );
    expect(jwks.hits).toBe(3);
  });

  it('says an unknown kid is refused without a fetch exactly while the cooldown forbids one', async () => {
    const clock = manualClock();
    const set = makeKeySet(clock);
    await set.start();
    // No on-demand fetch yet: the first unknown kid may refetch, so it is not refused at once.
    expect(set.refusesAtOnce!(header('random-1'))).toBe(false);
    await set.getKey(header('random-1')).catch(() => undefined);
    expect(jwks.hits).toBe(2);
    expect(set.refusesAtOnce!(header('random-2'))).toBe(true);
    expect(set.refusesAtOnce!({ alg: 'RS256', kid: 7 } as never)).toBe(true);
    // A kid the set names, or none, is for jose to match: never refused here.
    expect(set.refusesAtOnce!(header(PRIVATE_JWKS.rsaA.kid))).toBe(false);
    expect(set.refusesAtOnce!({ alg: 'RS256' })).toBe(false);
    clock.advance(31);
    expect(set.refusesAtOnce!(header('random-2'))).toBe(false);
  });

  it('a new kid is accepted on first use after rotation', async () => {
    const set = makeKeySet(manualClock());
    await set.start();
    jwks.setKeys(['rsaA', 'rsaB']);
    await expect(set.getKey(header(PRIVATE_JWKS.rsaB.kid))).resolves.toBeDefined();
    expect(jwks.hits).toBe(2);
  });

  it('knows a key once jose matched it, so tokens under it need no wait, and forgets it with the set', async () => {
    const clock = manualClock();
    const set = makeKeySet(clock);
    await set.start();
    const kid = PRIVATE_JWKS.rsaA.kid;
    expect(set.knownKey!(header(kid))).toBeUndefined();
    const key = await set.getKey(header(kid));
    expect(set.knownKey!(header(kid))).toBe(key);
    // Another `alg` is another match (jose may refuse the key for it), and so is another `kid`.
    expect(set.knownKey!({ alg: 'PS256', kid })).toBeUndefined();
    expect(set.knownKey!(header('another'))).toBeUndefined();
    // A stale set knows nothing: `getKey` decides (and refuses) then.
    clock.advance(3601);
    expect(set.knownKey!(header(kid))).toBeUndefined();
    jwks.setKeys(['rsaB']);
    expect(await set.refresh()).toBe(true);
    expect(set.knownKey!(header(kid))).toBeUndefined();
    await expect(set.getKey(header(kid))).rejects.toMatchObject({ code: 'key_unknown' });
  });

  it('keeps serving the last good keys while the IdP is down, up to maxStale', async () => {
    const clock = manualClock();
    const outcomes: string[] = [];
    const set = makeKeySet(clock, { onFetch: (outcome) => outcomes.push(outcome) });
    await set.start();
    jwks.setDown(true);
    clock.advance(1800);
    expect(await set.refresh()).toBe(false);
    expect(set.isReady()).toBe(true);
    await expect(set.getKey(header(PRIVATE_JWKS.rsaA.kid))).resolves.toBeDefined();
    clock.advance(1801);
    expect(set.isReady()).toBe(false);
    await expect(set.getKey(header(PRIVATE_JWKS.rsaA.kid))).rejects.toMatchObject({
      code: 'keys_unavailable',
    });
    expect(outcomes).toEqual(['ok', 'error', 'error']);
    jwks.setDown(false);
    expect(await set.refresh()).toBe(true);
    expect(set.isReady()).toBe(true);
  });

  it('never follows a redirect', async () => {
    const target = await startJwksServer(['rsaB']);
    jwks.setRedirect(target.url);
    const outcomes: Array<string | undefined> = [];
    const set = makeKeySet(manualClock(), {
      onFetch: (outcome, detail) => outcomes.push(`${outcome}: ${detail}`),
    });
    await set.start();
    expect(set.isReady()).toBe(false);
    expect(target.hits).toBe(0);
    expect(outcomes[0]).toMatch(/^error: .*redirect \(302\) refused/);
    await target.close();
  });

  it('refuses a document without a keys array and stays unready', async () => {
    const { createServer } = await import('node:http');
    const server = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"issuer":"x"}'),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const outcomes: string[] = [];
    const set = makeKeySet(manualClock(), {
      resolveUri: async () => `http://127.0.0.1:${port}/jwks`,
      onFetch: (outcome) => outcomes.push(outcome),
    });
    await set.start();
    expect(outcomes).toEqual(['invalid']);
    expect(set.isReady()).toBe(false);
    await expect(set.getKey(header(PRIVATE_JWKS.rsaA.kid))).rejects.toMatchObject({
      code: 'keys_unavailable',
    });
    await new Promise((resolve) => server.close(resolve));
  });

  it('reports the kids that left the set', async () => {
    const removed: Array<ReadonlySet<string | undefined>> = [];
    jwks.setKeys(['rsaA', 'rsaB']);
    const set = makeKeySet(manualClock(), { onKeysRemoved: (kids) => removed.push(kids) });
    await set.start();
    jwks.setKeys(['rsaB']);
    await set.refresh();
    expect(removed).toEqual([new Set([PRIVATE_JWKS.rsaA.kid])]);
  });

  it('schedules the next refresh by Cache-Control max-age, bounded by cooldown and refresh', async () => {
    const { vi } = await import('vitest');
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      jwks.setCacheControl('public, max-age=120');
      const set = makeKeySet(manualClock());
      await set.start();
      await vi.advanceTimersByTimeAsync(119_000);
      expect(jwks.hits).toBe(1);
      await vi.advanceTimersByTimeAsync(1_000);
      await vi.waitFor(() => expect(jwks.hits).toBe(2));
      jwks.setCacheControl('max-age=1');
      await vi.advanceTimersByTimeAsync(120_000);
      await vi.waitFor(() => expect(jwks.hits).toBe(3));
      // max-age=1 is lifted to the 30 s cooldown.
      await vi.advanceTimersByTimeAsync(29_000);
      expect(jwks.hits).toBe(3);
      await vi.advanceTimersByTimeAsync(1_000);
      await vi.waitFor(() => expect(jwks.hits).toBe(4));
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('key rotation through the service', () => {
  it('a removed kid is rejected after refresh and its cached decisions are dropped', async () => {
    const clock = manualClock();
    jwks.setKeys(['rsaA', 'rsaB']);
    const { service, lines } = buildService(
      { VERIFIER_ISSUER: ISSUER, VERIFIER_AUDIENCE: AUDIENCE, VERIFIER_JWKS_URI: jwks.url },
      { now: clock.now },
    );
    await service.start();
    const oldKey = await mintToken({ key: 'rsaA', now: clock.seconds() });
    const newKey = await mintToken({ key: 'rsaB', now: clock.seconds() });
    expect(statusOf(await service.authorize({ authorization: `Bearer ${oldKey}` }))).toBe(204);
    expect(statusOf(await service.authorize({ authorization: `Bearer ${newKey}` }))).toBe(204);
    expect(service.cache.size).toBe(2);

    jwks.setKeys(['rsaB']);
    await service.keySets.get(ISSUER)!.refresh();
    expect(service.cache.size).toBe(1);
    expect(lines.some((line) => line.includes('cached decisions dropped'))).toBe(true);
    expect(verdictOf(await service.authorize({ authorization: `Bearer ${oldKey}` }))).toMatchObject(
      {
        status: 401,
        reason: 'key_unknown',
      },
    );
    expect(statusOf(await service.authorize({ authorization: `Bearer ${newKey}` }))).toBe(204);
    await service.stop(0);
  });

  it('during an IdP outage tokens keep verifying and readiness stays up', async () => {
    const clock = manualClock();
    const { service } = buildService(
      { VERIFIER_ISSUER: ISSUER, VERIFIER_AUDIENCE: AUDIENCE, VERIFIER_JWKS_URI: jwks.url },
      { now: clock.now },
    );
    await service.start();
    jwks.setDown(true);
    clock.advance(3600);
    await service.keySets.get(ISSUER)!.refresh();
    expect(service.isReady()).toBe(true);
    expect(service.routes.readyz().status).toBe(200);
    const token = await mintToken({ now: clock.seconds() });
    expect(statusOf(await service.authorize({ authorization: `Bearer ${token}` }))).toBe(204);
    await service.stop(0);
  });
});

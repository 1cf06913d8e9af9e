// Two verifier replicas sharing one real redis-server as their revocation store: a logout token
// received by one is honoured by the other and by a replica started afterwards; with Redis gone,
// `required` policies fail closed, `checked` ones serve and count it, and /readyz says so; a Redis
// that stops answering on an open connection is noticed too. A full view never acknowledges a
// revocation it would not enforce: refused with 503, or the replica that missed it fails closed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Decision } from '../../verifier/src/decision/decision.js';
import { statusOf } from '../../verifier/src/testing/answer.js';
import { mintLogoutToken } from '../../verifier/src/testing/event-tokens.js';
import {
  mintToken,
  startJwksServer,
  type JwksServer,
} from '../../verifier/src/testing/fixtures.js';
import { createReplicas, revocationFile, until } from '../../verifier/src/testing/replicas.js';
import type { TestService } from '../../verifier/src/testing/service.js';
import { startRedisServer, type RedisServer } from '../support/redis-server.js';

let redis: RedisServer;
let jwks: JwksServer;
const replicas = createReplicas();

/** The replicas' configuration: one issuer with back-channel logout, a `required` policy too. */
const replicaFile = (extra: object = {}) => revocationFile(jwks.url, extra);
const replica = (env: Record<string, string> = {}, url = redis.url) =>
  replicas.build({ VERIFIER_REVOCATION_STORE: url, ...env }, replicaFile());

async function started(env: Record<string, string> = {}, url = redis.url): Promise<TestService> {
  const built = replica(env, url);
  await built.service.start();
  await until(() => built.service.isReady() && built.service.revocation!.store.isCurrent());
  return built;
}

const seconds = () => Math.floor(Date.now() / 1000);
const ask = (at: TestService, token: string, policy = 'secret'): Promise<Decision> =>
  Promise.resolve(at.service.authorize({ policy, authorization: `Bearer ${token}` }));
const logout = (at: TestService, token: string) =>
  at.service.routes.receivers.get('/backchannel-logout')!({
    contentType: 'application/x-www-form-urlencoded',
    body: `logout_token=${encodeURIComponent(token)}`,
  });

beforeAll(async () => {
  redis = await startRedisServer();
  jwks = await startJwksServer(['rsaA']);
}, 20_000);
afterAll(async () => {
  await replicas.stopAll();
  await jwks.close();
  await redis.stop();
});

describe('revocation store shared through Redis', () => {
  let first: TestService;
  let second: TestService;
  let older: string;

  it('a logout received by one replica refuses the token at the other, cached there or not', async () => {
    first = await started();
    second = await started();
    older = await mintToken({ claims: { sub: 'ida' }, now: seconds() - 10 });
    expect(statusOf(await ask(second, older))).toBe(204);
    expect((await logout(first, await mintLogoutToken({ claims: { sub: 'ida' } }))).status).toBe(
      200,
    );
    expect((await ask(first, older)).reason).toBe('token_revoked');
    await until(async () => (await ask(second, older)).reason === 'token_revoked', 1_000);
    const other = await mintToken({ claims: { sub: 'jon' }, now: seconds() - 10 });
    expect(statusOf(await ask(second, other))).toBe(204);
  });

  it('a replayed logout token is refused at the other replica too', async () => {
    const token = await mintLogoutToken({ claims: { sub: 'kim' } });
    expect((await logout(first, token)).status).toBe(200);
    expect((await logout(second, token)).status).toBe(400);
  });

  it('survives a verifier restart: a replica started afterwards loads the watermarks', async () => {
    await second.service.stop(0);
    const restarted = await started();
    expect((await ask(restarted, older)).reason).toBe('token_revoked');
    const newer = await mintToken({ claims: { sub: 'ida' }, now: seconds() + 2 });
    expect(statusOf(await ask(restarted, newer))).toBe(204);
  });

  it('with Redis gone: required refuses, checked serves and counts it, /readyz says so', async () => {
    const token = await mintToken({ claims: { sub: 'lee' } });
    await redis.stop();
    await until(() => !first.service.revocation!.store.isCurrent());
    const strict = await ask(first, token, 'strict');
    expect({ status: statusOf(strict), reason: strict.reason }).toEqual({
      status: 401,
      reason: 'revocation_unavailable',
    });
    expect(statusOf(await ask(first, token))).toBe(204);
    // What it knew still holds.
    expect((await ask(first, older)).reason).toBe('token_revoked');
    const readyz = first.service.routes.readyz();
    expect(readyz.status).toBe(503);
    expect(readyz.body).toMatch(/revocation store unreachable/);
    expect(await first.service.metrics.render()).toMatch(
      /verifier_revocation_unchecked_total [1-9]/,
    );
    const refused = await logout(first, await mintLogoutToken({ claims: { sub: 'lee' } }));
    expect(refused.status).toBe(503);
  });
});

describe('a revocation store that wants a password', () => {
  const PASSWORD = 'revocation-store-password';
  let guarded: RedisServer;
  beforeAll(async () => {
    guarded = await startRedisServer({ requirePass: PASSWORD });
  });
  afterAll(() => guarded.stop());

  it("is reached with the replay store's password, and is never current without it", async () => {
    const file = (password?: object) =>
      replicaFile({
        revocation: { store: guarded.url },
        ...(password === undefined ? {} : { dpop: { replayPassword: password } }),
      });
    const withPassword = replicas.build(
      { REDIS_PASSWORD: PASSWORD },
      file({ env: 'REDIS_PASSWORD' }),
    );
    const without = replicas.build({}, file());
    await withPassword.service.start();
    await until(() => withPassword.service.revocation!.store.isCurrent());
    const token = await mintToken({ claims: { sub: 'ana' }, now: seconds() - 10 });
    expect(
      (await logout(withPassword, await mintLogoutToken({ claims: { sub: 'ana' } }))).status,
    ).toBe(200);
    expect((await ask(withPassword, token)).reason).toBe('token_revoked');

    await without.service.start();
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(without.service.revocation!.store.isCurrent()).toBe(false);
    expect(without.lines.join('\n')).not.toContain(PASSWORD);
  });
});

describe('a Redis that stops answering on an open connection', () => {
  let paused: RedisServer;
  beforeAll(async () => {
    paused = await startRedisServer();
  });
  afterAll(() => paused.stop());

  it('makes the view not current within seconds (an unanswered PING), and current again once it answers', async () => {
    const watched = await started({}, paused.url);
    paused.pause();
    // No `close` arrives from a peer that stopped: the subscriber's unanswered PING says so.
    const stoppedAt = Date.now();
    await until(() => !watched.service.revocation!.store.isCurrent(), 5_000);
    expect(Date.now() - stoppedAt).toBeLessThan(4_000);
    expect(watched.service.routes.readyz().body).toMatch(/revocation store unreachable/);
    const token = await mintToken({ claims: { sub: 'pia' } });
    expect((await ask(watched, token, 'strict')).reason).toBe('revocation_unavailable');
    paused.resume();
    await until(() => watched.service.revocation!.store.isCurrent(), 10_000);
    expect(statusOf(await ask(watched, token, 'strict'))).toBe(204);
  }, 20_000);
});

describe('a full revocation view', () => {
  let shared: RedisServer;
  beforeAll(async () => {
    shared = await startRedisServer();
  });
  afterAll(() => shared.stop());

  it('refuses with 503 what it cannot hold, and a replica that missed one refuses every token it cannot clear', async () => {
    const bound = (entries: number) => ({ VERIFIER_REVOCATION_VIEW_MAX_ENTRIES: String(entries) });
    const [first, second] = [
      await started(bound(3), shared.url),
      await started(bound(3), shared.url),
    ];
    // A replica with a smaller view: it will miss the third watermark the others hold.
    const small = await started(bound(2), shared.url);
    const tokens = new Map<string, string>();
    for (const sub of ['v1', 'v2', 'v3', 'v4', 'bystander'])
      tokens.set(sub, await mintToken({ claims: { sub }, now: seconds() - 10 }));
    for (const sub of ['v1', 'v2', 'v3']) {
      const answer = await logout(first, await mintLogoutToken({ claims: { sub } }));
      expect({ sub, status: answer.status }).toEqual({ sub, status: 200 });
    }
    // Acknowledged, so enforced everywhere: the small replica refuses v3 as unavailable, and with
    // it every token its view cannot clear.
    for (const at of [first, second])
      await until(async () => (await ask(at, tokens.get('v3')!)).reason === 'token_revoked');
    expect((await ask(small, tokens.get('v3')!)).reason).toBe('revocation_unavailable');
    expect((await ask(small, tokens.get('bystander')!)).reason).toBe('revocation_unavailable');
    expect((await ask(small, tokens.get('v1')!)).reason).toBe('token_revoked');
    expect(small.service.routes.readyz()).toMatchObject({
      status: 503,
      body: expect.stringMatching(/revocation view overflowed/),
    });
    expect(await small.service.metrics.render()).toMatch(/verifier_revocation_view_complete 0/);
    expect(statusOf(await ask(second, tokens.get('bystander')!))).toBe(204);

    // Full: the next revocation is refused, never acknowledged, at either replica; nothing changed.
    for (const at of [first, second]) {
      const refused = await logout(at, await mintLogoutToken({ claims: { sub: 'v4' } }));
      expect(refused.status).toBe(503);
      expect(JSON.parse(refused.body)).toEqual({ error: 'temporarily_unavailable' });
      expect(statusOf(await ask(at, tokens.get('v4')!))).toBe(204);
      expect(at.service.routes.readyz().body).toMatch(/revocation view full/);
    }
    const text = await first.service.metrics.render();
    expect(text).toMatch(/verifier_revocation_view_capacity 3/);
    expect(text).toMatch(/verifier_revocation_watermarks 3/);
    expect(text).toMatch(
      /verifier_revocations_refused_total\{channel="backchannel_logout",reason="store_unavailable"\} 1/,
    );
  }, 20_000);
});

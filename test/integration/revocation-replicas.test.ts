// Two verifier replicas sharing one real redis-server as their revocation store: a logout token
// received by one is honoured by the other and by a replica started afterwards; with Redis gone,
// `required` policies fail closed, `checked` ones serve and count it, and /readyz says so.
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
const replica = () => replicas.build({ VERIFIER_REVOCATION_STORE: redis.url }, replicaFile());

async function started(): Promise<TestService> {
  const built = replica();
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

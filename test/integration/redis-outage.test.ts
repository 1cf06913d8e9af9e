// Redis going away and coming back under running verifier replicas, with a real redis-server
// stopped and started again on the same port. What a user notices: while it is down, `required`
// policies and `dpop: required` refuse (never a secret) and /readyz says why; once it is back, the
// replicas recover without a restart: a revocation pushed to one is honoured by the other within
// `revocation.maxLatency`, and a proof used at one is refused at the other. An empty Redis (killed
// without persistence) lost the watermarks: the replicas write back the ones they hold.
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Decision } from '../../verifier/src/decision/decision.js';
import { answerOf, statusOf } from '../../verifier/src/testing/answer.js';
import { mintLogoutToken } from '../../verifier/src/testing/event-tokens.js';
import {
  mintToken,
  startJwksServer,
  type JwksServer,
} from '../../verifier/src/testing/fixtures.js';
import {
  boundRequest,
  createReplicas,
  dpopFile,
  revocationFile,
  until,
} from '../../verifier/src/testing/replicas.js';
import type { TestService } from '../../verifier/src/testing/service.js';
import { startRedisServer, type RedisServer } from '../support/redis-server.js';

/** `revocation.maxLatency`'s default: the bound the docs promise for another replica. */
const MAX_LATENCY_MS = 6_000;
/** Reconnection is retried at most every 2 s; a loaded machine gets several rounds of that. */
const RECOVERY_MS = 20_000;

let jwks: JwksServer;
let dataDir: string;
const replicas = createReplicas();

beforeAll(async () => {
  jwks = await startJwksServer(['rsaA']);
  dataDir = await mkdtemp(join(tmpdir(), 'sg-redis-outage-'));
}, 20_000);
afterAll(async () => {
  await replicas.stopAll();
  await jwks.close();
  await rm(dataDir, { recursive: true, force: true });
});

/** Long enough for several reconnection attempts (and reloads) to fail before Redis returns. */
const outlastReconnections = () => new Promise((resolve) => setTimeout(resolve, 3_000));

const seconds = () => Math.floor(Date.now() / 1000);
const ask = (at: TestService, request: object): Promise<Decision> =>
  Promise.resolve(at.service.authorize(request));
const bearer = (token: string, policy = 'secret') => ({ policy, authorization: `Bearer ${token}` });

describe('the revocation store across a Redis outage', () => {
  let redis: RedisServer;
  let first: TestService;
  let second: TestService;
  /** Revoked before any outage; must stay refused through all of them. */
  let older: string;

  const replica = () => replicas.build({ VERIFIER_REDIS_URL: redis.url }, revocationFile(jwks.url));
  const current = (built: TestService) => built.service.revocation!.store.isCurrent();
  async function started(): Promise<TestService> {
    const built = replica();
    await built.service.start();
    await until(() => built.service.isReady() && current(built), RECOVERY_MS);
    return built;
  }
  const logout = async (at: TestService, sub: string) =>
    (
      await at.service.routes.receivers.get('/backchannel-logout')!({
        contentType: 'application/x-www-form-urlencoded',
        body: `logout_token=${encodeURIComponent(await mintLogoutToken({ claims: { sub } }))}`,
      })
    ).status;
  const reason = async (at: TestService, token: string, policy?: string) =>
    (await ask(at, bearer(token, policy))).reason;

  beforeAll(async () => {
    redis = await startRedisServer({ dataDir });
    first = await started();
    second = await started();
    older = await mintToken({ claims: { sub: 'ida' }, now: seconds() - 10 });
    expect(await logout(first, 'ida')).toBe(200);
    await until(async () => (await reason(second, older)) === 'token_revoked', MAX_LATENCY_MS);
  }, 60_000);
  afterAll(() => redis.stop());

  async function whileDown(): Promise<void> {
    await until(() => !current(first) && !current(second), RECOVERY_MS);
    await outlastReconnections();
    const token = await mintToken({ claims: { sub: 'lee' } });
    for (const built of [first, second]) {
      const strict = await ask(built, bearer(token, 'strict'));
      expect({ status: statusOf(strict), reason: strict.reason }).toEqual({
        status: 401,
        reason: 'revocation_unavailable',
      });
      expect(statusOf(await ask(built, bearer(token)))).toBe(204);
      // What each replica held before the outage still holds.
      expect(await reason(built, older)).toBe('token_revoked');
      const readyz = built.service.routes.readyz();
      expect(readyz.status).toBe(503);
      expect(readyz.body).toMatch(/revocation store unreachable/);
    }
    // Nobody can be told, so the sender is asked to retry.
    expect(await logout(first, 'lee')).toBe(503);
  }

  async function afterReturn(sub: string): Promise<void> {
    await until(() => current(first) && current(second), RECOVERY_MS);
    const token = await mintToken({ claims: { sub }, now: seconds() - 10 });
    for (const built of [first, second]) {
      expect(built.service.routes.readyz().status).toBe(200);
      expect(statusOf(await ask(built, bearer(token, 'strict')))).toBe(204);
    }
    // The subscription came back: a logout at the first replica reaches the second.
    expect(await logout(first, sub)).toBe(200);
    expect(await reason(first, token)).toBe('token_revoked');
    await until(async () => (await reason(second, token)) === 'token_revoked', MAX_LATENCY_MS);
    expect(await reason(second, token, 'strict')).toBe('token_revoked');
    // And the other way round.
    const other = await mintToken({ claims: { sub: `${sub}-2` }, now: seconds() - 10 });
    expect(await logout(second, `${sub}-2`)).toBe(200);
    await until(async () => (await reason(first, other)) === 'token_revoked', MAX_LATENCY_MS);
  }

  it('Redis shut down cleanly and started on its data: the replicas reload and follow again', async () => {
    await redis.stop('SIGTERM');
    await stat(join(dataDir, 'dump.rdb'));
    await whileDown();
    redis = await startRedisServer({ port: redis.port, dataDir });
    await afterReturn('max');
    const late = await started();
    expect(await reason(late, older)).toBe('token_revoked');
  });

  it('Redis killed and started empty: the replicas write back what they hold, and follow again', async () => {
    await redis.stop('SIGKILL');
    await rm(join(dataDir, 'dump.rdb'), { force: true });
    await whileDown();
    redis = await startRedisServer({ port: redis.port });
    await afterReturn('ned');
    // A replica started now loads the watermarks the empty server got back from the others.
    const late = await started();
    expect(await reason(late, older)).toBe('token_revoked');
    const max = await mintToken({ claims: { sub: 'max' }, now: seconds() - 10 });
    expect(await reason(late, max)).toBe('token_revoked');
    // Tokens issued after the logouts were never revoked.
    const newer = await mintToken({ claims: { sub: 'ida' }, now: seconds() + 2 });
    expect(statusOf(await ask(late, bearer(newer)))).toBe(204);
  });
});

describe('the DPoP replay store across a Redis outage', () => {
  const ORIGIN = 'https://gate.example.com';
  let redis: RedisServer;
  let first: TestService;
  let second: TestService;

  beforeAll(async () => {
    redis = await startRedisServer();
    const env = { VERIFIER_REDIS_URL: redis.url };
    first = replicas.build(env, dpopFile(jwks.url, 'required'));
    second = replicas.build(env, dpopFile(jwks.url, 'required'));
    for (const built of [first, second]) {
      await built.service.start();
      await until(() => built.service.isReady(), RECOVERY_MS);
    }
  }, 60_000);
  afterAll(() => redis.stop());

  /** Used at the first replica, then replayed to the second: refused there. */
  async function replayRefused(): Promise<boolean> {
    const request = await boundRequest(ORIGIN);
    expect(statusOf(await ask(first, request))).toBe(204);
    const replayed = await ask(second, request);
    expect({ status: statusOf(replayed), reason: replayed.reason }).toEqual({
      status: 401,
      reason: 'dpop_proof_replayed',
    });
    return true;
  }

  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    it(`fails closed while Redis is down (${signal}), and refuses replays across replicas once it is back`, async () => {
      expect(await replayRefused()).toBe(true);
      await redis.stop(signal);
      for (const built of [first, second]) {
        const refused = await ask(built, await boundRequest(ORIGIN));
        expect({ status: statusOf(refused), reason: refused.reason }).toEqual({
          status: 401,
          reason: 'dpop_replay_unavailable',
        });
        expect(answerOf(refused).headers[0]?.[1]).toMatch(/^DPoP error="invalid_dpop_proof"/);
      }
      await outlastReconnections();
      redis = await startRedisServer({ port: redis.port });
      // The first proofs after the return may still meet a reconnecting client: refused, never
      // served unchecked. Then every proof is checked across replicas again.
      await until(async () => {
        for (const built of [first, second]) {
          const answer = await ask(built, await boundRequest(ORIGIN));
          if (statusOf(answer) === 204) continue;
          expect(answer.reason).toBe('dpop_replay_unavailable');
          return false;
        }
        return true;
      }, RECOVERY_MS);
      expect(await replayRefused()).toBe(true);
    });
  }
});

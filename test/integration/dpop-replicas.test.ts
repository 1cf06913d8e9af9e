// Two verifier replicas sharing one real redis-server as their DPoP replay store: a proof used at
// one replica is refused at the other, and an unreachable store fails closed for `required`; a
// store with a password is reached with the one the configuration names (a variable or a file).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Decision } from '../../verifier/src/decision/decision.js';
import { answerOf, statusOf } from '../../verifier/src/testing/answer.js';
import { signProof } from '../../verifier/src/testing/dpop-proof.js';
import { startJwksServer, type JwksServer } from '../../verifier/src/testing/fixtures.js';
import { boundRequest, createReplicas, dpopFile } from '../../verifier/src/testing/replicas.js';
import { buildService, type TestService } from '../../verifier/src/testing/service.js';
import { startRedisServer, type RedisServer } from '../support/redis-server.js';

const ORIGIN = 'https://gate.example.com';
let redis: RedisServer;
let jwks: JwksServer;
/** Every replica built here, stopped after the suite. */
const built = createReplicas();
const replicas: TestService[] = [];
let strict: TestService;

async function untilReady(service: TestService['service']): Promise<void> {
  await service.start();
  for (let i = 0; i < 100 && !service.isReady(); i++)
    await new Promise((resolve) => setTimeout(resolve, 20));
  expect(service.isReady()).toBe(true);
}

beforeAll(async () => {
  redis = await startRedisServer();
  jwks = await startJwksServer(['rsaA']);
  const env = { VERIFIER_DPOP_REPLAY_STORE: redis.url };
  for (let i = 0; i < 2; i++) replicas.push(built.build(env, dpopFile(jwks.url, 'allowed')));
  strict = built.build(env, dpopFile(jwks.url, 'required'));
  for (const replica of [...replicas, strict]) await untilReady(replica.service);
});
afterAll(async () => {
  await built.stopAll();
  await jwks.close();
  await redis.stop();
});

const ask = (replica: TestService, request: object): Promise<Decision> =>
  Promise.resolve(replica.service.authorize(request));

describe('DPoP replay store shared through Redis', () => {
  it('refuses at a second replica a proof the first one accepted', async () => {
    const request = await boundRequest(ORIGIN);
    expect(statusOf(await ask(replicas[0]!, request))).toBe(204);
    const replayed = await ask(replicas[1]!, request);
    expect(statusOf(replayed)).toBe(401);
    expect(replayed.reason).toBe('dpop_proof_replayed');
    expect(answerOf(replayed).headers[0]?.[1]).toMatch(/^DPoP error="invalid_dpop_proof"/);
  });

  it('lets every replica accept a fresh proof for the same token', async () => {
    const request = await boundRequest(ORIGIN);
    expect(statusOf(await ask(replicas[0]!, request))).toBe(204);
    const fresh = {
      ...request,
      dpop: await signProof({
        htu: `${ORIGIN}/secret`,
        accessToken: request.authorization.slice(5),
      }),
    };
    expect(statusOf(await ask(replicas[1]!, fresh))).toBe(204);
  });

  it('with Redis gone: required fails closed, allowed checks replays in each process', async () => {
    await redis.stop();
    const forStrict = await boundRequest(ORIGIN);
    const refused = await ask(strict, forStrict);
    expect(statusOf(refused)).toBe(401);
    expect(refused.reason).toBe('dpop_replay_unavailable');

    const request = await boundRequest(ORIGIN);
    expect(statusOf(await ask(replicas[0]!, request))).toBe(204);
    expect((await ask(replicas[0]!, request)).reason).toBe('dpop_proof_replayed');
  });
});

describe('a replay store that wants a password', () => {
  const PASSWORD = 'replay-store-password';
  let guarded: RedisServer;
  beforeAll(async () => {
    guarded = await startRedisServer({ requirePass: PASSWORD });
  });
  afterAll(() => guarded.stop());

  it('is used with the password the configuration names, and refuses every proof without it', async () => {
    const withPassword = buildService(
      { REDIS_PASSWORD: PASSWORD },
      {
        file: {
          ...dpopFile(jwks.url, 'required'),
          dpop: { replayStore: guarded.url, replayPassword: { env: 'REDIS_PASSWORD' } },
        },
      },
    );
    const without = buildService(
      {},
      { file: dpopFile(jwks.url, 'required', { dpop: { replayStore: guarded.url } }) },
    );
    try {
      await untilReady(withPassword.service);
      const request = await boundRequest(ORIGIN);
      expect(statusOf(await ask(withPassword, request))).toBe(204);
      expect((await ask(withPassword, request)).reason).toBe('dpop_proof_replayed');

      await without.service.start();
      const refused = await ask(without, await boundRequest(ORIGIN));
      expect(statusOf(refused)).toBe(401);
      expect(refused.reason).toBe('dpop_replay_unavailable');
      expect(without.lines.join('\n')).not.toContain(PASSWORD);
    } finally {
      await withPassword.service.stop(0);
      await without.service.stop(0);
    }
  });
});

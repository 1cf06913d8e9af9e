// Two verifier replicas sharing a real Redis as their DPoP replay store, one assertion table run on
// a single node, a Sentinel primary with two replicas and a three-primary Cluster: a proof used at
// one replica is refused at the other, and an unreachable store fails closed for `required`. The
// chaos row kills Sentinel's primary while proofs arrive: no proof accepted before, during or after
// the failover is accepted again at another replica. A store with a user and password is reached
// with the ones the configuration names (a variable or a file).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Decision } from '../../verifier/src/decision/decision.js';
import { answerOf, statusOf } from '../../verifier/src/testing/answer.js';
import { signProof } from '../../verifier/src/testing/dpop-proof.js';
import { startJwksServer, type JwksServer } from '../../verifier/src/testing/fixtures.js';
import {
  boundRequest,
  createReplicas,
  dpopFile,
  until,
} from '../../verifier/src/testing/replicas.js';
import { buildService, type TestService } from '../../verifier/src/testing/service.js';
import { startRedisServer, type RedisServer } from '../support/redis-server.js';
import { startTopology, TOPOLOGIES, type RedisTopology } from '../support/redis-topologies.js';

const ORIGIN = 'https://gate.example.com';
let jwks: JwksServer;
/** Every replica built here, stopped after the suite. */
const built = createReplicas();

async function untilReady(service: TestService['service']): Promise<void> {
  await service.start();
  await until(() => service.isReady(), 10_000);
}

beforeAll(async () => {
  jwks = await startJwksServer(['rsaA']);
});
afterAll(async () => {
  await built.stopAll();
  await jwks.close();
});

const ask = (replica: TestService, request: object): Promise<Decision> =>
  Promise.resolve(replica.service.authorize(request));

describe.each(TOPOLOGIES)('DPoP replay store shared through Redis (%s)', (name) => {
  let topology: RedisTopology;
  const replicas: TestService[] = [];
  let strict: TestService;
  beforeAll(async () => {
    topology = await startTopology(name);
    const env = { VERIFIER_REDIS_URL: topology.url };
    for (let i = 0; i < 2; i++) replicas.push(built.build(env, dpopFile(jwks.url, 'allowed')));
    strict = built.build(env, dpopFile(jwks.url, 'required'));
    for (const replica of [...replicas, strict]) await untilReady(replica.service);
  }, 60_000);
  afterAll(() => topology.stop());

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
    await topology.stop();
    const forStrict = await boundRequest(ORIGIN);
    const refused = await ask(strict, forStrict);
    expect(statusOf(refused)).toBe(401);
    expect(refused.reason).toBe('dpop_replay_unavailable');

    const request = await boundRequest(ORIGIN);
    expect(statusOf(await ask(replicas[0]!, request))).toBe(204);
    expect((await ask(replicas[0]!, request)).reason).toBe('dpop_proof_replayed');
  });
});

describe('chaos: the Sentinel primary killed while proofs arrive', () => {
  let topology: RedisTopology;
  beforeAll(async () => {
    topology = await startTopology('sentinel');
  }, 60_000);
  afterAll(() => topology.stop());

  it('accepts no replay: each proof accepted around the failover is refused at the other replica', async () => {
    const env = { VERIFIER_REDIS_URL: topology.url };
    const [first, second] = [0, 1].map(() => built.build(env, dpopFile(jwks.url, 'required')));
    for (const replica of [first!, second!]) await untilReady(replica.service);
    const accepted: object[] = [];
    let refused = 0;
    let failedOver = false;
    let killedAt = Number.POSITIVE_INFINITY;
    let acceptedAfter = 0;
    const killing = (async () => {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      killedAt = Date.now();
      await topology.killPrimary();
      failedOver = true;
    })();
    // One proof every 50 ms at the first replica until ten are accepted after the promotion.
    const stopAt = Date.now() + 30_000;
    while (!(failedOver && acceptedAfter >= 10) && Date.now() < stopAt) {
      const request = await boundRequest(ORIGIN);
      const decision = await ask(first!, request);
      if (statusOf(decision) === 204) {
        accepted.push(request);
        if (Date.now() > killedAt) acceptedAfter++;
      } else {
        expect(decision.reason).toBe('dpop_replay_unavailable');
        refused++;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await killing;

    let replaysAccepted = 0;
    for (const request of accepted)
      if (statusOf(await ask(second!, request)) === 204) replaysAccepted++;
    console.log(
      `sentinel failover: ${accepted.length} proofs accepted, ${refused} refused while no ` +
        `primary answered, ${replaysAccepted} replays accepted`,
    );
    expect(replaysAccepted).toBe(0);
    expect(acceptedAfter).toBeGreaterThanOrEqual(10);
  }, 90_000);
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
          redis: { url: guarded.url, password: { env: 'REDIS_PASSWORD' } },
        },
      },
    );
    const without = buildService(
      {},
      { file: dpopFile(jwks.url, 'required', { redis: { url: guarded.url } }) },
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

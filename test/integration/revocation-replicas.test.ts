// Two verifier replicas sharing a real Redis as their revocation store, one assertion table run on
// a single node, a Sentinel primary with two replicas and a three-primary Cluster: a logout token
// received by one is honoured by the other and by a replica started afterwards; with Redis gone,
// `required` policies fail closed, `checked` ones serve and count it, and /readyz says so. Then
// the chaos row: revocations pushed at a steady rate while Sentinel's primary is killed; every
// accepted one is still enforced on every replica after the failover. A Redis that stops answering
// on an open connection is noticed too, and a full view never acknowledges a revocation it would
// not enforce: refused with 503, or the replica that missed it fails closed.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Decision } from '../../verifier/src/decision/decision.js';
import { statusOf } from '../../verifier/src/testing/answer.js';
import { mintLogoutToken } from '../../verifier/src/testing/event-tokens.js';
import {
  ISSUER,
  mintToken,
  startJwksServer,
  type JwksServer,
} from '../../verifier/src/testing/fixtures.js';
import {
  boundRequest,
  createReplicas,
  revocationFile,
  until,
} from '../../verifier/src/testing/replicas.js';
import type { TestService } from '../../verifier/src/testing/service.js';
import { watermarkKey } from '../../verifier/src/revocation/watermarks.js';
import { startRedisServer, type RedisServer } from '../support/redis-server.js';
import {
  startTlsRedis,
  startTopology,
  TOPOLOGIES,
  type RedisTopology,
  type TlsRedis,
} from '../support/redis-topologies.js';

let jwks: JwksServer;
const replicas = createReplicas();

/** The replicas' configuration: one issuer with back-channel logout, a `required` policy too. */
const replicaFile = (extra: object = {}) => revocationFile(jwks.url, extra);
/** A budget of failed signature checks no test here exhausts; it has tests of its own. */
const UNLIMITED_PUSHES = {
  VERIFIER_REVOCATION_RECEIVER_RATE: '100000r/s',
  VERIFIER_REVOCATION_RECEIVER_BURST: '100000',
};
const replica = (url: string, env: Record<string, string> = {}) =>
  replicas.build({ VERIFIER_REDIS_URL: url, ...UNLIMITED_PUSHES, ...env }, replicaFile());

/** A replica on `url` once its view is loaded; a Sentinel or Cluster client takes a moment more. */
async function started(url: string, env: Record<string, string> = {}): Promise<TestService> {
  const built = replica(url, env);
  await built.service.start();
  await until(() => built.service.isReady() && built.service.revocation!.store.isCurrent(), 10_000);
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
  jwks = await startJwksServer(['rsaA']);
}, 20_000);
afterAll(async () => {
  await replicas.stopAll();
  await jwks.close();
});

describe.each(TOPOLOGIES)('revocation store shared through Redis (%s)', (name) => {
  let topology: RedisTopology;
  let first: TestService;
  let second: TestService;
  let older: string;
  beforeAll(async () => {
    topology = await startTopology(name);
  }, 60_000);
  afterAll(() => topology.stop());

  it('a logout received by one replica refuses the token at the other, cached there or not', async () => {
    first = await started(topology.url);
    second = await started(topology.url);
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
    const restarted = await started(topology.url);
    expect((await ask(restarted, older)).reason).toBe('token_revoked');
    const newer = await mintToken({ claims: { sub: 'ida' }, now: seconds() + 2 });
    expect(statusOf(await ask(restarted, newer))).toBe(204);
  });

  it('with Redis gone: required refuses, checked serves and counts it, /readyz says so', async () => {
    const token = await mintToken({ claims: { sub: 'lee' } });
    await topology.stop();
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

/** One pushed revocation: who, the token it must refuse, what the receiver answered and when. */
interface Push {
  readonly sub: string;
  readonly token: string;
  status: number;
  readonly at: number;
}

describe('chaos: the Sentinel primary killed while revocations arrive', () => {
  let topology: RedisTopology;
  beforeAll(async () => {
    topology = await startTopology('sentinel');
  }, 60_000);
  afterAll(() => topology.stop());

  it('loses no accepted revocation: every one is enforced by every replica after the failover', async () => {
    const [a, b] = [await started(topology.url), await started(topology.url)];
    const pushes: Push[] = [];
    /** What /readyz said while a revocation was refused (no primary reachable). */
    const readiness = new Set<string>();
    async function push(i: number, at: TestService): Promise<void> {
      const sub = `chaos-${i}`;
      const token = await mintToken({ claims: { sub }, now: seconds() - 10 });
      const answer = await logout(at, await mintLogoutToken({ claims: { sub } }));
      pushes.push({ sub, token, status: answer.status, at: Date.now() });
      if (answer.status !== 200 && !at.service.revocation!.store.isCurrent()) {
        const readyz = at.service.routes.readyz();
        readiness.add(`${readyz.status} ${readyz.body}`);
      }
    }
    // One revocation every 50 ms, alternating between the replicas, from a second before the kill
    // until ten have been accepted after the promotion (or 30 s have passed).
    let failedOver = false;
    let killedAt = Number.POSITIVE_INFINITY;
    const killing = (async () => {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      killedAt = Date.now();
      await topology.killPrimary();
      failedOver = true;
    })();
    const acceptedAgain = () =>
      pushes.filter(({ at, status }) => at > killedAt && status === 200).length;
    const stopAt = Date.now() + 30_000;
    for (let i = 0; !(failedOver && acceptedAgain() >= 10) && Date.now() < stopAt; i++) {
      await push(i, i % 2 === 0 ? a : b);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await killing;

    const before = pushes.filter(({ at }) => at <= killedAt);
    const firstAfter = pushes.find(({ at, status }) => at > killedAt && status === 200);
    const gap = (firstAfter?.at ?? Number.NaN) - (before.at(-1)?.at ?? Number.NaN);
    // The transmitter retries what was refused (503) once the store answers again.
    await until(() => [a, b].every((at) => at.service.revocation!.store.isCurrent()), 20_000);
    const refused = pushes.filter(({ status }) => status !== 200);
    for (const retried of refused) {
      const answer = await logout(a, await mintLogoutToken({ claims: { sub: retried.sub } }));
      retried.status = answer.status;
    }
    expect(refused.every(({ status }) => status === 200)).toBe(true);

    // Every replica, and one started after the failover (it loads from the promoted primary).
    const late = await started(topology.url);
    let lost = 0;
    for (const { token } of pushes)
      for (const at of [a, b, late])
        await until(async () => (await ask(at, token)).reason === 'token_revoked', 2_000).catch(
          () => void lost++,
        );
    console.log(
      `sentinel failover: ${pushes.length} revocations pushed (${before.length} before the kill), ` +
        `${refused.length} refused during the failover and accepted on retry, ${lost} lost; ` +
        `no revocation accepted for ${gap} ms`,
    );
    expect(lost).toBe(0);
    expect(pushes.length).toBeGreaterThan(20);
    // `strict` requires revocation checks: while no primary answered, the replicas were unready
    // and said why.
    expect([...readiness].length).toBeGreaterThan(0);
    for (const said of readiness)
      expect(said).toMatch(/^503 [^]*revocation store unreachable: policies that require/);
  }, 90_000);
});

describe('a revocation store behind an ACL user and a password', () => {
  const PASSWORD = 'revocation-store-password';
  let guarded: RedisServer;
  beforeAll(async () => {
    // No default user: only `gate`, with the keys and channels the stores use.
    guarded = await startRedisServer({
      args: [
        '--user',
        'default',
        'off',
        '--user',
        'gate',
        'on',
        `>${PASSWORD}`,
        '~sg:*',
        '&sg:*',
        '+@all',
      ],
    });
  });
  afterAll(() => guarded.stop());

  const file = (redis: object, extra: object = {}) =>
    replicaFile({ redis: { url: guarded.url, ...redis }, ...extra });
  async function revokes(built: TestService, sub: string): Promise<boolean> {
    await built.service.start();
    await until(() => built.service.revocation!.store.isCurrent());
    const token = await mintToken({ claims: { sub }, now: seconds() - 10 });
    expect((await logout(built, await mintLogoutToken({ claims: { sub } }))).status).toBe(200);
    return (await ask(built, token)).reason === 'token_revoked';
  }

  it('is reached as the configured user with the password from a variable', async () => {
    const built = replicas.build(
      { REDIS_PASSWORD: PASSWORD },
      file({ username: 'gate', password: { env: 'REDIS_PASSWORD' } }),
    );
    expect(await revokes(built, 'ana')).toBe(true);
  });

  it('is never current without the password, which no log line holds', async () => {
    const without = replicas.build({}, file({ username: 'gate' }));
    const wrong = replicas.build({}, file({ username: 'gate', password: 'not-it' }));
    for (const built of [without, wrong]) await built.service.start();
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(without.service.revocation!.store.isCurrent()).toBe(false);
    expect(wrong.service.revocation!.store.isCurrent()).toBe(false);
    expect([...without.lines, ...wrong.lines].join('\n')).not.toContain(PASSWORD);
    expect(wrong.lines.join('\n')).not.toContain('not-it');
  });
});

describe('stores over TLS with a private CA', () => {
  let tls: TlsRedis;
  beforeAll(async () => {
    tls = await startTlsRedis();
  }, 30_000);
  afterAll(() => tls.stop());

  const CA_FILE = '/etc/secret-gate/redis/ca.crt';
  const file = (redis: object) =>
    replicaFile({
      redis: { url: tls.url, ...redis },
      policies: {
        secret: { issuers: [ISSUER], scopes: ['secrets:read'], dpop: 'allowed' },
        strict: { issuers: [ISSUER], scopes: ['secrets:read'], revocation: 'required' },
      },
    });

  it('trusts the server through redis.caFile: revocations and proofs are shared', async () => {
    const built = replicas.build({}, file({ caFile: CA_FILE }), { [CA_FILE]: tls.ca });
    await built.service.start();
    await until(() => built.service.isReady() && built.service.revocation!.store.isCurrent());
    const token = await mintToken({ claims: { sub: 'tia' }, now: seconds() - 10 });
    expect((await logout(built, await mintLogoutToken({ claims: { sub: 'tia' } }))).status).toBe(
      200,
    );
    expect((await ask(built, token)).reason).toBe('token_revoked');
    const request = await boundRequest('https://gate.example.com');
    expect(statusOf(await built.service.authorize(request))).toBe(204);
    expect((await built.service.authorize(request)).reason).toBe('dpop_proof_replayed');
  });

  it('never trusts it without the CA: the store stays unreachable', async () => {
    const built = replicas.build({}, file({}));
    await built.service.start();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(built.service.revocation!.store.isCurrent()).toBe(false);
    expect(built.lines.join('\n')).toMatch(/revocation store trouble/);
  });
});

describe('watermarks a version before the hash-tagged layout wrote', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(() => redis.stop());

  it('are loaded and written back under the new names, so their tokens stay refused', async () => {
    const key = watermarkKey('sub', ISSUER, 'uma');
    const raw = new Redis(redis.port, '127.0.0.1');
    await raw.set(`sg:rev:wm:${key}`, String(seconds()), 'PX', 60_000);
    const token = await mintToken({ claims: { sub: 'uma' }, now: seconds() - 10 });
    const upgraded = await started(redis.url);
    expect((await ask(upgraded, token)).reason).toBe('token_revoked');
    expect(await raw.get(`sg:{rev}:wm:${key}`)).toBe(String(await raw.get(`sg:rev:wm:${key}`)));
    raw.disconnect();
  });

  it('are heard from, and told to, replicas of that version during a rolling upgrade', async () => {
    const upgraded = await started(redis.url);
    const raw = new Redis(redis.port, '127.0.0.1');
    const older = raw.duplicate();
    const heard: string[] = [];
    older.on('message', (_channel: string, message: string) => heard.push(message));
    await older.subscribe('sg:rev:watermarks');
    // An old replica's announcement: "ttl at key".
    const token = await mintToken({ claims: { sub: 'ula' }, now: seconds() - 10 });
    await raw.publish(
      'sg:rev:watermarks',
      `60000 ${seconds()} ${watermarkKey('sub', ISSUER, 'ula')}`,
    );
    await until(async () => (await ask(upgraded, token)).reason === 'token_revoked', 1_000);
    // And what the upgraded one receives reaches the old ones.
    expect((await logout(upgraded, await mintLogoutToken({ claims: { sub: 'ugo' } }))).status).toBe(
      200,
    );
    await until(
      () => heard.some((message) => message.endsWith(watermarkKey('sub', ISSUER, 'ugo'))),
      1_000,
    );
    raw.disconnect();
    older.disconnect();
  });
});

describe('a Redis that stops answering on an open connection', () => {
  let paused: RedisServer;
  beforeAll(async () => {
    paused = await startRedisServer();
  });
  afterAll(() => paused.stop());

  it('makes the view not current within seconds (an unanswered PING), and current again once it answers', async () => {
    const watched = await started(paused.url);
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
      await started(shared.url, bound(3)),
      await started(shared.url, bound(3)),
    ];
    // A replica with a smaller view: it will miss the third watermark the others hold.
    const small = await started(shared.url, bound(2));
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

    // Full: the next revocation is refused, never acknowledged, at either replica. The replica
    // does not enforce it, so it is no longer current: the `required` policy refuses every token,
    // the `checked` one serves them counted as unchecked, and /readyz answers 503.
    for (const at of [first, second]) {
      const refused = await logout(at, await mintLogoutToken({ claims: { sub: 'v4' } }));
      expect(refused.status).toBe(503);
      expect(JSON.parse(refused.body)).toEqual({ error: 'temporarily_unavailable' });
      expect((await ask(at, tokens.get('v4')!, 'strict')).reason).toBe('revocation_unavailable');
      expect((await ask(at, tokens.get('bystander')!, 'strict')).reason).toBe(
        'revocation_unavailable',
      );
      expect(statusOf(await ask(at, tokens.get('v4')!))).toBe(204);
      expect(at.service.routes.readyz()).toMatchObject({
        status: 503,
        body: expect.stringMatching(/revocation view full/),
      });
    }
    const text = await first.service.metrics.render();
    expect(text).toMatch(/verifier_revocation_view_capacity 3/);
    expect(text).toMatch(/verifier_revocation_watermarks 3/);
    expect(text).toMatch(
      /verifier_revocations_refused_total\{channel="backchannel_logout",reason="store_unavailable"\} 1/,
    );
  }, 20_000);
});

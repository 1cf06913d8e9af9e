// Minted values on two verifier replicas sharing a real Redis as their revocation store: a user
// fetches minted values from both, a back-channel logout arrives at one, and the user's next fetch
// from the other is refused 401 within the documented bound (`revocation.maxLatency`) and mints
// nothing. Then a few interleavings of fetches and a logout on one replica: once the logout is
// acknowledged, no minted value goes out, from its cache or freshly minted.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Decision } from '../../verifier/src/decision/decision.js';
import { answerOf } from '../../verifier/src/testing/answer.js';
import { mintLogoutToken } from '../../verifier/src/testing/event-tokens.js';
import {
  mintToken,
  startJwksServer,
  type JwksServer,
} from '../../verifier/src/testing/fixtures.js';
import { createReplicas, revocationFile, until } from '../../verifier/src/testing/replicas.js';
import type { TestService } from '../../verifier/src/testing/service.js';
import { startRedisServer, type RedisServer } from '../support/redis-server.js';

/** docs/revocation.md: a revocation is honoured everywhere within `revocation.maxLatency` (6 s). */
const BOUND_MS = 6_000;
const UNLIMITED_PUSHES = {
  VERIFIER_REVOCATION_RECEIVER_RATE: '100000r/s',
  VERIFIER_REVOCATION_RECEIVER_BURST: '100000',
};

let dir: string;
let keyFile: string;
let jwks: JwksServer;
let redis: RedisServer;
const replicas = createReplicas();

/** The replica suites' file, its `secret` policy minting a chat token for the caller. */
function mintingFile(): object {
  const file = revocationFile(jwks.url) as { policies: Record<string, object> };
  const mint = {
    'chat-token': {
      kind: 'jwt',
      alg: 'HS256',
      keyFile,
      ttlSeconds: 120,
      aud: 'chat',
      claims: { user_id: '{sub}' },
    },
  };
  return { ...file, policies: { ...file.policies, secret: { ...file.policies.secret, mint } } };
}

async function started(): Promise<TestService> {
  const built = replicas.build(
    { VERIFIER_REDIS_URL: redis.url, ...UNLIMITED_PUSHES },
    mintingFile(),
  );
  await built.service.start();
  await until(() => built.service.isReady() && built.service.revocation!.store.isCurrent(), 10_000);
  return built;
}

const seconds = () => Math.floor(Date.now() / 1000);
const ask = (at: TestService, token: string): Promise<Decision> =>
  Promise.resolve(at.service.authorize({ policy: 'secret', authorization: `Bearer ${token}` }));
const logout = (at: TestService, sub: string) =>
  (async () =>
    at.service.routes.receivers.get('/backchannel-logout')!({
      contentType: 'application/x-www-form-urlencoded',
      body: `logout_token=${encodeURIComponent(await mintLogoutToken({ claims: { sub } }))}`,
    }))();

/** What NGINX would read: the status and the minted chat token, if the answer carries one. */
function fetched(decision: Decision): { status: number; chat?: string } {
  const answer = answerOf(decision);
  const set = answer.headers.find(([name]) => name.toLowerCase() === 'x-auth-set')?.[1];
  if (set === undefined || !set.includes(' ')) return { status: answer.status };
  const body = JSON.parse(set.slice(set.indexOf(' ') + 1)) as Record<string, unknown>;
  return { status: answer.status, chat: body['chat-token'] as string | undefined };
}

/** `verifier_minted_sets_total{policy="secret",source}` of one replica. */
async function served(at: TestService, source: 'minted' | 'cache'): Promise<number> {
  const text = await at.service.metrics.render();
  const line = new RegExp(
    `^verifier_minted_sets_total\\{policy="secret",source="${source}"\\} (\\d+)$`,
    'm',
  ).exec(text);
  return Number(line?.[1] ?? 0);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sg-minted-replicas-'));
  keyFile = join(dir, 'chat.key');
  writeFileSync(keyFile, 'k'.repeat(48), { mode: 0o600 });
  jwks = await startJwksServer(['rsaA']);
  redis = await startRedisServer();
}, 30_000);
afterAll(async () => {
  await replicas.stopAll();
  await redis?.stop();
  await jwks?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('minted values on two replicas sharing Redis', () => {
  it('a logout at one replica: the next fetch at the other is a 401 within the bound and mints nothing', async () => {
    const [first, second] = [await started(), await started()];
    const bearer = await mintToken({ claims: { sub: 'mia' }, now: seconds() - 10 });
    const atFirst = fetched(await ask(first, bearer));
    const atSecond = fetched(await ask(second, bearer));
    expect(atFirst.status).toBe(204);
    expect(atFirst.chat).toBeTruthy();
    expect(atSecond.status).toBe(204);
    expect(atSecond.chat).toBeTruthy();
    // Cached on the second replica: asked again, it serves its set without minting.
    const mintedBefore = await served(second, 'minted');
    expect(fetched(await ask(second, bearer)).chat).toBe(atSecond.chat);
    expect(await served(second, 'minted')).toBe(mintedBefore);

    expect((await logout(first, 'mia')).status).toBe(200);
    const loggedOutAt = Date.now();
    let last = fetched(await ask(second, bearer));
    while (last.status !== 401 && Date.now() - loggedOutAt < BOUND_MS) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      last = fetched(await ask(second, bearer));
    }
    expect(last).toEqual({ status: 401 });
    expect(Date.now() - loggedOutAt).toBeLessThan(BOUND_MS);
    expect(await served(second, 'minted')).toBe(mintedBefore);
    // And it stays refused at both, with nothing minted for it.
    expect(fetched(await ask(first, bearer))).toEqual({ status: 401 });
    expect(fetched(await ask(second, bearer))).toEqual({ status: 401 });
    expect(await served(second, 'minted')).toBe(mintedBefore);
  });
});

describe('fetches and a logout interleaved on one replica', () => {
  it('serves no minted value once the logout is acknowledged', async () => {
    const replica = await started();
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        // Fetches started before the logout, fetches after it, and whether the first is awaited
        // (so a set is cached) before the logout is sent.
        fc.integer({ min: 0, max: 4 }),
        fc.integer({ min: 1, max: 4 }),
        fc.boolean(),
        async (before, after, warm) => {
          const sub = `prop-${run++}`;
          const bearer = await mintToken({ claims: { sub }, now: seconds() - 10 });
          if (warm) expect(fetched(await ask(replica, bearer)).status).toBe(204);
          // In flight while the logout lands: answered either way, never a 5xx.
          const racing = Array.from({ length: before }, () => ask(replica, bearer));
          const acknowledged = await logout(replica, sub);
          expect(acknowledged.status).toBe(200);
          const later = await Promise.all(
            Array.from({ length: after }, () => ask(replica, bearer)),
          );
          for (const answer of later) expect(fetched(answer)).toEqual({ status: 401 });
          for (const answer of await Promise.all(racing)) {
            expect([204, 401]).toContain(fetched(answer).status);
          }
          // Nothing the race left behind is served afterwards either.
          expect(fetched(await ask(replica, bearer))).toEqual({ status: 401 });
        },
      ),
      { numRuns: 15 },
    );
  });
});

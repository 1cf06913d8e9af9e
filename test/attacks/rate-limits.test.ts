// Rate limits that protect the verifier without failing real users. With the default settings a
// burst of one shared token from one address (the study's load shape) is answered in full; a flood
// of distinct tokens from one address is held to the verifier-call limit with 429 + Retry-After;
// behind a trusted proxy each browser address has a bucket of its own. (Junk pushed to the
// revocation receivers: receiver-junk.test.ts.)
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../../stack/start-stack.js';
import { startAttackStack, type AttackStack } from './attack-stack.js';

/** Status codes of `count` GETs of /secret, `concurrency` at a time over keep-alive connections. */
async function hammer(
  url: string,
  headersOf: (i: number) => Record<string, string>,
  count: number,
  concurrency: number,
): Promise<Map<number, number>> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const statuses = new Map<number, number>();
  let next = 0;
  const one = (i: number) =>
    new Promise<number>((resolve) => {
      const req = request(url, { agent, headers: headersOf(i) }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', () => resolve(-1));
      req.end();
    });
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const status = await one(next++);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
    }),
  );
  agent.destroy();
  return statuses;
}

/** A well-formed token nobody issued: costs the verifier a parse and a refusal. */
const randomToken = () =>
  `eyJhbGciOiJSUzI1NiJ9.${randomBytes(24).toString('base64url')}.${randomBytes(32).toString('base64url')}`;

describe('the default limits and one shared token', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
  });

  it('answers 3,000 requests of one token from one address, 100 at a time, all with 200', async () => {
    const token = await stack.mintToken();
    const statuses = await hammer(
      stack.urls.secret,
      () => ({ authorization: `Bearer ${token}` }),
      3000,
      100,
    );
    expect(Object.fromEntries(statuses)).toEqual({ 200: 3000 });
  }, 60_000);
});

describe('the verifier-call limit', () => {
  let gate: AttackStack;
  beforeAll(async () => {
    gate = await startAttackStack({
      env: {
        verifier: { VERIFIER_VERIFY_RATE: '5r/s', VERIFIER_VERIFY_BURST: '10' },
        nginx: {
          SG_REAL_IP_FROM: '127.0.0.1/32',
          SG_REAL_IP_HEADER: 'X-Forwarded-For',
        },
      },
    });
  }, 120_000);
  afterAll(async () => {
    await gate?.stop();
  });

  it('holds a flood of distinct tokens from one address to the limit, with 429 + Retry-After', async () => {
    const statuses = await hammer(
      gate.stack.urls.secret,
      () => ({ authorization: `Bearer ${randomToken()}`, 'x-forwarded-for': '203.0.113.7' }),
      200,
      10,
    );
    // 10 at once plus 5 a second: the verifier saw a few dozen of the 200 at most.
    expect(statuses.get(401) ?? 0).toBeLessThanOrEqual(30);
    expect(statuses.get(429) ?? 0).toBeGreaterThanOrEqual(170);
    // The bucket refills at 5/s: of a few more sent at once, the ones over the limit say when to retry.
    const more = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        gate.send({
          path: '/secret',
          headers: { authorization: `Bearer ${randomToken()}`, 'x-forwarded-for': '203.0.113.7' },
          label: `flood: one more (${i})`,
        }),
      ),
    );
    const limited = more.find((answer) => answer.status === 429)!;
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBe('1');
    expect(JSON.parse(limited.body)).toEqual({ error: 'too_many_requests' });
  });

  it('still answers a cached token from that address, and the next browser behind the proxy', async () => {
    const token = await gate.stack.mintToken();
    const other = await gate.send({
      path: '/secret',
      headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': '203.0.113.8' },
      label: 'other browser',
      earned: true,
    });
    expect(other.status).toBe(200);
    // Now cached at the edge: the flooding address gets it without a verifier call.
    const same = await gate.send({
      path: '/secret',
      headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': '203.0.113.7' },
      label: 'cached from the flooding address',
      earned: true,
    });
    expect(same.status).toBe(200);
  });

  it('never counts an edge-cache hit against the limit: 200 hits of one token, then 10 new tokens, all answered', async () => {
    const token = await gate.stack.mintToken();
    const from = { 'x-forwarded-for': '203.0.113.9' };
    // One verifier call (the miss), then edge-cache hits: far more than the 11 the bucket holds.
    const cached = await hammer(
      gate.stack.urls.secret,
      () => ({ authorization: `Bearer ${token}`, ...from }),
      200,
      10,
    );
    expect(Object.fromEntries(cached)).toEqual({ 200: 200 });
    // The bucket still holds its burst: ten distinct tokens at once all reach the verifier.
    const fresh = await hammer(
      gate.stack.urls.secret,
      () => ({ authorization: `Bearer ${randomToken()}`, ...from }),
      10,
      10,
    );
    expect(Object.fromEntries(fresh)).toEqual({ 401: 10 });
  });

  it("gives a caller at the verifier's own port no say in the client key, nor a way to spend another client's calls", async () => {
    const token = await gate.stack.mintToken();
    const statuses: number[] = [];
    // Around NGINX, naming a new client on every call and then the next browser's address.
    for (let i = 0; i < 60; i++) {
      const client = i < 30 ? `198.51.100.${i}` : '203.0.113.20';
      const answer = await fetch(`${gate.stack.urls.verifier}/verify`, {
        headers: {
          'x-sg-policy': 'secret',
          'x-sg-client': client,
          authorization: `Bearer ${token}`,
        },
      });
      statuses.push(answer.status);
    }
    // Refused before any token work: rotating the key neither escapes the limit nor gets a 204.
    expect(statuses).toEqual(Array<number>(60).fill(401));
    // That browser's bucket is whole: ten new tokens at once through NGINX all reach the verifier.
    const fresh = await hammer(
      gate.stack.urls.secret,
      () => ({ authorization: `Bearer ${randomToken()}`, 'x-forwarded-for': '203.0.113.20' }),
      10,
      10,
    );
    expect(Object.fromEntries(fresh)).toEqual({ 401: 10 });
    // And NGINX, which holds the key, still serves the token.
    const through = await gate.send({
      path: '/secret',
      headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': '203.0.113.21' },
      label: 'through NGINX after the direct calls',
      earned: true,
    });
    expect(through.status).toBe(200);
  });

  it('leaks nothing and answers no 500 along the way', () => {
    expect(gate.watch.scan(gate.readLogs())).toEqual([]);
    expect(gate.serverErrors).toEqual([]);
  });
});

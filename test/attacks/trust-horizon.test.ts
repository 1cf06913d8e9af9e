// The key set's trust horizon at the real gate: with the IdP down for longer than `maxStale`, a
// token the verifier (and NGINX's edge cache) allowed a moment ago gets 401 keys_unavailable like
// a fresh one, instead of its secret for the rest of the decision cache's lifetime. The key set is
// refreshed every second and trusted for two, so the horizon passes within the test.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAttackStack, type AttackStack } from './attack-stack.js';

let gate: AttackStack;

beforeAll(async () => {
  gate = await startAttackStack({
    configure(config) {
      (config as { jwks?: object }).jwks = { refresh: '1s', maxStale: '2s' };
    },
  });
}, 120_000);

afterAll(async () => {
  await gate?.stop();
});

const ask = (token: string, label: string, earned = false) =>
  gate.send({ path: '/secret', headers: { authorization: `Bearer ${token}` }, label, earned });

describe('a cached decision after the key set lost its trust', () => {
  it('is refused like a fresh token once the IdP has been down past maxStale', async () => {
    const cached = await gate.stack.mintToken();
    const fresh = await gate.stack.mintToken();
    expect((await ask(cached, 'before the outage', true)).status).toBe(200);
    await gate.stack.stopService('idp');
    try {
      await new Promise((resolve) => setTimeout(resolve, 3_500));
      for (const [token, label] of [
        [fresh, 'fresh token, keys stale'],
        [cached, 'cached token, keys stale'],
      ] as const) {
        const answer = await ask(token, label);
        expect(answer.status, label).toBe(401);
        expect(gate.canaries.values.some((value) => answer.body.includes(value))).toBe(false);
      }
      // The verifier says why, for both (its log lines are written asynchronously).
      const keysUnavailable = () =>
        (gate.readLogs().find((log) => log.name === 'verifier')?.text ?? '').match(
          /"reason":"keys_unavailable"/g,
        )?.length ?? 0;
      await expect.poll(keysUnavailable, { timeout: 2_000 }).toBeGreaterThanOrEqual(2);
    } finally {
      await gate.stack.startService('idp');
    }
    // The IdP is back (with keys of its own start): the next key fetch restores trust.
    const after = await gate.stack.mintToken();
    await expect
      .poll(async () => (await ask(after, 'after the outage', true)).status, {
        timeout: 10_000,
        interval: 250,
      })
      .toBe(200);
  }, 30_000);

  it('leaks nothing and answers no 500 along the way', () => {
    expect(gate.watch.scan(gate.readLogs())).toEqual([]);
    expect(gate.serverErrors).toEqual([]);
  });
});

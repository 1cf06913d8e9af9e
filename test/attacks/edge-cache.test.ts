// The edge decision cache (NGINX proxy_cache on /_verify, bounded by the verifier's
// X-Accel-Expires) against the real stack: it saves verifier calls, and never at the price of a
// wrong answer — never across policies, never past a token's `exp`, never for long after a key is
// retired, never for a DPoP request, and not at all when the cap is 0.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAttackStack, type AttackStack } from './attack-stack.js';

const CAP = 2;

/** The verifier's own count of /verify answers, from its metrics. */
async function verifierCalls(gate: AttackStack): Promise<number> {
  const text = await (await fetch(`${gate.stack.urls.verifier}/metrics`)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith('verifier_decisions_total'))
    .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
}

describe('edge decision cache (cap 2 s)', () => {
  let gate: AttackStack;
  const get = (token: string, path = '/secret', extra: Record<string, string> = {}) =>
    gate.send({
      path,
      headers: { authorization: `Bearer ${token}`, ...extra },
      label: `edge ${path}`,
      earned: true,
    });

  beforeAll(async () => {
    gate = await startAttackStack({
      configure: (config) => {
        config.cache = { edgeTtl: CAP };
        // No leeway, so "expired" means `exp` itself and the edge bound is what is measured.
        for (const iss of config.issuers) iss.clockTolerance = 0;
        config.policies.other = {
          issuers: config.issuers.map((iss) => String(iss.issuer)),
          scopes: ['other:read'],
        };
      },
    });
  }, 120_000);
  afterAll(async () => {
    await gate?.stop();
  });

  it('answers a repeated token from NGINX: one verifier call for many requests', async () => {
    const token = await gate.stack.mintToken();
    const before = await verifierCalls(gate);
    for (let i = 0; i < 20; i++) expect((await get(token)).status).toBe(200);
    expect((await verifierCalls(gate)) - before).toBe(1);
  });

  it('never answers another policy from a cached allow', async () => {
    // The same NGINX and edge cache, the named set of policy `other` (conf.d/default.conf).
    const otherUrl = `${gate.stack.urls.gate}/secret/other`;
    const token = await gate.stack.mintToken({ scope: 'openid secrets:read' });
    expect((await get(token)).status).toBe(200);
    const other = await fetch(otherUrl, { headers: { authorization: `Bearer ${token}` } });
    expect(other.status).toBe(403);
    expect(await other.text()).not.toContain('sg-canary');
  });

  it('refuses an expired token within 1 s of its exp even though its allow was cached', async () => {
    const token = await gate.stack.mintToken({ expiresIn: 3 });
    const exp = (
      JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as {
        exp: number;
      }
    ).exp;
    let lastAllowed = 0;
    let firstRefused = 0;
    while (Date.now() < (exp + 3) * 1000) {
      const status = (await get(token)).status;
      if (status === 200) lastAllowed = Date.now();
      else if (firstRefused === 0) firstRefused = Date.now();
      await sleep(50);
    }
    expect(lastAllowed).toBeGreaterThan(0);
    expect(firstRefused).toBeGreaterThan(0);
    // Allowed only before exp (plus the 50 ms of one poll), refused within a second after it.
    expect(lastAllowed).toBeLessThan(exp * 1000 + 1000);
    expect(firstRefused).toBeLessThan(exp * 1000 + 1000);
  }, 20_000);

  it('stops honouring a retired key within the cap once the verifier drops it', async () => {
    const old = await gate.stack.mintToken();
    expect((await get(old)).status).toBe(200); // now cached at the edge
    await gate.stack.idp.rotateKey({ keepPrevious: false });
    // A token with the new kid makes the verifier fetch the key set and drop the old key.
    expect((await get(await gate.stack.mintToken())).status).toBe(200);
    const dropped = Date.now();
    let refusedAt = 0;
    while (Date.now() - dropped < (CAP + 3) * 1000) {
      if ((await get(old)).status === 401) {
        refusedAt = Date.now();
        break;
      }
      await sleep(100);
    }
    expect(refusedAt).toBeGreaterThan(0);
    expect(refusedAt - dropped).toBeLessThanOrEqual((CAP + 1) * 1000);
  }, 20_000);

  it('never answers a DPoP request from the cache, nor stores one', async () => {
    const token = await gate.stack.mintToken();
    const before = await verifierCalls(gate);
    for (let i = 0; i < 3; i++) await get(token, '/secret', { dpop: 'a.b.c' });
    expect((await verifierCalls(gate)) - before).toBe(3);
  });
});

describe('edge decision cache with the cap at 0', () => {
  let gate: AttackStack;

  beforeAll(async () => {
    gate = await startAttackStack({ configure: (config) => void (config.cache = { edgeTtl: 0 }) });
  }, 120_000);
  afterAll(async () => {
    await gate?.stop();
  });

  it('sends every request to the verifier', async () => {
    const token = await gate.stack.mintToken();
    const before = await verifierCalls(gate);
    for (let i = 0; i < 5; i++) {
      const answer = await gate.send({
        path: '/secret',
        headers: { authorization: `Bearer ${token}` },
        label: 'cap 0',
        earned: true,
      });
      expect(answer.status).toBe(200);
    }
    expect((await verifierCalls(gate)) - before).toBe(5);
  });
});

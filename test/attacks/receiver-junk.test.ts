// Junk pushed to the revocation receivers never costs a real logout (review 5, item 2), through
// NGINX and the real verifier with the dev IdP. In the dev stack the IdP and every anonymous
// client reach NGINX from loopback, one address: exactly where a per-address push limit made the
// IdP's logout a 429. Junk is refused before any signature work or, when it claims the IdP's
// `iss` and `kid`, spends that key's budget of failed signature checks: never the real logout.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../stack/start-stack.js';
import { mintLogoutToken } from '../../verifier/src/testing/event-tokens.js';
import { call, expectDenied } from '../support/gate-table.js';
import { startSuiteStack } from '../support/local-target.js';

let stack: Stack;
/** What the runner printed while it started the stack. */
const runnerLines: string[] = [];

beforeAll(async () => {
  stack = await startSuiteStack({
    log: (line) => runnerLines.push(line),
    env: {
      // A small budget, so a short flood spends it: 5 failures a second after a burst of 20.
      verifier: {
        VERIFIER_JWKS_COOLDOWN: '1s',
        VERIFIER_REVOCATION_RECEIVER_RATE: '5r/s',
        VERIFIER_REVOCATION_RECEIVER_BURST: '20',
      },
      // NGINX's flood cap at its defaults (5,000 r/s, burst 10,000).
      nginx: {},
    },
  });
}, 180_000);
afterAll(() => stack?.stop());

/** One push from the test's (= the IdP's) loopback address, its answer read to the end. */
async function push(body: string): Promise<{ status: number; headers: Headers; body: string }> {
  const answer = await fetch(`${stack.urls.gate}/backchannel-logout`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body,
    signal: AbortSignal.timeout(10_000),
  });
  return { status: answer.status, headers: answer.headers, body: await answer.text() };
}

/** A logout token under the dev IdP's `iss` and active `kid`, signed by a key it never had. */
async function forged(): Promise<string> {
  const { active } = await stack.idp.keys();
  return mintLogoutToken({
    key: 'attacker',
    claims: { iss: stack.urls.issuer, sub: 'victim' },
    header: { kid: active },
  });
}

/** Polls /secret with `token` until it is refused (the edge cache may serve it a few seconds). */
async function expectRevoked(token: string): Promise<void> {
  const until = Date.now() + 10_000;
  for (;;) {
    const answer = await call(stack.urls.secret, token);
    if (answer.status !== 200) return expectDenied(answer, 401);
    if (Date.now() > until) throw new Error('the token was still served 10 s after its logout');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe('the start of a run whose IdP shares the browsers’ address', () => {
  it('says once that the client address cannot be the sender’s', () => {
    const warnings = runnerLines.filter((line) => line.includes("cannot be the sender's"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/\/backchannel-logout.*dev IdP pushes from 127\.0\.0\.1/);
  });
});

describe('junk from the IdP’s own address', () => {
  it('the issue’s reproduction: 30 junk pushes, then the real logout is applied, not 429', async () => {
    const token = await stack.mintToken({ claims: { sub: 'jules' } });
    expect((await call(stack.urls.secret, token)).status).toBe(200);
    // As reported: mostly forgeries under the IdP's `iss` and `kid` (each one a signature check),
    // some plain garbage and another issuer's tokens.
    const forgery = `logout_token=${await forged()}`;
    const others = [
      'logout_token=junk.x.y',
      'nothing=here',
      `logout_token=${await mintLogoutToken({ claims: { iss: 'https://evil.test' } })}`,
    ];
    const statuses = [];
    for (let i = 0; i < 30; i++)
      statuses.push((await push(i % 8 === 0 ? others[(i / 8) % 3]! : forgery)).status);
    expect(statuses.every((status) => status === 400 || status === 429)).toBe(true);
    const { delivered } = await stack.idp.signOut('jules');
    expect(delivered.map((d) => d.status)).toEqual([200]);
    await expectRevoked(token);
  }, 60_000);

  it('a flood under the IdP’s iss and kid with bad signatures gets 429 + Retry-After past the budget; the real logout is still applied', async () => {
    const token = await stack.mintToken({ claims: { sub: 'kira' } });
    const bystander = await stack.mintToken({ claims: { sub: 'lou' } });
    expect((await call(stack.urls.secret, token)).status).toBe(200);
    const body = `logout_token=${await forged()}`;
    const answers: Awaited<ReturnType<typeof push>>[] = [];
    let sent = 0;
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (sent++ < 300) answers.push(await push(body));
      }),
    );
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.every((status) => status === 400 || status === 429)).toBe(true);
    // The budget (21 at once, then 5 a second) is spent well before the 300th forgery.
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThan(200);
    const limited = answers.find((answer) => answer.status === 429)!;
    expect(limited.headers.get('retry-after')).toBe('1');
    expect(limited.headers.get('cache-control')).toBe('no-store');
    expect(JSON.parse(limited.body)).toEqual({ error: 'too_many_requests' });

    // The key's budget is spent, and the IdP pushes from the flood's address: applied all the same.
    const { delivered } = await stack.idp.signOut('kira');
    expect(delivered.map((d) => d.status)).toEqual([200]);
    await expectRevoked(token);
    expect((await call(stack.urls.secret, bystander)).status).toBe(200);
  }, 90_000);
});

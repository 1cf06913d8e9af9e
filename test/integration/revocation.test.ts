// Pushed revocation through the whole gate (dev IdP, verifier, NGINX): the IdP signs a user out
// over back-channel logout, and /secret refuses that user's older tokens within the documented
// bound (6 s by default: the edge cache may still serve an allow stored just before), while other
// users and the user's newer tokens keep their secrets. The receiver paths are the only ones that
// take a body.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../stack/start-stack.js';
import { mintLogoutToken } from '../../verifier/src/testing/event-tokens.js';
import { call, expectDenied } from '../support/gate-table.js';
import { startSuiteStack } from '../support/local-target.js';

/** The documented default revocation latency (VERIFIER_REVOCATION_MAX_LATENCY). */
const BOUND_MS = 6_000;

let stack: Stack;

beforeAll(async () => {
  stack = await startSuiteStack();
}, 180_000);
afterAll(() => stack?.stop());

const post = (path: string, body: string, contentType = 'application/x-www-form-urlencoded') =>
  fetch(`${stack.urls.gate}${path}`, {
    method: 'POST',
    headers: { 'content-type': contentType },
    body,
    signal: AbortSignal.timeout(10_000),
  });

describe('back-channel logout through NGINX', () => {
  it('refuses the signed-out user within the bound, measured from an allow just cached at the edge', async () => {
    const token = await stack.mintToken({ claims: { sub: 'rita' } });
    const bystander = await stack.mintToken({ claims: { sub: 'sam' } });
    expect((await call(stack.urls.secret, token)).status).toBe(200);
    expect((await call(stack.urls.secret, bystander)).status).toBe(200);

    const signedOut = Date.now();
    const { delivered } = await stack.idp.signOut('rita');
    expect(delivered.map((d) => d.status)).toEqual([200]);
    // The bound is on the secret: no answer that carries it may arrive later than BOUND_MS after
    // the sign-out. The refusal that follows is one pause and one verifier round trip later,
    // which the bound does not cover.
    let lastSecretAfter = 0;
    let refusedAfter: number | undefined;
    while (Date.now() - signedOut < BOUND_MS + 2_000) {
      const answer = await call(stack.urls.secret, token);
      if (answer.status === 200) {
        lastSecretAfter = Date.now() - signedOut;
        await new Promise((resolve) => setTimeout(resolve, 100));
        continue;
      }
      expectDenied(answer, 401);
      refusedAfter = Date.now() - signedOut;
      break;
    }
    process.stdout.write(
      `revocation through the edge cache: last secret ${lastSecretAfter} ms, refused ${refusedAfter} ms after sign-out\n`,
    );
    expect(refusedAfter).toBeDefined();
    expect(lastSecretAfter).toBeLessThanOrEqual(BOUND_MS);
    expect((await call(stack.urls.secret, bystander)).status).toBe(200);

    // Whole-second `iat`s: a token of the logout's second counts as older.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const newer = await stack.mintToken({ claims: { sub: 'rita' } });
    expect((await call(stack.urls.secret, newer)).status).toBe(200);
  }, 30_000);

  it("never loses the IdP's logout to junk pushed from the IdP's own address", async () => {
    // The dev stack: anonymous clients and the IdP both reach NGINX from loopback, one client key.
    const token = await stack.mintToken({ claims: { sub: 'jules' } });
    expect((await call(stack.urls.secret, token)).status).toBe(200);
    const statuses = [];
    for (let i = 0; i < 30; i++)
      statuses.push((await post('/backchannel-logout', `logout_token=junk.${i}.x`)).status);
    expect(statuses).toEqual(Array(30).fill(400));
    const { delivered } = await stack.idp.signOut('jules');
    expect(delivered.map((d) => d.status)).toEqual([200]);
  });

  it('answers an invalid logout token with the verifier 400 JSON, no-store', async () => {
    // Signed by the test keys, not the IdP's: refused.
    const forged = await mintLogoutToken({ claims: { iss: stack.urls.issuer } });
    const answer = await post('/backchannel-logout', `logout_token=${forged}`);
    expect(answer.status).toBe(400);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(await answer.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('takes a capped body only on the receiver paths; every other path still refuses one', async () => {
    expect((await post('/backchannel-logout', `logout_token=${'a'.repeat(20_000)}`)).status).toBe(
      413,
    );
    expect((await fetch(`${stack.urls.gate}/backchannel-logout`)).status).toBe(405);
    for (const path of ['/secret', '/', '/hello', '/config.json'])
      expect({ path, status: (await post(path, 'logout_token=x')).status }).toEqual({
        path,
        status: 413,
      });
    // No other verifier path is reachable: /readyz here is an SPA route, not the verifier's.
    const readyz = await call(`${stack.urls.gate}/readyz`);
    expect(readyz.body).not.toMatch(/^ok/);
  });
});

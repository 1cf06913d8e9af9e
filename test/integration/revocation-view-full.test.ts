// A full revocation view through the whole gate (dev IdP, verifier, NGINX) under a `required`
// policy: the logout the view cannot hold is refused (503, the IdP retries) and the gate then
// refuses every token rather than serve one whose logout it could not record; /readyz says so.
// A logout naming both `sub` and `sid` spends one entry of the view.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../stack/start-stack.js';
import { call, expectDenied } from '../support/gate-table.js';
import { startSuiteStack } from '../support/local-target.js';

const VIEW = 4;
let stack: Stack;

beforeAll(async () => {
  stack = await startSuiteStack({
    verifierVariables: {
      VERIFIER_REVOCATION: 'required',
      VERIFIER_REVOCATION_VIEW_MAX_ENTRIES: String(VIEW),
    },
  });
}, 180_000);
afterAll(() => stack?.stop());

const readyz = async () => {
  const response = await fetch(`${stack.urls.verifier}/readyz`);
  return { status: response.status, body: await response.text() };
};

describe('a full revocation view under a required policy', () => {
  it('refuses the logout it cannot hold, then every token, never the signed-out one served', async () => {
    const victim = await stack.mintToken({ claims: { sub: 'vera' } });
    const bystander = await stack.mintToken({ claims: { sub: 'sam' } });
    expect((await call(stack.urls.secret, victim)).status).toBe(200);

    // Four logouts, each with a session id too: one entry each, so the view holds all four.
    for (const sub of ['u1', 'u2', 'u3', 'u4']) {
      const { delivered } = await stack.idp.signOut(sub, { sid: `s-${sub}` });
      expect({ sub, statuses: delivered.map((d) => d.status) }).toEqual({ sub, statuses: [200] });
    }
    expect(await readyz()).toMatchObject({ status: 200 });

    const { delivered } = await stack.idp.signOut('vera');
    expect(delivered.map((d) => d.status)).toEqual([503]);
    // Past the edge cache's reuse (at most 5 s): the victim's token is never served again, and
    // neither is anyone's while the view misses a logout.
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    expectDenied(await call(stack.urls.secret, victim), 401);
    expectDenied(await call(stack.urls.secret, bystander), 401);
    const ready = await readyz();
    expect(ready.status).toBe(503);
    expect(ready.body).toMatch(/revocation view full/);
  }, 40_000);
});

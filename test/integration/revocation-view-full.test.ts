// A full revocation view through the whole gate (dev IdP, verifier, NGINX) under a `required`
// policy: the logout the view cannot hold is refused (503, the IdP retries) and the gate then
// refuses every token rather than serve one whose logout it could not record; /readyz says so.
// A logout naming both `sub` and `sid` spends one entry of the view. Each refusal is an error
// line, at most one a second with the count left out, naming no subject.
import { readFileSync, statSync } from 'node:fs';
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
      const { delivered } = await stack.idp.signOut(sub, { sid: `sid-${sub}` });
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

  it('logs each lost logout at error level, one line a second with the count left out, no subject in it', async () => {
    const log = stack.files.logs.verifier;
    const from = statSync(log).size;
    const lostLines = () =>
      readFileSync(log, 'utf8')
        .slice(from)
        .split('\n')
        .filter((line) => line.includes('"revocation lost"'));
    // Past the last line's second (the test above waited 6 s): a burst at once, then one more
    // after the throttle's window. Every refusal is either a line or counted by the next one.
    const burst = ['lost-1', 'lost-2', 'lost-3', 'lost-4', 'lost-5'];
    const answers = await Promise.all(
      burst.map((sub) => stack.idp.signOut(sub, { sid: `sid-${sub}` })),
    );
    expect(answers.flatMap(({ delivered }) => delivered.map((d) => d.status))).toEqual(
      burst.map(() => 503),
    );
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const last = await stack.idp.signOut('lost-6', { sid: 'sid-lost-6' });
    expect(last.delivered.map((d) => d.status)).toEqual([503]);
    const refusals = burst.length + 1;
    await expect
      .poll(() => {
        const entries = lostLines().map((line) => JSON.parse(line) as { suppressed: number });
        return entries.length + entries.reduce((sum, entry) => sum + entry.suppressed, 0);
      })
      .toBe(refusals);

    const lines = lostLines();
    const entries = lines.map(
      (line) => JSON.parse(line) as { level: number; err: string; suppressed: number },
    );
    // The burst (well within a second) wrote one line; the last refusal wrote the second.
    expect(entries.map((entry) => entry.suppressed)).toEqual([0, burst.length - 1]);
    for (const entry of entries) {
      expect(entry.level).toBe(50);
      expect(entry.err).toContain('the revocation view is full (4 watermarks)');
      expect(entry.err).toContain('raise revocation.viewMaxEntries');
    }
    const text = lines.join('\n');
    for (const value of ['lost-', 'vera', 'eyJ']) expect(text).not.toContain(value);
  }, 20_000);
});

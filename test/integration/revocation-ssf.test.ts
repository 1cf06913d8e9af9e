// The dev IdP as a Shared Signals transmitter through the whole gate: a CAEP session-revoked event
// pushed to NGINX's /ssf/events, and one the verifier polls for and acknowledges, each make /secret
// refuse the subject's older tokens within the documented bound.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../stack/ports.js';
import type { Stack } from '../../stack/start-stack.js';
import { call, expectDenied } from '../support/gate-table.js';
import { startSuiteStack, SUITE_OPTIONS } from '../support/local-target.js';

const BOUND_MS = 6_000;
let stack: Stack;

beforeAll(async () => {
  const ports = { nginx: await freePort(), idp: await freePort() };
  const issuer = `http://127.0.0.1:${ports.idp}`;
  stack = await startSuiteStack({
    ports,
    env: {
      ...SUITE_OPTIONS.env,
      verifier: {
        ...SUITE_OPTIONS.env?.verifier,
        VERIFIER_SSF_TRANSMITTER: issuer,
        VERIFIER_SSF_AUDIENCE: 'secret-gate',
        VERIFIER_SSF_POLL_ENDPOINT: `${issuer}/ssf/poll`,
        VERIFIER_SSF_POLL_INTERVAL: '1s',
      },
      idp: { IDP_SSF_PUSH_URIS: `http://127.0.0.1:${ports.nginx}/ssf/events` },
    },
  });
}, 180_000);
afterAll(() => stack?.stop());

/**
 * Asks until the token is refused. The bound is on the secret: no answer that carries it may
 * arrive later than the bound after the event (`lastSecretAfter`); the refusal that follows is one
 * pause and one round trip later, which the bound does not cover.
 */
async function refusedWithin(token: string, since: number) {
  let lastSecretAfter = 0;
  while (Date.now() - since < BOUND_MS + 2_000) {
    const answer = await call(stack.urls.secret, token);
    if (answer.status !== 200) {
      expectDenied(answer, 401);
      return { lastSecretAfter, refusedAfter: Date.now() - since };
    }
    lastSecretAfter = Date.now() - since;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { lastSecretAfter, refusedAfter: undefined };
}

describe('CAEP events from the dev IdP', () => {
  it('pushed (RFC 8935) through NGINX: 202, and the subject is refused within the bound', async () => {
    const token = await stack.mintToken({ claims: { sub: 'uma' } });
    const bystander = await stack.mintToken({ claims: { sub: 'vic' } });
    expect((await call(stack.urls.secret, token)).status).toBe(200);
    const raisedAt = Date.now();
    const raised = await stack.idp.raiseSecurityEvent({ sub: 'uma' });
    expect(raised.pushed.map((p) => p.status)).toEqual([202]);
    expect(raised.queued).toBe(false);
    const { lastSecretAfter, refusedAfter } = await refusedWithin(token, raisedAt);
    expect(refusedAfter).toBeDefined();
    expect(lastSecretAfter).toBeLessThanOrEqual(BOUND_MS);
    expect((await call(stack.urls.secret, bystander)).status).toBe(200);
  }, 30_000);

  it('polled (RFC 8936): the verifier fetches, applies and acknowledges it', async () => {
    const token = await stack.mintToken({ claims: { sub: 'wes' } });
    expect((await call(stack.urls.secret, token)).status).toBe(200);
    const raisedAt = Date.now();
    const raised = await stack.idp.raiseSecurityEvent({ sub: 'wes', delivery: 'poll' });
    expect(raised.queued).toBe(true);
    // One poll interval (1 s) plus the edge bound.
    const { lastSecretAfter, refusedAfter } = await refusedWithin(token, raisedAt);
    expect(refusedAfter).toBeDefined();
    expect(lastSecretAfter).toBeLessThanOrEqual(BOUND_MS + 1_000);
    for (let i = 0; i < 50 && (await stack.idp.ssfStats()).pending > 0; i++)
      await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await stack.idp.ssfStats()).toMatchObject({ pending: 0 });
  }, 30_000);
});

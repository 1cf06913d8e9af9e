import * as oauth from 'oauth4webapi';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createSecretGateClient } from './client.js';
import { mintedAnswer, startGateServer, type GateServer } from './gate-server.fixture.js';

const TOKEN = 'eyJ.token-that-must-never-leak.sig';
let gate: GateServer;

beforeAll(async () => {
  gate = await startGateServer();
});
afterAll(() => gate.close());
beforeEach(() => {
  gate.seen.length = 0;
});

function client(extra: Partial<Parameters<typeof createSecretGateClient>[0]> = {}) {
  return createSecretGateClient({ url: gate.url, getCredentials: () => TOKEN, ...extra });
}

describe('fetchSet', () => {
  it('sends the token as a Bearer credential and returns a static set without expiries', async () => {
    gate.answer(() => ({ body: { 'x-api-key': 'k-1', 'api-base': 'https://api.example.com' } }));
    const result = await client().fetchSet();
    expect(result).toMatchObject({
      ok: true,
      set: {
        name: undefined,
        values: { 'x-api-key': 'k-1', 'api-base': 'https://api.example.com' },
        expiresAt: {},
      },
    });
    expect(result.ok && result.set.renewAt).toBe(undefined);
    expect(gate.seen[0]).toMatchObject({ method: 'GET', path: '/secret' });
    expect(gate.seen[0]?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(gate.seen[0]?.headers.accept).toBe('application/json');
  });

  it('separates minted values from their expiries and plans the renewal before the earliest', async () => {
    gate.answer(() =>
      mintedAnswer(
        { 'x-api-key': 'static' },
        { 'algolia-key': 'alg-1', 'upload-url': 'https://s3/put?sig' },
        { 'algolia-key': 300, 'upload-url': 60 },
      ),
    );
    const before = Date.now() / 1000;
    const result = await client().fetchSet();
    if (!result.ok) throw new Error(result.error.code);
    expect(result.set.values).toEqual({
      'x-api-key': 'static',
      'algolia-key': 'alg-1',
      'upload-url': 'https://s3/put?sig',
    });
    expect(Object.keys(result.set.expiresAt).sort()).toEqual(['algolia-key', 'upload-url']);
    // 60 s left on upload-url, margin max(5 s, 6 s): renewal 54 s after the answer.
    expect(result.set.renewAt! - before).toBeGreaterThan(52);
    expect(result.set.renewAt! - before).toBeLessThanOrEqual(55);
  });

  it('fetches a named set from /secret/<name>, encoding the name', async () => {
    gate.answer(() => ({ body: { k: 'v' } }));
    const result = await client().fetchSet({ set: 'pay ments' });
    expect(result).toMatchObject({ ok: true, set: { name: 'pay ments' } });
    expect(gate.seen[0]?.path).toBe('/secret/pay%20ments');
  });

  it('asks the token getter on every fetch, awaiting a promise', async () => {
    gate.answer(() => ({ body: { k: 'v' } }));
    let n = 0;
    const gateClient = client({ getCredentials: async () => ({ accessToken: `tok-${++n}` }) });
    await gateClient.fetchSet();
    await gateClient.fetchSet();
    expect(gate.seen.map((r) => r.headers.authorization)).toEqual(['Bearer tok-1', 'Bearer tok-2']);
  });

  it('sends nothing and answers unauthorized when the getter has no token', async () => {
    const result = await client({ getCredentials: () => undefined }).fetchSet();
    expect(result).toMatchObject({ ok: false, error: { code: 'unauthorized' } });
    expect(gate.seen).toHaveLength(0);
  });

  it('sends nothing and answers unauthorized when the getter fails', async () => {
    const result = await client({
      getCredentials: () => {
        throw new Error('refresh failed');
      },
    }).fetchSet();
    expect(result).toMatchObject({ ok: false, error: { code: 'unauthorized' } });
    expect(gate.seen).toHaveLength(0);
  });

  it('sends a DPoP-bound token with a fresh proof and retries once with the gate nonce', async () => {
    gate.answer((_request, index) =>
      index === 0
        ? {
            status: 401,
            headers: {
              'WWW-Authenticate': 'DPoP error="use_dpop_nonce", algs="ES256"',
              'DPoP-Nonce': 'nonce-1',
            },
          }
        : { body: { k: 'v' } },
    );
    const keyPair = await oauth.generateKeyPair('ES256');
    const dpop = oauth.DPoP({}, keyPair);
    const result = await client({
      getCredentials: () => ({ accessToken: TOKEN, dpop }),
    }).fetchSet();
    expect(result.ok).toBe(true);
    expect(gate.seen).toHaveLength(2);
    const [first, second] = gate.seen.map((r) => String(r.headers.dpop));
    expect(gate.seen[1]?.headers.authorization).toBe(`DPoP ${TOKEN}`);
    expect(decodeProtectedHeader(second!).typ).toBe('dpop+jwt');
    expect(decodeJwt(second!)).toMatchObject({ htm: 'GET', htu: gate.url, nonce: 'nonce-1' });
    expect(decodeJwt(first!).nonce).toBe(undefined);
    expect(decodeJwt(first!).jti).not.toBe(decodeJwt(second!).jti);
  });
});

describe('fetchSet errors are typed values', () => {
  it.each([
    [
      'a refused token',
      { status: 401, headers: { 'WWW-Authenticate': 'Bearer realm="g", error="invalid_token"' } },
      { code: 'unauthorized', status: 401, tokenRefused: true },
    ],
    [
      'no token at the gate',
      { status: 401, headers: { 'WWW-Authenticate': 'Bearer realm="g"' } },
      { code: 'unauthorized', tokenRefused: false },
    ],
    [
      'a missing scope the gate names',
      {
        status: 403,
        headers: { 'WWW-Authenticate': 'Bearer error="insufficient_scope", scope="secrets:read"' },
        body: { error: 'forbidden', message: 'scope' },
      },
      { code: 'step_up_required', status: 403, scope: 'secrets:read' },
    ],
    [
      'a refusal no new scope answers',
      { status: 403, body: { error: 'forbidden', message: 'client' } },
      { code: 'forbidden', status: 403 },
    ],
    ['an unknown set', { status: 404, body: { error: 'not_found' } }, { code: 'not_found' }],
    [
      'the rate limit',
      { status: 429, headers: { 'Retry-After': '7' } },
      { code: 'rate_limited', retryAfterSeconds: 7 },
    ],
    [
      'a failed mint',
      { status: 502, body: { error: 'mint_failed', reason: 'token exchange refused' } },
      { code: 'mint_failed', status: 502, reason: 'token exchange refused' },
    ],
    [
      'a 502 that is not the gate speaking',
      { status: 502, body: '<html>Bad Gateway</html>' },
      { code: 'server_error', status: 502 },
    ],
    [
      'an unavailable gate',
      { status: 503, headers: { 'Retry-After': '3' } },
      { code: 'unavailable', retryAfterSeconds: 3 },
    ],
    ['an internal error', { status: 500 }, { code: 'server_error', status: 500 }],
    ['a body that is not JSON', { body: 'not json' }, { code: 'bad_response' }],
    ['a JSON array', { body: ['k'] }, { code: 'bad_response' }],
    [
      'an expiry naming no value',
      { body: { k: 'v', expires_at: { other: 1_900_000_000 } } },
      { code: 'bad_response' },
    ],
  ] as const)('reports %s', async (_case, answer, expected) => {
    gate.answer(() => answer);
    const result = await client().fetchSet();
    expect(result).toMatchObject({ ok: false, error: expected });
    if (!result.ok) {
      expect(result.error.message.length).toBeGreaterThan(0);
      expect(JSON.stringify(result.error)).not.toContain('never-leak');
    }
  });

  it('hands a step-up challenge to the callback with the set it is for', async () => {
    gate.answer(() => ({
      status: 401,
      headers: {
        'WWW-Authenticate':
          'Bearer max_age=300, error_description="needs \\"mfa\\"", acr_values="urn:sg:mfa urn:sg:hwk", realm="g", error="insufficient_user_authentication"',
      },
    }));
    const onStepUp = vi.fn();
    const result = await client({ onStepUp }).fetchSet({ set: 'payments' });
    const stepUp = {
      reason: 'insufficient_user_authentication',
      acrValues: ['urn:sg:mfa', 'urn:sg:hwk'],
      maxAge: 300,
    };
    expect(result).toMatchObject({ ok: false, error: { code: 'step_up_required', stepUp } });
    expect(onStepUp).toHaveBeenCalledExactlyOnceWith(stepUp, 'payments');
  });

  it('hands a 403 insufficient_scope challenge naming scopes to the same callback', async () => {
    gate.answer(() => ({
      status: 403,
      headers: {
        'WWW-Authenticate':
          'Bearer realm="g", error="insufficient_scope", scope="secrets:read payments"',
      },
    }));
    const onStepUp = vi.fn();
    const result = await client({ onStepUp }).fetchSet({ set: 'payments' });
    const stepUp = { reason: 'insufficient_scope', scopes: ['secrets:read', 'payments'] };
    expect(result).toMatchObject({
      ok: false,
      error: { code: 'step_up_required', status: 403, stepUp, scope: 'secrets:read payments' },
    });
    expect(onStepUp).toHaveBeenCalledExactlyOnceWith(stepUp, 'payments');
  });

  it('keeps a 403 whose challenge names no scope forbidden, without a step-up', async () => {
    gate.answer(() => ({
      status: 403,
      headers: { 'WWW-Authenticate': 'Bearer realm="g", error="insufficient_scope"' },
    }));
    const onStepUp = vi.fn();
    const result = await client({ onStepUp }).fetchSet({ set: 'payments' });
    expect(result).toMatchObject({ ok: false, error: { code: 'forbidden', status: 403 } });
    expect(onStepUp).not.toHaveBeenCalled();
  });

  it('reports network when nothing answers', async () => {
    const closed = await startGateServer();
    await closed.close();
    const result = await createSecretGateClient({
      url: closed.url,
      getCredentials: () => TOKEN,
    }).fetchSet();
    expect(result).toMatchObject({ ok: false, error: { code: 'network' } });
  });

  it('reports aborted when the caller aborts a fetch in flight', async () => {
    gate.answer(() => ({ body: { k: 'v' }, delayMs: 2_000 }));
    const controller = new AbortController();
    const pending = client().fetchSet({ signal: controller.signal });
    await vi.waitFor(() => expect(gate.seen).toHaveLength(1));
    controller.abort();
    expect(await pending).toMatchObject({ ok: false, error: { code: 'aborted' } });
  });

  it('refuses a relative url where there is no page to resolve it against', () => {
    expect(() => createSecretGateClient({ url: '/secret', getCredentials: () => TOKEN })).toThrow(
      /"url" must be absolute/,
    );
  });
});

import * as oauth from 'oauth4webapi';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { describe, expect, it } from 'vitest';
import { createGateClient, readSetResult, type GateCredentials } from './secret-client.js';

const URL_ = new URL('https://app.example.com/secret');

/** The app's client over a scripted fetch; each call sends the credentials it is given. */
function clientFor(fakeFetch: typeof fetch) {
  let credentials: GateCredentials | undefined;
  const gate = createGateClient(fakeFetch, URL_, () => credentials);
  return async (given: GateCredentials) => {
    credentials = given;
    return readSetResult(await gate.fetchSet());
  };
}

function clientAnswering(response: () => Response) {
  const seen: RequestInit[] = [];
  const fakeFetch: typeof fetch = async (_input, init) => {
    seen.push(init ?? {});
    return response();
  };
  return { fetchSecret: clientFor(fakeFetch), seen };
}

describe('fetchSecret', () => {
  it('lists minted values with their expiry and says when they renew', async () => {
    const { fetchSecret } = clientAnswering(
      () =>
        new Response(
          JSON.stringify({
            'x-api-key': 'k-1',
            'algolia-key': 'a-1',
            expires_at: { 'algolia-key': 4_000_000_000 },
          }),
          { status: 200 },
        ),
    );
    const result = await fetchSecret({ accessToken: 't' });
    if (!result.ok) throw new Error(result.notice.code);
    expect(result.entries.map((entry) => entry.name)).toEqual(['x-api-key', 'algolia-key']);
    expect(result.entries[0]?.expiresAt).toBeUndefined();
    expect(result.entries[1]?.expiresAt).toBeInstanceOf(Date);
    expect(result.renewAt).toBeInstanceOf(Date);
  });

  it('maps a 502 mint failure to its notice', async () => {
    const { fetchSecret } = clientAnswering(
      () => new Response('{"error":"mint_failed","reason":"exchange refused"}', { status: 502 }),
    );
    expect(await fetchSecret({ accessToken: 't' })).toMatchObject({
      ok: false,
      notice: { code: 'mint-failed' },
    });
  });

  it('sends the token as a Bearer credential, uncached, and returns the entries', async () => {
    const { fetchSecret, seen } = clientAnswering(
      () => new Response(JSON.stringify({ 'x-api-key': 'k-1' }), { status: 200 }),
    );
    const result = await fetchSecret({ accessToken: 'token-abc' });
    expect(result).toEqual({
      ok: true,
      entries: [{ name: 'x-api-key', value: 'k-1', sensitive: true }],
    });
    expect(new Headers(seen[0]?.headers).get('Authorization')).toBe('Bearer token-abc');
    expect(seen[0]?.cache).toBe('no-store');
  });

  it('maps a 503 with Retry-After to the unavailable notice', async () => {
    const { fetchSecret } = clientAnswering(
      () =>
        new Response('{"error":"unavailable"}', { status: 503, headers: { 'Retry-After': '5' } }),
    );
    const result = await fetchSecret({ accessToken: 't' });
    expect(result).toMatchObject({
      ok: false,
      notice: { code: 'unavailable', retryAfterSeconds: 5 },
    });
  });

  it('maps a 401 challenge to the session-expired notice', async () => {
    const { fetchSecret } = clientAnswering(
      () =>
        new Response('{}', {
          status: 401,
          headers: { 'WWW-Authenticate': 'Bearer realm="secret-gate", error="invalid_token"' },
        }),
    );
    expect(await fetchSecret({ accessToken: 't' })).toMatchObject({
      ok: false,
      notice: { code: 'session-expired' },
    });
  });

  it.each([
    [
      'in RFC 9470 order',
      'Bearer realm="secret-gate", error="insufficient_user_authentication", error_description="A different authentication level is required", acr_values="urn:secret-gate:mfa urn:secret-gate:hwk", max_age="300", resource_metadata="https://app.example.com/.well-known/oauth-protected-resource"',
    ],
    [
      'reordered, with commas and escaped quotes inside quoted strings and a bare max_age',
      'Bearer max_age=300, error_description="needs \\"mfa\\", acr_values=\\"x\\"", acr_values="urn:secret-gate:mfa urn:secret-gate:hwk", realm="secret-gate", error="insufficient_user_authentication"',
    ],
  ])('reads a step-up challenge %s', async (_case, header) => {
    const { fetchSecret } = clientAnswering(
      () => new Response('{}', { status: 401, headers: { 'WWW-Authenticate': header } }),
    );
    expect(await fetchSecret({ accessToken: 't' })).toMatchObject({
      ok: false,
      notice: {
        code: 'step-up-required',
        stepUp: { acrValues: ['urn:secret-gate:mfa', 'urn:secret-gate:hwk'], maxAge: 300 },
      },
    });
  });

  it('turns a thrown fetch into the network notice', async () => {
    const fetchSecret = clientFor(async () => {
      throw new TypeError('Failed to fetch');
    });
    expect(await fetchSecret({ accessToken: 't' })).toMatchObject({
      ok: false,
      notice: { code: 'network' },
    });
  });

  it.each([['<html>'], ['[1,2]'], ['{"x":{"y":1}}']])('rejects the 200 body %j', async (body) => {
    const { fetchSecret } = clientAnswering(() => new Response(body, { status: 200 }));
    expect(await fetchSecret({ accessToken: 't' })).toMatchObject({
      ok: false,
      notice: { code: 'bad-response' },
    });
  });
});

describe('fetchSecret with a DPoP-bound session', () => {
  async function dpopHandle() {
    return oauth.DPoP({}, await oauth.generateKeyPair('ES256'));
  }

  it('sends the DPoP scheme and a fresh proof for this GET and URL on every call', async () => {
    const { fetchSecret, seen } = clientAnswering(
      () => new Response(JSON.stringify({ 'x-api-key': 'k-1' }), { status: 200 }),
    );
    const dpop = await dpopHandle();
    expect((await fetchSecret({ accessToken: 'token-abc', dpop })).ok).toBe(true);
    await fetchSecret({ accessToken: 'token-abc', dpop });
    const proofs = seen.map((init) => new Headers(init.headers).get('DPoP') ?? '');
    expect(new Headers(seen[0]?.headers).get('Authorization')).toBe('DPoP token-abc');
    expect(seen[0]?.cache).toBe('no-store');
    expect(seen[0]?.credentials).toBe('same-origin');
    expect(decodeProtectedHeader(proofs[0]!)).toMatchObject({ typ: 'dpop+jwt', alg: 'ES256' });
    expect(decodeProtectedHeader(proofs[0]!).jwk).not.toHaveProperty('d');
    expect(decodeJwt(proofs[0]!)).toMatchObject({
      htm: 'GET',
      htu: 'https://app.example.com/secret',
    });
    expect(decodeJwt(proofs[0]!).ath).toBeTypeOf('string');
    expect(proofs[1]).not.toBe(proofs[0]);
  });

  it('retries once with the nonce of a use_dpop_nonce challenge', async () => {
    let calls = 0;
    const { fetchSecret, seen } = clientAnswering(() =>
      ++calls === 1
        ? new Response('{}', {
            status: 401,
            headers: {
              'WWW-Authenticate': 'DPoP error="use_dpop_nonce", algs="ES256"',
              'DPoP-Nonce': 'nonce-1',
            },
          })
        : new Response(JSON.stringify({ 'x-api-key': 'k-1' }), { status: 200 }),
    );
    const result = await fetchSecret({ accessToken: 't', dpop: await dpopHandle() });
    expect(result.ok).toBe(true);
    expect(seen).toHaveLength(2);
    expect(decodeJwt(new Headers(seen[1]?.headers).get('DPoP') ?? '').nonce).toBe('nonce-1');
  });

  it('reads a step-up challenge with the DPoP scheme without retrying it', async () => {
    const { fetchSecret, seen } = clientAnswering(
      () =>
        new Response('{}', {
          status: 401,
          headers: {
            'WWW-Authenticate':
              'DPoP algs="ES256", error="insufficient_user_authentication", max_age="0"',
          },
        }),
    );
    const result = await fetchSecret({ accessToken: 't', dpop: await dpopHandle() });
    expect(seen).toHaveLength(1);
    expect(result).toMatchObject({
      ok: false,
      notice: { code: 'step-up-required', stepUp: { maxAge: 0 } },
    });
  });

  it('does not retry a second time, and maps a DPoP refusal to the session-expired notice', async () => {
    const { fetchSecret, seen } = clientAnswering(
      () =>
        new Response('{}', {
          status: 401,
          headers: {
            'WWW-Authenticate': 'DPoP error="use_dpop_nonce", algs="ES256"',
            'DPoP-Nonce': 'nonce-again',
          },
        }),
    );
    const result = await fetchSecret({ accessToken: 't', dpop: await dpopHandle() });
    expect(seen).toHaveLength(2);
    expect(result).toMatchObject({ ok: false, notice: { code: 'session-expired' } });
  });
});

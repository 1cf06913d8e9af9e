import { describe, expect, it } from 'vitest';
import { createSecretClient } from './secret-client.js';

const URL_ = new URL('https://app.example.com/secret');
const now = () => new Date('2025-06-01T12:00:00Z');

function clientAnswering(response: () => Response) {
  const seen: RequestInit[] = [];
  const fakeFetch: typeof fetch = async (_input, init) => {
    seen.push(init ?? {});
    return response();
  };
  return { fetchSecret: createSecretClient(fakeFetch, URL_), seen };
}

describe('fetchSecret', () => {
  it('sends the token as a Bearer credential, uncached, and returns the entries', async () => {
    const { fetchSecret, seen } = clientAnswering(
      () => new Response(JSON.stringify({ 'x-api-key': 'k-1' }), { status: 200 }),
    );
    const result = await fetchSecret('token-abc', now);
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
    const result = await fetchSecret('t', now);
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
    expect(await fetchSecret('t', now)).toMatchObject({
      ok: false,
      notice: { code: 'session-expired' },
    });
  });

  it('turns a thrown fetch into the network notice', async () => {
    const fetchSecret = createSecretClient(async () => {
      throw new TypeError('Failed to fetch');
    }, URL_);
    expect(await fetchSecret('t', now)).toMatchObject({ ok: false, notice: { code: 'network' } });
  });

  it.each([['<html>'], ['[1,2]'], ['{"x":{"y":1}}']])('rejects the 200 body %j', async (body) => {
    const { fetchSecret } = clientAnswering(() => new Response(body, { status: 200 }));
    expect(await fetchSecret('t', now)).toMatchObject({
      ok: false,
      notice: { code: 'bad-response' },
    });
  });
});

import { createServer } from 'node:http';
import { mkdtempSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OAuth2Server } from 'oauth2-mock-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_RECEIVER_BODY_BYTES } from '../decision/decision.js';
import { secretSetName } from './verify-answer.js';
import { mintToken, startJwksServer, type JwksServer } from '../testing/fixtures.js';
import { revocationFile } from '../testing/replicas.js';
import { buildService } from '../testing/service.js';

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function get(
  target: { port?: number; socketPath?: string },
  path: string,
  headers: Record<string, string> = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', ...target, path, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the transport over a loopback socket', () => {
  let idp: OAuth2Server;
  let issuer: string;
  let service: ReturnType<typeof buildService>['service'];
  let port: number;

  async function token(scope = 'secrets:read'): Promise<string> {
    const answer = await fetch(`${issuer}/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'spa-demo', scope }),
    });
    return ((await answer.json()) as { access_token: string }).access_token;
  }

  beforeAll(async () => {
    idp = new OAuth2Server();
    await idp.issuer.keys.generate('RS256');
    await idp.start(0, '127.0.0.1');
    issuer = `http://127.0.0.1:${idp.address().port}`;
    idp.issuer.url = issuer;
    idp.service.on('beforeTokenSigning', (jwt) => {
      jwt.payload.aud = 'secret-gate-api';
      jwt.payload.azp = 'spa-demo';
    });
    ({ service } = buildService({
      VERIFIER_ISSUER: issuer,
      VERIFIER_AUDIENCE: 'secret-gate-api',
      VERIFIER_REQUIRED_SCOPES: 'secrets:read',
      // oauth2-mock-server signs access tokens with `typ: JWT`: the documented opt-out.
      VERIFIER_REQUIRE_TYP: 'off',
      // Far more than the other rows ask for, a fixed number for the limit's row.
      VERIFIER_VERIFY_RATE: '1r/m',
      VERIFIER_VERIFY_BURST: '50',
    }));
    await service.start();
    ({ port } = await service.listen({ kind: 'tcp', host: '127.0.0.1', port: 0 }));
  });
  afterAll(async () => {
    await service.stop(0);
    await idp.stop();
  });

  it('allows a token from the IdP found by OIDC discovery: 204 with identity headers and no body', async () => {
    const reply = await get({ port }, '/verify', { authorization: `Bearer ${await token()}` });
    expect(reply.status).toBe(204);
    expect(reply.body).toBe('');
    expect(reply.headers).toMatchObject({
      'x-auth-client': 'spa-demo',
      'x-auth-set': secretSetName(issuer, 'spa-demo'),
    });
    const same = await token();
    const first = await get({ port }, '/verify', {
      'x-sg-policy': 'default',
      authorization: `Bearer ${same}`,
    });
    const cached = await get({ port }, '/verify', {
      'x-sg-policy': 'default',
      authorization: `Bearer ${same}`,
    });
    expect([first.status, cached.status]).toEqual([204, 204]);
    expect(cached.headers['x-auth-set']).toBe(secretSetName(issuer, 'spa-demo'));
  });

  it('answers 401 with a challenge and an empty body', async () => {
    const missing = await get({ port }, '/verify');
    expect(missing).toMatchObject({ status: 401, body: '' });
    expect(missing.headers['www-authenticate']).toBe('Bearer realm="secret-gate"');
    const bad = await get({ port }, '/verify', { authorization: 'Bearer abc.def.ghi' });
    expect(bad.headers['www-authenticate']).toBe(
      'Bearer realm="secret-gate", error="invalid_token"',
    );
    expect(bad.headers['content-length']).toBe('0');
  });

  it('answers 403 with X-Auth-Challenge for a missing scope and for an unknown policy', async () => {
    const scope = await get({ port }, '/verify', {
      authorization: `Bearer ${await token('openid')}`,
    });
    expect(scope.status).toBe(403);
    expect(scope.headers['x-auth-challenge']).toBe(
      'Bearer realm="secret-gate", error="insufficient_scope", scope="secrets:read"',
    );
    const policy = await get({ port }, '/verify', {
      'x-sg-policy': 'nope',
      authorization: `Bearer ${await token()}`,
    });
    expect(policy.status).toBe(403);
  });

  it('reads the policy from X-SG-Policy only: a `?policy=` query names none', async () => {
    const reply = await get({ port }, '/verify?policy=nope', {
      authorization: `Bearer ${await token()}`,
    });
    expect(reply.status).toBe(204);
  });

  it('refuses a client over its call limit with a 403 marked limited, before any token work', async () => {
    const client = { 'x-sg-client': '198.51.100.1' };
    const statuses = [];
    for (let i = 0; i < 53; i++)
      statuses.push(
        (await get({ port }, '/verify', { ...client, authorization: `Bearer x${i}` })).status,
      );
    // 50 at once beyond one a minute: 51 answered (401: nobody issued these), then refused.
    expect(statuses).toEqual([...Array<number>(51).fill(401), 403, 403]);
    const limited = await get({ port }, '/verify', { ...client, authorization: 'Bearer x' });
    expect(limited).toMatchObject({ status: 403, body: '' });
    expect(limited.headers['x-auth-challenge']).toBe('limited');
    // Never stored at the edge: no X-Accel-Expires at all.
    expect(limited.headers['x-accel-expires']).toBeUndefined();
    // Another client key is counted apart.
    const other = await get({ port }, '/verify', { 'x-sg-client': '198.51.100.9' });
    expect(other.status).toBe(401);
  });

  it('serves /healthz, /readyz, /metrics and 404 elsewhere', async () => {
    expect((await get({ port }, '/healthz')).status).toBe(200);
    expect((await get({ port }, '/readyz')).status).toBe(200);
    const metrics = await get({ port }, '/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.body).toMatch(/verifier_decisions_total\{result="allow",reason="allowed"\} \d+/);
    expect(metrics.body).toMatch(
      /verifier_decisions_total\{result="deny_401",reason="token_missing"\} \d+/,
    );
    expect(metrics.body).toMatch(/verifier_cache_lookups_total\{outcome="hit"\} \d+/);
    expect(metrics.body).toMatch(/verifier_jwks_fetches_total\{issuer="[^"]+",outcome="ok"\} 1/);
    expect(metrics.body).toContain('verifier_verification_seconds_bucket');
    expect(metrics.body).toMatch(/verifier_cache_entries \d+/);
    expect((await get({ port }, '/other')).status).toBe(404);
  });
});

describe('the transport lifecycle', () => {
  it('listens on a unix socket, finishes in-flight requests on close and then stops accepting', async () => {
    // An introspection endpoint that answers slowly keeps one request in flight while we close.
    const active = JSON.stringify({ active: true, sub: 'slow', client_id: 'spa', aud: 'api' });
    const idp = createServer((_req, res) => {
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(active), 300);
    });
    await new Promise<void>((resolve) => idp.listen(0, '127.0.0.1', resolve));
    const idpUrl = `http://127.0.0.1:${(idp.address() as { port: number }).port}`;
    const { service } = buildService(
      {},
      {
        file: {
          issuers: [
            {
              type: 'introspection',
              issuer: idpUrl,
              endpoint: `${idpUrl}/introspect`,
              clientId: 'gate',
              clientSecret: 'secret',
              audience: 'api',
            },
          ],
          policies: { default: { issuers: [idpUrl] } },
        },
      },
    );
    const socketPath = join(mkdtempSync(join(tmpdir(), 'verifier-')), 'v.sock');
    await service.listen({ kind: 'unix', path: socketPath });
    // Shared with NGINX's user through a group: read and write for owner and group only.
    expect(statSync(socketPath).mode & 0o777).toBe(0o660);
    expect((await get({ socketPath }, '/healthz')).status).toBe(200);
    const inFlight = get({ socketPath }, '/verify', { authorization: 'Bearer opaque-token-1' });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const closed = service.stop(3000);
    const reply = await inFlight;
    expect(reply.status).toBe(204);
    expect(reply.headers['x-accel-expires']).toBeDefined();
    await closed;
    await expect(get({ socketPath }, '/healthz')).rejects.toThrow();
    await new Promise((resolve) => idp.close(resolve));
  });
});

describe('a revocation receiver on the transport', () => {
  let jwks: JwksServer;
  let service: ReturnType<typeof buildService>['service'];
  let base: string;

  beforeAll(async () => {
    jwks = await startJwksServer(['rsaA']);
    ({ service } = buildService({}, { file: revocationFile(jwks.url) }));
    await service.start();
    const { port } = await service.listen({ kind: 'tcp', host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${port}`;
  });
  afterAll(async () => {
    await service.stop(0);
    await jwks.close();
  });

  const post = (body: string) =>
    fetch(`${base}/backchannel-logout`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body,
    });

  it('reads a POST body and answers with the receiver: 400 JSON for a forged logout token', async () => {
    const answer = await post('logout_token=a.b.c');
    expect(answer.status).toBe(400);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(await answer.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('answers the same refusal with the same head and body every time (its head prepared once)', async () => {
    // The first answer of a refusal prepares its head; the ones after reuse it: the bytes a client
    // reads must not tell them apart (status, media type, no-store, the JSON body).
    const answers = [];
    for (let i = 0; i < 3; i++) {
      const answer = await post('logout_token=a.b.c');
      answers.push({
        status: answer.status,
        type: answer.headers.get('content-type'),
        cache: answer.headers.get('cache-control'),
        body: await answer.text(),
      });
    }
    expect(answers).toEqual(
      Array(3).fill({
        status: 400,
        type: 'application/json',
        cache: 'no-store',
        body: '{"error":"invalid_request"}',
      }),
    );
  });

  it('refuses a body over the cap with 413 and another method with 405', async () => {
    const large = await post(`logout_token=${'a'.repeat(MAX_RECEIVER_BODY_BYTES)}`);
    expect(large.status).toBe(413);
    expect(await large.json()).toEqual({
      error: 'invalid_request',
      error_description: 'the body is too large',
    });
    expect((await fetch(`${base}/backchannel-logout`)).status).toBe(405);
    // Pages answer GET only: a POST to one is not found.
    expect((await fetch(`${base}/healthz`, { method: 'POST', body: 'x' })).status).toBe(404);
  });

  it('answers a Content-Length over the cap 413 before a byte of the body is sent', async () => {
    const { port } = new URL(base);
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () =>
        socket.write(
          'POST /backchannel-logout HTTP/1.1\r\nHost: gate.test\r\n' +
            'Content-Type: application/x-www-form-urlencoded\r\n' +
            `Content-Length: ${MAX_RECEIVER_BODY_BYTES + 1}\r\n\r\n`,
        ),
      );
      let text = '';
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        if (!text.includes('\r\n\r\n')) return;
        resolve(text);
        socket.destroy();
      });
      socket.on('error', reject);
      setTimeout(() => reject(new Error(`no answer without the body: ${text}`)), 5000).unref();
    });
    expect(reply).toMatch(/^HTTP\/1\.1 413 /);
  });

  it('reads a body sent in chunks without Content-Length, up to the cap', async () => {
    const chunked = (parts: string[]) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const call = request(
          `${base}/backchannel-logout`,
          { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
          (res) => {
            let body = '';
            res.on('data', (chunk: Buffer) => (body += chunk.toString()));
            res.on('end', () => resolve({ status: res.statusCode!, body }));
          },
        );
        call.on('error', reject);
        for (const part of parts) call.write(part);
        call.end();
      });
    // The receiver got the whole form: a token it could read, refused as junk (not 413).
    const small = await chunked(['logout_tok', 'en=a.b', '.c']);
    expect(small.status).toBe(400);
    expect(JSON.parse(small.body)).toEqual({ error: 'invalid_request' });
    const half = 'a'.repeat(MAX_RECEIVER_BODY_BYTES / 2 + 1);
    expect((await chunked(['logout_token=', half, half])).status).toBe(413);
  });
});

describe("NGINX's edge key on the transport", () => {
  const KEY = 'k'.repeat(24) + '0123456789abcdef';
  const edge = { 'x-sg-edge-key': KEY };
  let jwks: JwksServer;
  let service: ReturnType<typeof buildService>['service'];
  let port: number;

  beforeAll(async () => {
    jwks = await startJwksServer(['rsaA']);
    ({ service } = buildService(
      {},
      {
        file: revocationFile(jwks.url, {
          edgeKeyFile: '/run/secret-gate/edge-key',
          callLimit: { rate: '1r/m', burst: 4 },
        }),
        files: { '/run/secret-gate/edge-key': `${KEY}\n` },
      },
    ));
    await service.start();
    ({ port } = await service.listen({ kind: 'tcp', host: '127.0.0.1', port: 0 }));
  });
  afterAll(async () => {
    await service.stop(0);
    await jwks.close();
  });

  const secret = { 'x-sg-policy': 'secret' };

  it('refuses a caller without the key 401 before any token work, whatever client it names', async () => {
    const token = await mintToken();
    const before = (await get({ port }, '/metrics')).body;
    const statuses: number[] = [];
    // A caller rotating X-SG-Client to escape the limit: no answer ever carries a decision.
    for (let i = 0; i < 30; i++)
      statuses.push(
        (
          await get({ port }, '/verify', {
            ...secret,
            'x-sg-client': `198.51.100.${i}`,
            authorization: `Bearer ${token}`,
          })
        ).status,
      );
    expect(statuses).toEqual(Array<number>(30).fill(401));
    const wrong = [KEY.slice(1), `${KEY}x`, KEY.replace('k', 'K'), ''];
    for (const key of wrong) {
      const reply = await get({ port }, '/verify', {
        ...secret,
        'x-sg-edge-key': key,
        authorization: `Bearer ${token}`,
      });
      expect(reply).toMatchObject({ status: 401, body: '' });
      // Not a token's refusal (no challenge), and never stored at the edge.
      expect(reply.headers['www-authenticate']).toBeUndefined();
      expect(reply.headers['x-accel-expires']).toBe('0');
    }
    // No decision was made for any of them.
    expect((await get({ port }, '/metrics')).body.match(/verifier_decisions_total.*/g)).toEqual(
      before.match(/verifier_decisions_total.*/g),
    );
  });

  it("never spends a client's calls: the client a keyless caller named still has its whole burst", async () => {
    const client = { 'x-sg-client': '198.51.100.77' };
    for (let i = 0; i < 20; i++)
      await get({ port }, '/verify', { ...client, authorization: `Bearer x${i}` });
    const token = await mintToken();
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) {
      const headers = { ...secret, ...edge, ...client, authorization: `Bearer ${token}` };
      statuses.push((await get({ port }, '/verify', headers)).status);
    }
    // burst 4 + 1 answered with the key, then limited: the 20 keyless calls counted for nothing.
    expect(statuses).toEqual([204, 204, 204, 204, 204, 403, 403]);
  });

  it('answers a receiver push without the key 401 JSON before reading it, and takes it with the key', async () => {
    const push = (headers: Record<string, string>) =>
      fetch(`http://127.0.0.1:${port}/backchannel-logout`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: 'logout_token=a.b.c',
      });
    const keyless = await push({});
    expect(keyless.status).toBe(401);
    expect(await keyless.json()).toEqual({
      error: 'invalid_request',
      error_description: 'unknown caller',
    });
    const keyed = await push(edge);
    expect(keyed.status).toBe(400);
  });

  it('keeps the probes and metrics open to every caller', async () => {
    expect((await get({ port }, '/healthz')).status).toBe(200);
    expect((await get({ port }, '/readyz')).status).toBe(200);
  });
});

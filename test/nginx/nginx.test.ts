// The rendered templates under the real nginx binary, run from a temporary prefix on free ports:
// first in front of a stand-in that speaks the verifier contract (so every answer and every header
// NGINX forwards can be checked), then in front of the real verifier and dev IdP when built.
import { spawn, type ChildProcess } from 'node:child_process';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../stack/ports.js';
import {
  contractCloudFrontGrant,
  contractTokens,
  longCachedToken,
  startContractVerifier,
  type ContractVerifier,
} from './contract-verifier.js';
import { secretSetsWatcherPid } from '../../stack/nginx/secret-sets-watcher.js';
import { startLocalNginx, type LocalNginx } from '../../stack/nginx/local-nginx.js';
import { localNginxEnv, nginxPaths, type LocalNginxOptions } from '../../stack/nginx/render.js';
import { allSecretValues, type SecretsFile } from '../support/secrets.js';
import { MAX_TOKEN_BYTES } from '../../verifier/src/token/token-shape.js';
import type { TokenShape } from '../../stack/idp-client.js';

const devSecrets = JSON.parse(await readFile(nginxPaths.devSecretsFile, 'utf8')) as SecretsFile & {
  policies: { payments: { default: Record<string, string> } };
};
const secretValues = allSecretValues(devSecrets);
const realVerifierMain = path.resolve(nginxPaths.templatesDir, '../../verifier/dist/main.js');

interface Answer {
  status: number;
  headers: Headers;
  body: string;
}

async function get(url: string, init: RequestInit = {}): Promise<Answer> {
  const response = await fetch(url, { redirect: 'manual', ...init });
  return { status: response.status, headers: response.headers, body: await response.text() };
}

function bearer(token: string): RequestInit {
  return { headers: { authorization: `Bearer ${token}` } };
}

function expectNoSecret(answer: Answer): void {
  for (const value of secretValues) expect(answer.body).not.toContain(value);
  expect(answer.headers.getSetCookie()).toEqual([]);
}

/** A built SPA in miniature: index.html and one hashed asset big enough to be compressed. */
async function createSpaRoot(dir: string): Promise<string> {
  await mkdir(path.join(dir, 'assets'), { recursive: true });
  await writeFile(
    path.join(dir, 'index.html'),
    '<!doctype html><script type="module" src="/assets/app-3f2a.js"></script>\n',
  );
  await writeFile(
    path.join(dir, 'assets', 'app-3f2a.js'),
    'console.log("secret-gate");\n'.repeat(100),
  );
  // A root master runs its workers as nobody: they must be able to read the files.
  await chmod(dir, 0o755);
  await chmod(path.join(dir, 'assets'), 0o755);
  return dir;
}

interface Site {
  nginx: LocalNginx;
  url: string;
  prefix: string;
  memoryDir: string;
}

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function startSite(
  verifierAddr: string,
  { edgeKeyFile, ...options }: Partial<LocalNginxOptions> & { edgeKeyFile?: string } = {},
  processEnv: Record<string, string> = {},
  edit?: (prefix: string) => Promise<void>,
): Promise<Site> {
  const work = await mkdtemp(path.join(tmpdir(), 'sg-nginx-'));
  await chmod(work, 0o755);
  const spaRoot = await createSpaRoot(path.join(work, 'spa'));
  const prefix = path.join(work, 'prefix');
  const listen = `127.0.0.1:${await freePort()}`;
  const env = localNginxEnv({
    prefix,
    listen,
    verifierAddr,
    spaRoot,
    workerProcesses: 1,
    secretRate: '1000r/s',
    cloudFrontCookies: 'on',
    // The named sets NGINX serves; `unlisted` is one the secrets file has no set for.
    spaSecretSets: 'payments unlisted',
    ...options,
  });
  // The key the runner generates for a verifier on TCP (stack/orchestrate.ts), when a test asks.
  if (edgeKeyFile !== undefined) Object.assign(env, { SG_EDGE_KEY_FILE: edgeKeyFile });
  const nginx = await startLocalNginx({ prefix, env, processEnv, ...(edit ? { edit } : {}) });
  cleanups.push(async () => {
    await nginx.stop();
    await rm(work, { recursive: true, force: true });
  });
  return { nginx, url: nginx.baseUrl, prefix, memoryDir: env.SG_MEMORY_DIR };
}

describe('NGINX in front of a verifier that speaks the contract', () => {
  let verifier: ContractVerifier;
  let verifierPort: number;
  let site: Site;

  beforeAll(async () => {
    verifierPort = await freePort();
    verifier = await startContractVerifier(verifierPort);
    cleanups.push(() => verifier.close());
    site = await startSite(`127.0.0.1:${verifierPort}`);
  });

  it('answers /hello with 200 and no token', async () => {
    const answer = await get(`${site.url}/hello`);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ status: 'ok' });
  });

  it("answers /secret without a token with 401, the verifier's WWW-Authenticate and no secret", async () => {
    const answer = await get(`${site.url}/secret`);
    expect(answer.status).toBe(401);
    expect(answer.headers.get('www-authenticate')).toBe('Bearer realm="secret-gate"');
    expect(answer.headers.get('content-type')).toBe('application/json');
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(JSON.parse(answer.body)).toMatchObject({ error: 'unauthorized' });
    expectNoSecret(answer);
  });

  it('answers a garbage token with 401 invalid_token and no secret', async () => {
    const answer = await get(`${site.url}/secret`, bearer('not-a-token'));
    expect(answer.status).toBe(401);
    expect(answer.headers.get('www-authenticate')).toBe(
      'Bearer realm="secret-gate", error="invalid_token"',
    );
    expectNoSecret(answer);
  });

  it('answers a token without the scope with 403 and WWW-Authenticate from X-Auth-Challenge', async () => {
    const answer = await get(`${site.url}/secret`, bearer(contractTokens.missingScope));
    expect(answer.status).toBe(403);
    expect(answer.headers.get('www-authenticate')).toBe(
      'Bearer realm="secret-gate", error="insufficient_scope", scope="secrets:read"',
    );
    expect(JSON.parse(answer.body)).toEqual({ error: 'insufficient_scope' });
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expectNoSecret(answer);
  });

  it.each([
    ['spa-demo', contractTokens.spaDemo, devSecrets.clients['spa-demo']],
    ['partner-app', contractTokens.partnerApp, devSecrets.clients['partner-app']],
    ['an unlisted client', contractTokens.unknownClient, devSecrets.default],
  ])('hands %s its own secret set, not to be stored', async (_client, token, expected) => {
    const answer = await get(`${site.url}/secret`, bearer(token));
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('application/json');
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(JSON.parse(answer.body)).toEqual(expected);
    expect(answer.headers.getSetCookie()).toEqual([]);
  });

  it.each(['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'])(
    'answers %s /secret with 405 JSON and Allow: GET, even with a valid token, without asking the verifier',
    async (method) => {
      const before = verifier.received.length;
      const answer = await get(`${site.url}/secret`, { method, ...bearer(contractTokens.spaDemo) });
      expect(answer.status).toBe(405);
      expect(answer.headers.get('allow')).toBe('GET');
      if (method !== 'HEAD')
        expect(JSON.parse(answer.body)).toEqual({ error: 'method_not_allowed' });
      expectNoSecret(answer);
      expect(verifier.received.length).toBe(before);
    },
  );

  // /secret/<name> ([a-z][a-z0-9-]{0,31}) is a named set; anything else below /secret/ is not.
  it.each(['/secret/', '/secret/X', '/secret/x/y', '/secret/x.json', '/secret/1x'])(
    'answers %s with a JSON 404, neither the secret nor the SPA',
    async (pathname) => {
      const answer = await get(`${site.url}${pathname}`, bearer(contractTokens.spaDemo));
      expect(answer.status).toBe(404);
      expect(JSON.parse(answer.body)).toEqual({ error: 'not_found' });
      expectNoSecret(answer);
    },
  );

  it.each(['/secret/unknown', '/secret/admin', '/secret/secret'])(
    'answers %s, a name no policy has, with a JSON 404 without asking the verifier',
    async (pathname) => {
      const before = verifier.received.length;
      const answer = await get(`${site.url}${pathname}`, bearer(contractTokens.spaDemo));
      expect(answer.status).toBe(404);
      expect(JSON.parse(answer.body)).toEqual({ error: 'not_found' });
      expect(answer.headers.get('www-authenticate')).toBeNull();
      expectNoSecret(answer);
      expect(verifier.received.length).toBe(before);
    },
  );

  it.each(['//secret', '/./secret', '/hello/../secret', '/secret/..%2fsecret', '/%73ecret'])(
    'protects %s, which NGINX normalises to /secret, like /secret itself',
    async (rawPath) => {
      const answer = await rawGet(site.url, rawPath, {});
      expect(answer.status).toBe(401);
      expect(answer.body.toString()).not.toContain('x-api-key');
    },
  );

  it.each([{}, bearer(contractTokens.spaDemo)])(
    'has no internal secret location left to reach: /_sg_secret_dpop is an SPA route with no secret (%o)',
    async (init) => {
      const answer = await get(`${site.url}/_sg_secret_dpop`, init);
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toBe('text/html');
      expectNoSecret(answer);
    },
  );

  it('serves /secret/payments from the payments policy: X-SG-Policy names it, its set is sent', async () => {
    const before = verifier.received.length;
    const answer = await get(`${site.url}/secret/payments`, bearer(contractTokens.spaDemo));
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual(devSecrets.policies.payments.default);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(answer.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(verifier.received.slice(before).map((r) => r.headers['x-sg-policy'])).toEqual([
      'payments',
    ]);
  });

  it('asks the verifier for policy secret on /secret, never a named one', async () => {
    const before = verifier.received.length;
    await get(`${site.url}/secret`, bearer(contractTokens.partnerApp));
    expect(verifier.received.slice(before).map((r) => r.headers['x-sg-policy'])).toEqual([
      'secret',
    ]);
  });

  it('answers 503 and no secret for a name the secrets file does not list, even when allowed', async () => {
    const answer = await get(`${site.url}/secret/unlisted`, bearer(contractTokens.spaDemo));
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.body)).toEqual({ error: 'secrets_unavailable' });
    expectNoSecret(answer);
  });

  it.each([
    ['no token', {}, 401],
    ['a garbage token', bearer('not-a-token'), 401],
    ['a token without the scope', bearer(contractTokens.missingScope), 403],
  ])('answers /secret/payments with %s like /secret: %i and no secret', async (_, init, status) => {
    const answer = await get(`${site.url}/secret/payments`, init);
    expect(answer.status).toBe(status);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expectNoSecret(answer);
  });

  it.each(['POST', 'HEAD'])(
    'answers %s /secret/payments with 405 and Allow: GET without asking the verifier',
    async (method) => {
      const before = verifier.received.length;
      const answer = await get(`${site.url}/secret/payments`, {
        method,
        ...bearer(contractTokens.spaDemo),
      });
      expect(answer.status).toBe(405);
      expect(answer.headers.get('allow')).toBe('GET');
      expect(verifier.received.length).toBe(before);
    },
  );

  it.each(['/secret/payments?access_token=x', '/secret/payments%3Faccess_token=x'])(
    'refuses %s with 400 before the verifier or a log line sees it',
    async (pathname) => {
      const before = verifier.received.length;
      const answer = await get(`${site.url}${pathname}`, bearer(contractTokens.spaDemo));
      expect(answer.status).toBe(400);
      expectNoSecret(answer);
      expect(verifier.received.length).toBe(before);
    },
  );

  it('keeps /_verify internal', async () => {
    const answer = await get(`${site.url}/_verify`, bearer(contractTokens.spaDemo));
    expect(answer.status).toBe(404);
  });

  it('lets a request with 6 KiB of cookies through, sending the verifier only its own headers', async () => {
    const before = verifier.received.length;
    const answer = await get(`${site.url}/secret`, {
      headers: {
        authorization: `Bearer ${contractTokens.spaDemo}`,
        cookie: `session=${'c'.repeat(6 * 1024)}`,
        'x-original-uri': '/spoofed',
        'x-original-method': 'POST',
        'x-auth-client': 'partner-app',
      },
    });
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual(devSecrets.clients['spa-demo']);
    expect(verifier.received.length).toBe(before + 1);
    const seen = verifier.received.at(-1);
    expect(seen?.url).toBe('/verify');
    expect(seen?.headers).toEqual({
      host: 'sg_verifier',
      authorization: `Bearer ${contractTokens.spaDemo}`,
      'x-sg-policy': 'secret',
      // The key of the verifier's per-client call limit: the client's address.
      'x-sg-client': '127.0.0.1',
      'x-original-uri': '/secret',
      'x-original-method': 'GET',
      // SG_EXTERNAL_ORIGIN, for DPoP's `htu`: the configured origin, never the request's Host.
      'x-original-origin': new URL(site.url).origin,
    });
  });

  it("sends the verifier its edge key, on /_verify and to the receivers, and nothing else of the client's", async () => {
    const key = 'f00d'.repeat(16);
    const keyFile = path.join(await mkdtemp(path.join(tmpdir(), 'sg-edge-key-')), 'edge-key');
    await writeFile(keyFile, `${key}\n`, { mode: 0o600 });
    const keyed = await startSite(`127.0.0.1:${verifierPort}`, { edgeKeyFile: keyFile });
    const before = verifier.received.length;
    const answer = await get(`${keyed.url}/secret`, {
      headers: {
        authorization: `Bearer ${contractTokens.spaDemo}`,
        // A client cannot pose as NGINX nor name its own client key.
        'x-sg-edge-key': 'guessed',
        'x-sg-client': '203.0.113.1',
      },
    });
    expect(answer.status).toBe(200);
    expect(verifier.received.at(-1)?.headers).toEqual({
      host: 'sg_verifier',
      authorization: `Bearer ${contractTokens.spaDemo}`,
      'x-sg-policy': 'secret',
      'x-sg-client': '127.0.0.1',
      'x-original-uri': '/secret',
      'x-original-method': 'GET',
      'x-original-origin': new URL(keyed.url).origin,
      'x-sg-edge-key': key,
    });
    await get(`${keyed.url}/backchannel-logout`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        cookie: 'session=1',
        'x-sg-edge-key': 'guessed',
        'x-sg-client': '203.0.113.1',
      },
      body: 'logout_token=a.b.c',
    });
    expect(verifier.received.length).toBe(before + 2);
    // The receiver's call: its body's type and length, the key, and the client NGINX names for the
    // flood's log line; the client's other headers (its own X-SG-Client among them) dropped.
    expect(verifier.received.at(-1)).toEqual({
      url: '/backchannel-logout',
      headers: {
        host: 'sg_verifier',
        'content-type': 'application/x-www-form-urlencoded',
        'content-length': String('logout_token=a.b.c'.length),
        'x-sg-edge-key': key,
        'x-sg-client': '127.0.0.1',
      },
    });
    // The rendered header is the master's to read alone.
    const snippet = path.join(keyed.prefix, 'snippets', 'edge-key.conf');
    expect((await stat(snippet)).mode & 0o777).toBe(0o600);
  });

  it('answers cookies larger than NGINX accepts with a JSON 400, never a 500', async () => {
    const answer = await get(`${site.url}/secret`, {
      headers: {
        authorization: `Bearer ${contractTokens.spaDemo}`,
        cookie: `a=${'c'.repeat(30 * 1024)}`,
      },
    });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toEqual({ error: 'bad_request' });
    expectNoSecret(answer);
  });

  it('passes an Authorization of up to 20,000 characters to the verifier as it was sent', async () => {
    for (const length of [3_800, 20_000]) {
      const before = verifier.received.length;
      const value = `Bearer ${'a'.repeat(length - 7)}`;
      const answer = await get(`${site.url}/secret`, { headers: { authorization: value } });
      expect(answer.status, `${length} characters`).toBe(401);
      expect(answer.headers.get('www-authenticate')).toBe(
        'Bearer realm="secret-gate", error="invalid_token"',
      );
      expectNoSecret(answer);
      expect(verifier.received.length).toBe(before + 1);
      expect(verifier.received.at(-1)?.headers.authorization).toBe(value);
    }
  });

  it('turns a CloudFront grant into the CloudFront cookies on the allowed /secret answer', async () => {
    const answer = await get(`${site.url}/secret`, bearer(contractTokens.cloudFront));
    expect(answer.status).toBe(200);
    expect(answer.headers.getSetCookie()).toEqual([
      contractCloudFrontGrant['x-auth-cf-policy'],
      contractCloudFrontGrant['x-auth-cf-signature'],
      contractCloudFrontGrant['x-auth-cf-key-pair-id'],
      contractCloudFrontGrant['x-auth-cf-hash-algorithm'],
    ]);
    expect(JSON.parse(answer.body)).toEqual(devSecrets.clients['spa-demo']);
  });

  it.each([
    ['a denial', '/secret', bearer('not-a-token')],
    ['/hello', '/hello', bearer(contractTokens.cloudFront)],
    ['the SPA', '/', bearer(contractTokens.cloudFront)],
    ['/config.json', '/config.json', bearer(contractTokens.cloudFront)],
  ])('sets no cookie on %s', async (_case, pathname, init) => {
    const answer = await get(`${site.url}${pathname}`, init);
    expect(answer.headers.getSetCookie()).toEqual([]);
  });

  it('serves the SPA: index.html for client routes, revalidated every time', async () => {
    for (const pathname of ['/', '/index.html', '/some/client/route']) {
      const answer = await get(`${site.url}${pathname}`);
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toBe('text/html');
      expect(answer.headers.get('cache-control')).toBe('no-cache');
      expect(answer.body).toContain('/assets/app-3f2a.js');
    }
  });

  it('serves hashed assets as immutable and gzipped, and a missing asset as a JSON 404', async () => {
    const asset = await fetch(`${site.url}/assets/app-3f2a.js`, {
      headers: { 'accept-encoding': 'gzip' },
    });
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(asset.headers.get('content-type')).toBe('text/javascript');
    await asset.arrayBuffer();

    const raw = await rawGet(site.url, '/assets/app-3f2a.js', { 'Accept-Encoding': 'gzip' });
    expect(raw.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(raw.body).toString()).toContain('secret-gate');

    const missing = await get(`${site.url}/assets/missing-1234.js`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toBe('application/json');
    expect(missing.body).not.toContain('<!doctype html>');
  });

  it('never compresses the secret', async () => {
    const raw = await rawGet(site.url, '/secret', {
      'Accept-Encoding': 'gzip',
      Authorization: `Bearer ${contractTokens.spaDemo}`,
    });
    expect(raw.headers['content-encoding']).toBeUndefined();
  });

  it('answers /config.json with the SPA runtime settings from SG_OIDC_*, rendered at start', async () => {
    const answer = await get(`${site.url}/config.json`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('application/json');
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(answer.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(JSON.parse(answer.body)).toEqual({
      issuer: 'http://127.0.0.1:8081',
      clientId: 'spa-demo',
      scope: 'openid secrets:read',
      audience: 'secret-gate-api',
      // RFC 8707: the SPA names the API with `resource=` unless a preset asks for Auth0's `audience=`.
      audienceParameters: 'resource',
      secretSets: 'payments unlisted',
    });
  });

  it.each(['/', '/hello', '/secret', '/assets/app-3f2a.js', '/nothing/here.js'])(
    'sends the security headers on %s',
    async (pathname) => {
      const answer = await get(`${site.url}${pathname}`);
      const csp = answer.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("connect-src 'self' http://127.0.0.1:8081");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
      expect(answer.headers.get('referrer-policy')).toBe('no-referrer');
    },
  );

  it('writes JSON access log lines without the Authorization header or the query string', async () => {
    // The SPA's sign-in callback carries a code in its query; /secret takes no query at all.
    await get(`${site.url}/?code=query-secret-value`);
    await get(`${site.url}/secret`, bearer(contractTokens.spaDemo));
    const lines = (await site.nginx.accessLog()).trim().split('\n');
    const last = JSON.parse(lines.at(-1) ?? '{}') as Record<string, unknown>;
    expect(JSON.parse(lines.at(-2) ?? '{}')).toMatchObject({ path: '/', status: 200 });
    expect(last).toMatchObject({
      method: 'GET',
      path: '/secret',
      status: 200,
      client_id: 'spa-demo',
    });
    const log = lines.join('\n');
    expect(log).not.toContain('query-secret-value');
    expect(log).not.toContain(contractTokens.spaDemo);
    expect(log).not.toContain(devSecrets.clients['spa-demo']?.['x-api-key']);
  });

  it('fails closed with 503 and Retry-After while the verifier is down, and recovers when it is back', async () => {
    await verifier.close();
    const down = await get(`${site.url}/secret`, bearer(contractTokens.spaDemo));
    expect(down.status).toBe(503);
    expect(down.headers.get('retry-after')).toBe('5');
    expect(down.headers.get('content-type')).toBe('application/json');
    expect(JSON.parse(down.body)).toMatchObject({ error: 'temporarily_unavailable' });
    expectNoSecret(down);

    verifier = await startContractVerifier(verifierPort);
    cleanups.push(() => verifier.close());
    const back = await get(`${site.url}/secret`, bearer(contractTokens.spaDemo));
    expect(back.status).toBe(200);
  });
});

describe('NGINX rate limit and SECRETS compatibility', () => {
  let verifier: ContractVerifier;

  beforeAll(async () => {
    const port = await freePort();
    verifier = await startContractVerifier(port);
    cleanups.push(() => verifier.close());
  });

  it('answers 429 JSON with Retry-After once a client exceeds SG_SECRET_RATE + burst, with no secret', async () => {
    const site = await startSite(`127.0.0.1:${verifier.server.address() && portOf(verifier)}`, {
      secretRate: '1r/m',
      secretBurst: 1,
    });
    const statuses: number[] = [];
    let limited: Answer | undefined;
    for (let i = 0; i < 4; i++) {
      const answer = await get(`${site.url}/secret`, bearer(contractTokens.spaDemo));
      statuses.push(answer.status);
      if (answer.status === 429) limited = answer;
    }
    expect(statuses).toEqual([200, 200, 429, 429]);
    expect(limited?.headers.get('retry-after')).toBe('1');
    expect(JSON.parse(limited?.body ?? '{}')).toEqual({ error: 'too_many_requests' });
    expectNoSecret(limited as Answer);
    // The limit is on /secret only.
    expect((await get(`${site.url}/hello`)).status).toBe(200);
  });

  it('caps receiver pushes per address in a bucket apart from /secret, with a JSON 429 + Retry-After', async () => {
    const site = await startSite(`127.0.0.1:${portOf(verifier)}`, {
      secretRate: '1r/m',
      secretBurst: 1,
    });
    // The browsers sharing the IdP's address spend their own /secret bucket…
    const secrets: number[] = [];
    for (let i = 0; i < 3; i++)
      secrets.push((await get(`${site.url}/secret`, bearer(contractTokens.spaDemo))).status);
    expect(secrets).toEqual([200, 200, 429]);
    // …never the pushes': the first two reach the verifier, then the flood cap answers.
    const push = () =>
      get(`${site.url}/backchannel-logout`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'logout_token=a.b.c',
      });
    const pushes: Answer[] = [];
    for (let i = 0; i < 3; i++) pushes.push(await push());
    expect(pushes.map((answer) => answer.status === 429)).toEqual([false, false, true]);
    const limited = pushes[2]!;
    expect(limited.headers.get('retry-after')).toBe('1');
    expect(JSON.parse(limited.body)).toEqual({ error: 'too_many_requests' });
  });

  it("hands every allowed caller the original study's flat SECRETS object when it is set", async () => {
    const site = await startSite(
      `127.0.0.1:${portOf(verifier)}`,
      {},
      { SECRETS: '{"mysupersecretkey":"123123123"}' },
    );
    for (const token of [contractTokens.spaDemo, contractTokens.partnerApp]) {
      const answer = await get(`${site.url}/secret`, bearer(token));
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body)).toEqual({ mysupersecretkey: '123123123' });
    }
    const denied = await get(`${site.url}/secret`);
    expect(denied.status).toBe(401);
    expect(denied.body).not.toContain('123123123');
  });
});

/** Drops the njs module and everything that uses it from a rendered prefix. */
async function withoutNjs(prefix: string): Promise<void> {
  const edit = async (rel: string, change: (text: string) => string) => {
    const file = path.join(prefix, rel);
    await writeFile(file, change(await readFile(file, 'utf8')));
  };
  await edit('nginx.conf', (text) =>
    text
      .replace(/^load_module .*ngx_http_js_module\.so;$/m, '')
      .replace(/^\s*js_\w+ .*;$/gm, '')
      .replace('include snippets/dpop.conf;', 'map "" $sg_dpop_proof { default ""; }'),
  );
  // The one snippet made of njs, no longer included.
  await rm(path.join(prefix, 'snippets', 'dpop.conf'));
  // The merge of minted values (a policy with `mint`; none here) answers without njs.
  await edit('conf.d/default.conf', (text) =>
    text
      .replace(/^\s*js_import minted_set .*;$/m, '')
      .replace(/^(\s*)js_content minted_set\.deliver;$/m, '$1return 503;'),
  );
  const rendered = readdirSync(prefix, { recursive: true }).map(String);
  for (const rel of rendered.filter((f) => f.endsWith('.conf'))) {
    const text = await readFile(path.join(prefix, rel), 'utf8');
    if (/^\s*(js_|load_module .*js)/m.test(text)) throw new Error(`${rel} still uses njs`);
  }
}

describe('the fast path of /secret: static set files, no njs', () => {
  let verifier: ContractVerifier;
  let site: Site;

  beforeAll(async () => {
    const port = await freePort();
    verifier = await startContractVerifier(port);
    cleanups.push(() => verifier.close());
    site = await startSite(`127.0.0.1:${port}`, {}, {}, withoutNjs);
  });

  it('serves a cached allowed /secret, its own set and the default set with the njs module not even loaded', async () => {
    const before = verifier.received.length;
    for (let i = 0; i < 3; i++) {
      const answer = await get(`${site.url}/secret`, bearer(contractTokens.cached));
      expect(answer.status).toBe(200);
      expect(answer.headers.get('cache-control')).toBe('no-store');
      expect(answer.headers.get('content-type')).toBe('application/json');
      expect(JSON.parse(answer.body)).toEqual(devSecrets.clients['spa-demo']);
    }
    // One verifier call: the other two were edge-cache hits.
    expect(verifier.received.length).toBe(before + 1);
    const other = await get(`${site.url}/secret`, bearer(contractTokens.unknownClient));
    expect(JSON.parse(other.body)).toEqual(devSecrets.default);
    const cookies = await get(`${site.url}/secret`, bearer(contractTokens.cloudFront));
    expect(cookies.headers.getSetCookie()).toHaveLength(4);
    expect((await get(`${site.url}/secret`)).status).toBe(401);
  });

  it('keeps one edge-cache entry for an Authorization of 3,700 characters, without an [error]', async () => {
    const token = longCachedToken(3_700 - 'Bearer '.length);
    const before = verifier.received.length;
    for (let i = 0; i < 3; i++) {
      const answer = await get(`${site.url}/secret`, bearer(token));
      expect(answer.status).toBe(200);
    }
    expect(verifier.received.length).toBe(before + 1);
    const errors = await readFile(path.join(site.prefix, 'logs', 'error.log'), 'utf8').catch(
      () => '',
    );
    expect(errors).not.toMatch(/\[error\]|buffer_size/);
  });

  it('answers concurrent requests of one token promptly when the answer cannot be stored', async () => {
    const started = performance.now();
    const answers = await Promise.all(
      Array.from({ length: 4 }, () =>
        get(`${site.url}/secret`, bearer(contractTokens.slowUncached)),
      ),
    );
    const took = performance.now() - started;
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    // Each verifier answer takes 300 ms; a waiter gives up on the lock after 50 ms, not 5 s.
    expect(took).toBeLessThan(1_200);
  });
});

describe('the memory directory of a local run', () => {
  it('is removed again when the start fails after rendering', async () => {
    const work = await mkdtemp(path.join(tmpdir(), 'sg-failed-start-'));
    cleanups.push(() => rm(work, { recursive: true, force: true }));
    const prefix = path.join(work, 'prefix');
    const env = localNginxEnv({ prefix, listen: `127.0.0.1:${await freePort()}` });
    const start = startLocalNginx({
      prefix,
      env,
      edit: async () => {
        expect(existsSync(env.SG_MEMORY_DIR)).toBe(true);
        throw new Error('broken on purpose');
      },
    });
    await expect(start).rejects.toThrow('broken on purpose');
    expect(existsSync(env.SG_MEMORY_DIR)).toBe(false);
  });
});

describe('secret rotation through the secret-set watcher', () => {
  let verifier: ContractVerifier;
  let site: Site;
  let secretsFile: string;

  const setOf = (generation: number, clients: readonly string[]) =>
    `${JSON.stringify({
      default: { key: `default-g${generation}` },
      clients: Object.fromEntries(clients.map((c) => [c, { key: `${c}-g${generation}` }])),
    })}\n`;
  const keyOf = async (token: string) => {
    const answer = await get(`${site.url}/secret`, bearer(token));
    return answer.status === 200 ? (JSON.parse(answer.body) as { key: string }).key : answer.status;
  };
  /** Polls until `token` gets `expected`, and returns how long that took. */
  const shows = async (token: string, expected: string | number) => {
    const started = performance.now();
    while ((await keyOf(token)) !== expected) {
      if (performance.now() - started > 5_000) throw new Error(`never saw ${expected}`);
      await sleep(50);
    }
    return performance.now() - started;
  };

  beforeAll(async () => {
    const port = await freePort();
    verifier = await startContractVerifier(port);
    cleanups.push(() => verifier.close());
    const dir = await mkdtemp(path.join(tmpdir(), 'sg-rotation-'));
    await chmod(dir, 0o755);
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    secretsFile = path.join(dir, 'secrets.json');
    await writeFile(secretsFile, setOf(1, ['spa-demo', 'partner-app']), { mode: 0o644 });
    site = await startSite(`127.0.0.1:${port}`, { secretsFile });
  });

  it('serves a replaced file within 2 s, without a reload', async () => {
    expect(await keyOf(contractTokens.spaDemo)).toBe('spa-demo-g1');
    const master = site.nginx.process.pid;
    const workers = nginxWorkers(master);
    await writeFile(`${secretsFile}.next`, setOf(2, ['spa-demo', 'partner-app']), { mode: 0o644 });
    await rename(`${secretsFile}.next`, secretsFile);
    expect(await shows(contractTokens.spaDemo, 'spa-demo-g2')).toBeLessThan(2_000);
    expect(nginxWorkers(master)).toEqual(workers);
  });

  it('serves a file edited in place within 2 s, and a removed client gets the default set', async () => {
    await writeFile(secretsFile, setOf(3, ['spa-demo']));
    expect(await shows(contractTokens.partnerApp, 'default-g3')).toBeLessThan(2_000);
    expect(await keyOf(contractTokens.spaDemo)).toBe('spa-demo-g3');
  });

  it('answers 503 with a log line, never an old set, once the file is broken; recovers when fixed', async () => {
    await writeFile(secretsFile, '{"clients": ');
    expect(await shows(contractTokens.spaDemo, 503)).toBeLessThan(3_000);
    const answer = await get(`${site.url}/secret`, bearer(contractTokens.spaDemo));
    expect(JSON.parse(answer.body)).toEqual({ error: 'secrets_unavailable' });
    expect(answer.headers.get('retry-after')).toBe('30');
    // The watcher withdraws the sets, then says why: the line follows the 503 by a moment.
    await expect
      .poll(() => site.nginx.output(), { timeout: 2_000, interval: 50 })
      .toMatch(/secret sets: secrets file cannot be read as JSON; \/secret answers 503/);
    await writeFile(secretsFile, setOf(4, ['spa-demo']));
    expect(await shows(contractTokens.spaDemo, 'spa-demo-g4')).toBeLessThan(2_000);
  });

  it('keeps watching after its watcher is killed: the supervisor starts it again', async () => {
    const memoryDir = site.memoryDir;
    const first = secretSetsWatcherPid(memoryDir);
    expect(first).toBeDefined();
    process.kill(first as number, 'SIGKILL');
    await writeFile(secretsFile, setOf(5, ['spa-demo']));
    expect(await shows(contractTokens.spaDemo, 'spa-demo-g5')).toBeLessThan(2_000);
    const second = secretSetsWatcherPid(memoryDir);
    expect(second).toBeDefined();
    expect(second).not.toBe(first);
    expect(site.nginx.output()).toMatch(/watcher stopped \(status \d+\); restarting it/);
  });
});

describe.skipIf(process.getuid?.() !== 0)('a full memory directory', () => {
  let verifier: ContractVerifier;
  let site: Site;
  let secretsFile: string;
  let memoryDir: string;

  beforeAll(async () => {
    const port = await freePort();
    verifier = await startContractVerifier(port);
    cleanups.push(() => verifier.close());
    const dir = await mkdtemp(path.join(tmpdir(), 'sg-full-'));
    await chmod(dir, 0o755);
    const mount = path.join(dir, 'tmpfs');
    await mkdir(mount);
    expect(spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', mount]).status).toBe(0);
    cleanups.push(async () => {
      spawnSync('umount', [mount]);
      await rm(dir, { recursive: true, force: true });
    });
    memoryDir = path.join(mount, 'memory');
    secretsFile = path.join(dir, 'secrets.json');
    await writeFile(secretsFile, `${JSON.stringify({ default: { key: 'small' } })}\n`, {
      mode: 0o644,
    });
    site = await startSite(`127.0.0.1:${port}`, { secretsFile, memoryDir });
  });

  it('answers 503 when a rotation does not fit, logs it once, leaves nothing partial and never retries per request', async () => {
    expect(
      JSON.parse((await get(`${site.url}/secret`, bearer(contractTokens.spaDemo))).body),
    ).toEqual({ key: 'small' });
    const big = Object.fromEntries(
      Array.from({ length: 400 }, (_, i) => [`client-${i}`, { key: 'x'.repeat(1000) }]),
    );
    await writeFile(secretsFile, `${JSON.stringify({ default: { key: 'big' }, clients: big })}\n`);
    const started = performance.now();
    let status = 200;
    while (status !== 503 && performance.now() - started < 5_000) {
      status = (await get(`${site.url}/secret`, bearer(contractTokens.spaDemo))).status;
      await sleep(50);
    }
    expect(status).toBe(503);
    for (let i = 0; i < 20; i++) await get(`${site.url}/secret`, bearer(contractTokens.spaDemo));
    const lines = site.nginx.output().match(/cannot write the sets \(ENOSPC\)/g) ?? [];
    expect(lines).toHaveLength(1);
    const setsDir = path.join(memoryDir, 'sg-secret-sets');
    expect(readdirSync(setsDir).filter((name) => name.startsWith('.tmp-'))).toEqual([]);
    // Once it fits again, it is served.
    await writeFile(secretsFile, `${JSON.stringify({ default: { key: 'fits' } })}\n`);
    expect(
      await (async () => {
        const until = performance.now() + 3_000;
        for (;;) {
          const answer = await get(`${site.url}/secret`, bearer(contractTokens.spaDemo));
          if (answer.status === 200) return (JSON.parse(answer.body) as { key: string }).key;
          if (performance.now() > until) return answer.status;
          await sleep(50);
        }
      })(),
    ).toBe('fits');
  });
});

/** The worker pids of an NGINX master (a reload would replace them). */
function nginxWorkers(master: number | undefined): string {
  return spawnSync('pgrep', ['-P', String(master)], { encoding: 'utf8' }).stdout.trim();
}

describe.skipIf(!existsSync(realVerifierMain))(
  'NGINX in front of the real verifier and dev IdP',
  () => {
    let site: Site;
    let verifierProcess: ChildProcess;
    let verifierPort: number;
    let requestToken: (clientId?: string, scope?: string) => Promise<string>;
    let tokenOfLength: (length: number) => Promise<string>;
    let mintedToken: (shape: TokenShape) => Promise<string>;
    let startVerifier: () => Promise<void>;

    beforeAll(async () => {
      const { loadIdpConfig } = await import('../../idp/config.js');
      const { startIdp } = await import('../../idp/server.js');
      const { createIdpClient } = await import('../../stack/idp-client.js');
      const { verifierConfig } = await import('../../stack/service-env.js');
      const idp = await startIdp(loadIdpConfig({ IDP_HOST: '127.0.0.1', IDP_PORT: '0' }));
      cleanups.push(() => idp.close());
      const idpClient = createIdpClient(idp.issuer);
      requestToken = idpClient.requestToken;
      mintedToken = idpClient.mintToken;
      // A token of about `length` characters: its groups claim (GUIDs, as Entra ID sends them)
      // grows it; at most 60 characters short.
      tokenOfLength = async (length) => {
        const base = (await idpClient.mintToken({ claims: { groups: [] } })).length;
        const count = Math.max(0, Math.floor(((length - base) * 3) / 4 / 39));
        const groups = Array.from(
          { length: count },
          (_, i) => randomUUID().slice(0, -6) + String(i).padStart(6, '0'),
        );
        const token = await idpClient.mintToken({ claims: { groups } });
        expect(token.length).toBeLessThanOrEqual(length);
        expect(token.length).toBeGreaterThan(length - 60);
        return token;
      };

      const work = await mkdtemp(path.join(tmpdir(), 'sg-verifier-'));
      cleanups.push(() => rm(work, { recursive: true, force: true }));
      const configFile = path.join(work, 'verifier.json');
      const config = verifierConfig({
        issuer: idp.issuer,
        jwksUri: `${idp.issuer}/jwks`,
        audience: 'secret-gate-api',
      }) as { policies: { secret: Record<string, unknown> } };
      // The real CloudFront signer, with the repository's fixed test key.
      config.policies.secret.cloudfront = {
        keyPairId: 'K2JCJMDEHXQW5F',
        privateKeyFile: path.resolve(
          realVerifierMain,
          '../../../test/fixtures/cloudfront/rsa-2048.pkcs8.pem',
        ),
        algorithm: 'RSA-SHA256',
        resource: 'https://cdn.example.test/private/*',
        ttlSeconds: 300,
        cookieDomain: 'cdn.example.test',
      };
      await writeFile(configFile, JSON.stringify(config));
      verifierPort = await freePort();
      startVerifier = async () => {
        verifierProcess = spawn(process.execPath, [realVerifierMain], {
          env: {
            PATH: process.env.PATH ?? '',
            VERIFIER_LISTEN: `127.0.0.1:${verifierPort}`,
            VERIFIER_CONFIG: configFile,
            VERIFIER_LOG_LEVEL: 'warn',
          },
          stdio: 'ignore',
        });
        const child = verifierProcess;
        cleanups.push(() => stopChild(child));
        await waitForOk(`http://127.0.0.1:${verifierPort}/readyz`);
      };
      await startVerifier();
      site = await startSite(`127.0.0.1:${verifierPort}`, { oidcIssuer: idp.issuer });
    });

    it('answers no token and a garbage token with 401 and no secret', async () => {
      for (const init of [{}, bearer('garbage'), bearer('eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.')]) {
        const answer = await get(`${site.url}/secret`, init);
        expect(answer.status).toBe(401);
        expect(answer.headers.get('www-authenticate')).toMatch(/^Bearer realm=/);
        expect(answer.headers.getSetCookie()).toEqual([]);
        expectNoSecret(answer);
      }
    });

    it.each(['spa-demo', 'partner-app'])(
      'hands a valid token of %s its own secret set',
      async (clientId) => {
        const answer = await get(
          `${site.url}/secret`,
          bearer(await requestToken(clientId, 'secrets:read')),
        );
        expect(answer.status).toBe(200);
        expect(JSON.parse(answer.body)).toEqual(devSecrets.clients[clientId]);
        expect(answer.headers.get('cache-control')).toBe('no-store');
      },
    );

    it('sets the CloudFront cookies the real signer granted, on the allowed answer only', async () => {
      const token = await requestToken('spa-demo', 'secrets:read');
      const allowed = await get(`${site.url}/secret`, bearer(token));
      expect(allowed.status).toBe(200);
      const cookies = allowed.headers.getSetCookie();
      expect(cookies.map((c) => c.slice(0, c.indexOf('=')))).toEqual([
        'CloudFront-Policy',
        'CloudFront-Signature',
        'CloudFront-Key-Pair-Id',
        'CloudFront-Hash-Algorithm',
      ]);
      // Path from the resource (https://cdn.example.test/private/*), and never past the token.
      const { exp } = JSON.parse(
        Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8'),
      ) as { exp: number };
      for (const cookie of cookies) {
        expect(cookie).toMatch(
          /; Secure; HttpOnly; SameSite=Lax; Path=\/private\/; Domain=cdn\.example\.test; Expires=/,
        );
        const expires = Date.parse(/Expires=([^;]+)/.exec(cookie)?.[1] ?? '') / 1000;
        expect(expires).toBeLessThanOrEqual(exp);
        expect(expires).toBeGreaterThan(Date.now() / 1000);
      }
      expect(cookies[2]).toMatch(/^CloudFront-Key-Pair-Id=K2JCJMDEHXQW5F;/);

      const denied = await get(
        `${site.url}/secret`,
        bearer(await requestToken('spa-demo', 'openid')),
      );
      expect(denied.status).toBe(403);
      expect(denied.headers.getSetCookie()).toEqual([]);
    });

    it('answers a token without secrets:read with 403 insufficient_scope', async () => {
      const answer = await get(
        `${site.url}/secret`,
        bearer(await requestToken('spa-demo', 'openid')),
      );
      expect(answer.status).toBe(403);
      expect(answer.headers.get('www-authenticate')).toContain('error="insufficient_scope"');
      expectNoSecret(answer);
    });

    it('lets a valid token with 6 KiB of cookies through (headers stripped before the verifier)', async () => {
      const token = await requestToken('spa-demo', 'secrets:read');
      const answer = await get(`${site.url}/secret`, {
        headers: { authorization: `Bearer ${token}`, cookie: `a=${'x'.repeat(6 * 1024)}` },
      });
      expect(answer.status).toBe(200);
    });

    it.each([3, 5, 8, 15])(
      'hands a valid %i KiB token (a large groups claim) its secret set',
      async (kib) => {
        const token = await tokenOfLength(kib * 1024);
        const answer = await get(`${site.url}/secret`, bearer(token));
        expect(answer.status).toBe(200);
        expect(JSON.parse(answer.body)).toEqual(devSecrets.clients['spa-demo']);
      },
    );

    it('answers a 17 KiB token 401 token_too_large with a body that says so, never a 431 or 500', async () => {
      for (const token of [await tokenOfLength(17 * 1024), 'a'.repeat(17 * 1024)]) {
        const answer = await get(`${site.url}/secret`, bearer(token));
        expect(answer.status).toBe(401);
        expect(answer.headers.get('www-authenticate')).toBe(
          'Bearer realm="secret-gate", error="invalid_token", error_description="token_too_large"',
        );
        expect(JSON.parse(answer.body)).toEqual({
          error: 'token_too_large',
          message: `the token is larger than ${MAX_TOKEN_BYTES} bytes, the most this gate accepts`,
        });
        expectNoSecret(answer);
      }
      // Past NGINX's header buffer (24k) NGINX refuses the request itself, as a 400.
      const huge = await get(`${site.url}/secret`, bearer('a'.repeat(30 * 1024)));
      expect(huge.status).toBe(400);
      expect(JSON.parse(huge.body)).toEqual({ error: 'bad_request' });
    });

    it("refuses /secret/payments to a sign-in dated ahead, even within the issuer's clock tolerance", async () => {
      const now = Math.floor(Date.now() / 1000);
      const signedIn = (authTime: number) =>
        mintedToken({
          claims: { acr: 'urn:secret-gate:mfa', amr: ['pwd', 'otp'], auth_time: authTime },
        });
      expect((await get(`${site.url}/secret/payments`, bearer(await signedIn(now)))).status).toBe(
        200,
      );
      const ahead = await get(`${site.url}/secret/payments`, bearer(await signedIn(now + 25)));
      expect(ahead.status).toBe(401);
      expect(ahead.headers.get('www-authenticate')).toContain(
        'error="insufficient_user_authentication"',
      );
      expectNoSecret(ahead);
    });

    it('serves a token in its one canonical spelling and refuses its 15 others before any crypto', async () => {
      const token = await requestToken('spa-demo', 'secrets:read');
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
      const signature = token.slice(token.lastIndexOf('.') + 1);
      // RS256 with a 2048-bit key: 342 characters, 4 unused bits in the last one.
      expect(signature.length % 4).toBe(2);
      const high = alphabet.indexOf(signature.at(-1)!) & ~0b1111;
      const spellings = Array.from(
        { length: 16 },
        (_, low) => `${token.slice(0, -1)}${alphabet[high + low]!}`,
      );
      expect(spellings).toContain(token);
      for (const spelled of spellings) {
        const answer = await get(`${site.url}/secret`, bearer(spelled));
        expect({ canonical: spelled === token, status: answer.status }).toEqual({
          canonical: spelled === token,
          status: spelled === token ? 200 : 401,
        });
        if (spelled !== token) expectNoSecret(answer);
      }
    });

    it('answers /verify itself for a 17 KiB token with 401 token_too_large, not a 431', async () => {
      const verify = (token: string) =>
        get(`http://127.0.0.1:${verifierPort}/verify`, {
          headers: { authorization: `Bearer ${token}`, 'x-sg-policy': 'secret' },
        });
      expect((await verify(await tokenOfLength(15 * 1024))).status).toBe(204);
      const refused = await verify(await tokenOfLength(17 * 1024));
      expect(refused.status).toBe(401);
      expect(refused.headers.get('www-authenticate')).toContain(
        'error_description="token_too_large"',
      );
      expect(refused.headers.get('x-accel-expires')).toBe('0');
    });

    it('answers 503 with no secret while the verifier is down, 200 once it is back', async () => {
      const token = await requestToken('spa-demo', 'secrets:read');
      await stopChild(verifierProcess);
      const down = await get(`${site.url}/secret`, bearer(token));
      expect(down.status).toBe(503);
      expect(down.headers.get('retry-after')).toBe('5');
      expectNoSecret(down);
      await startVerifier();
      expect((await get(`${site.url}/secret`, bearer(token))).status).toBe(200);
    });
  },
);

function portOf(verifier: ContractVerifier): number {
  const address = verifier.server.address();
  if (address === null || typeof address === 'string') throw new Error('verifier is not listening');
  return address.port;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

async function waitForOk(url: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      const response = await fetch(url);
      await response.arrayBuffer();
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer 200 within 15 s`);
    await sleep(100);
  }
}

/** A GET through node:http, which (unlike fetch) leaves Content-Encoding and the raw body alone. */
async function rawGet(
  baseUrl: string,
  pathname: string,
  headers: Record<string, string>,
): Promise<{
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}> {
  const { request } = await import('node:http');
  return new Promise((resolve, reject) => {
    const req = request(`${baseUrl}${pathname}`, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

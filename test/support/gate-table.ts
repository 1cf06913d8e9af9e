// The assertion table of the gate (issue 3), written once and run against any running stack: the
// local processes from startStack() and the docker compose services alike.
import { generateKeyPair, SignJWT, UnsecuredJWT, decodeProtectedHeader } from 'jose';
import { expect, it } from 'vitest';
import type { ServiceName } from '../../stack/service-env.js';
import { demoSecrets, leakedSecrets, type SecretsFile } from './secrets.js';
import { startSteadyLoad, type LoadOutcome } from './steady-load.js';

/** What the table needs from a running stack. */
export interface GateTarget {
  readonly urls: { readonly hello: string; readonly secret: string; readonly issuer: string };
  readonly audience: string;
  mintToken(options?: {
    clientId?: string;
    scope?: string;
    claims?: Record<string, unknown>;
    expiresIn?: number;
  }): Promise<string>;
  rotateKey(): Promise<void>;
  stopService(name: ServiceName, signal?: NodeJS.Signals): Promise<void>;
  startService(name: ServiceName): Promise<void>;
  /** Replaces the secrets file NGINX serves in one atomic step (a rename beside it). */
  writeSecrets(secrets: SecretsFile): Promise<void>;
  /** Has NGINX reload its configuration (SIGHUP to the master), as `nginx -s reload` does. */
  reloadGate(): Promise<void>;
  /**
   * The values minted per user beside the `secret` set's static ones (docker compose serves the
   * demo's, as `npm start` does: stack/minted-demo.ts); none when absent.
   */
  readonly mintedValues?: readonly string[];
}

/**
 * The static values of a served set. Each of `minted` must be there too, a string with its expiry
 * in `expires_at` still ahead (else this throws); they are set aside, so the rest compares with the
 * secrets file.
 */
export function staticValues(body: string, minted: readonly string[] = []): unknown {
  const set = JSON.parse(body) as Record<string, unknown>;
  if (minted.length === 0) return set;
  const { expires_at: expiresAt, ...values } = set;
  const now = Date.now() / 1000;
  for (const name of minted) {
    const at = (expiresAt as Record<string, unknown> | undefined)?.[name];
    if (typeof values[name] !== 'string' || typeof at !== 'number' || at <= now)
      throw new Error(`the set lacks its minted "${name}" or its expiry`);
    delete values[name];
  }
  return values;
}

export interface GateAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: string;
}

/** GET with a bearer token; waits out a 429 (the per-IP limit on /secret) instead of failing. */
export async function call(
  url: string,
  token?: string,
  headers: Record<string, string> = {},
): Promise<GateAnswer> {
  for (let attempt = 0; ; attempt++) {
    const response = await fetch(url, {
      headers: token === undefined ? headers : { ...headers, authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(10_000),
    });
    const body = await response.text();
    if (response.status !== 429 || attempt >= 10)
      return { status: response.status, headers: response.headers, body };
    await new Promise((resolve) =>
      setTimeout(resolve, 1_000 * Number(response.headers.get('retry-after') ?? 1)),
    );
  }
}

/** A denial as the table expects it: the status, JSON, no secret anywhere in it. */
export function expectDenied(answer: GateAnswer, status: 401 | 403 | 404 | 503): void {
  expect({ status: answer.status, leaked: leakedSecrets(answer.body) }).toEqual({
    status,
    leaked: [],
  });
  expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
  expect(answer.headers.get('set-cookie')).toBeNull();
  if (status === 401)
    expect(answer.headers.get('www-authenticate')).toMatch(/^Bearer realm="secret-gate"/);
  if (status === 403)
    expect(answer.headers.get('www-authenticate')).toMatch(/error="insufficient_scope"/);
  if (status === 503) expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
}

/** Polls until the gate gives `status` (a restarted process needs a moment to be reached). */
/** A rotation not served by then is broken, not slow (the watcher polls every second). */
const ROTATION_DEADLINE_MS = 15_000;

async function eventually(read: () => Promise<GateAnswer>, status: number): Promise<GateAnswer> {
  let answer = await read();
  for (let i = 0; i < 50 && answer.status !== status; i++) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    answer = await read();
  }
  return answer;
}

/** The demo sets with every value marked, so an answer tells which generation it came from. */
function rotatedSecrets(): SecretsFile {
  const mark = (set: Record<string, string>) =>
    Object.fromEntries(Object.entries(set).map(([name, value]) => [name, `${value}-rotated`]));
  return {
    default: mark(demoSecrets.default),
    clients: Object.fromEntries(
      Object.entries(demoSecrets.clients).map(([client, set]) => [client, mark(set)]),
    ),
  };
}

/** Outcomes that are not a 200 carrying one of the `expected` sets whole (and `minted`). */
function failures(
  outcomes: readonly LoadOutcome[],
  minted: readonly string[] | undefined,
  ...expected: Record<string, string>[]
) {
  const wanted = new Set(expected.map((set) => JSON.stringify(set)));
  return outcomes.filter((o) => {
    if (o.status !== 200) return true;
    try {
      return !wanted.has(JSON.stringify(staticValues(o.body, minted)));
    } catch {
      return true;
    }
  });
}

/** Tokens that must all be refused with 401, built against the target's real issuer and keys. */
async function refusedTokens(target: GateTarget): Promise<Record<string, string>> {
  const now = Math.floor(Date.now() / 1000);
  const valid = await target.mintToken();
  const claims = {
    iss: target.urls.issuer,
    aud: target.audience,
    sub: 'spa-demo',
    client_id: 'spa-demo',
    azp: 'spa-demo',
    scope: 'secrets:read',
  };
  // A key the IdP never published, under the kid of one it did: the signature must not verify.
  const stranger = await generateKeyPair('RS256');
  const kid = decodeProtectedHeader(valid).kid ?? '';
  return {
    garbage: 'not-a-jwt',
    'three garbage segments': 'aaa.bbb.ccc',
    expired: await target.mintToken({ expiresIn: -600, claims: { iat: now - 4200 } }),
    'wrongly signed': await new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid })
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(stranger.privateKey),
    'wrong audience': await target.mintToken({ claims: { aud: 'another-api' } }),
    'wrong issuer': await target.mintToken({ claims: { iss: 'http://127.0.0.1:9/not-our-idp' } }),
    'alg none': new UnsecuredJWT(claims).setIssuedAt().setExpirationTime('5m').encode(),
    'HS256 with a guessable secret': await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', kid })
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode('secret-gate-api')),
    'tampered payload': tamper(valid),
  };
}

/** Swaps the payload of a valid token for one with more scopes, keeping the signature. */
function tamper(token: string): string {
  const [header, payload, signature] = token.split('.') as [string, string, string];
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<
    string,
    unknown
  >;
  claims.client_id = 'partner-app';
  return `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
}

/**
 * Registers the table as `it` blocks in the caller's `describe`. The last rows stop and start
 * services, so they run in order after the read-only rows.
 */
export function defineGateTable(target: () => GateTarget): void {
  it('answers /hello with 200 and no auth', async () => {
    const answer = await call(target().urls.hello);
    expect(answer.status).toBe(200);
  });

  it('refuses /secret without a token: 401, WWW-Authenticate without error, no secret', async () => {
    const answer = await call(target().urls.secret);
    expectDenied(answer, 401);
  });

  it('refuses every malformed, expired, forged or foreign token with 401 and no secret', async () => {
    const tokens = await refusedTokens(target());
    const results: Record<string, number> = {};
    for (const [name, token] of Object.entries(tokens)) {
      const answer = await call(target().urls.secret, token);
      expectDenied(answer, 401);
      expect(answer.headers.get('www-authenticate'), name).toMatch(/error="invalid_token"/);
      results[name] = answer.status;
    }
    expect(Object.keys(results)).toHaveLength(Object.keys(tokens).length);
  });

  it('gives a valid spa-demo token the spa-demo secret set, not cacheable', async () => {
    const answer = await call(
      target().urls.secret,
      await target().mintToken({ clientId: 'spa-demo' }),
    );
    expect(answer.status).toBe(200);
    expect(staticValues(answer.body, target().mintedValues)).toEqual(
      demoSecrets.clients['spa-demo'],
    );
    expect(answer.headers.get('cache-control')).toBe('no-store');
  });

  it('gives two spa-demo users the spa-demo set, each their own minted values where the stack mints them', async () => {
    const minted = target().mintedValues ?? [];
    const [ana, ben] = await Promise.all(
      ['ana', 'ben'].map(async (sub) =>
        call(target().urls.secret, await target().mintToken({ claims: { sub } })),
      ),
    );
    for (const answer of [ana!, ben!]) {
      expect(answer.status).toBe(200);
      expect(staticValues(answer.body, minted)).toEqual(demoSecrets.clients['spa-demo']);
    }
    const [anaSet, benSet] = [ana!, ben!].map((a) => JSON.parse(a.body) as Record<string, unknown>);
    for (const name of minted) expect(anaSet![name], name).not.toEqual(benSet![name]);
  });

  it('gives another client id its own set', async () => {
    const answer = await call(
      target().urls.secret,
      await target().mintToken({ clientId: 'partner-app' }),
    );
    expect(answer.status).toBe(200);
    expect(staticValues(answer.body, target().mintedValues)).toEqual(
      demoSecrets.clients['partner-app'],
    );
  });

  it('refuses a valid token without the secrets:read scope with 403 insufficient_scope', async () => {
    const answer = await call(target().urls.secret, await target().mintToken({ scope: 'profile' }));
    expectDenied(answer, 403);
  });

  it('serves a request carrying 6 KiB of cookies (headers are stripped before the verifier)', async () => {
    const cookie = Array.from({ length: 6 }, (_, i) => `c${i}=${'x'.repeat(1020)}`).join('; ');
    expect(cookie.length).toBeGreaterThanOrEqual(6 * 1024);
    const answer = await call(target().urls.secret, await target().mintToken(), { cookie });
    expect(answer.status).toBe(200);
    expect(staticValues(answer.body, target().mintedValues)).toEqual(
      demoSecrets.clients['spa-demo'],
    );
  });

  it('passes tokens signed by a freshly rotated key', async () => {
    await target().rotateKey();
    const answer = await eventually(
      async () => call(target().urls.secret, await target().mintToken()),
      200,
    );
    expect(answer.status).toBe(200);
  });

  /** A spa-demo answer, counted as a 200 only once it carries the set `secrets` names. */
  async function servedSet(secrets: SecretsFile): Promise<GateAnswer> {
    const answer = await call(target().urls.secret, await target().mintToken());
    const wanted = JSON.stringify(secrets.clients['spa-demo']);
    let served: string;
    try {
      served = JSON.stringify(staticValues(answer.body, target().mintedValues));
    } catch {
      served = '';
    }
    return answer.status === 200 && served === wanted ? answer : { ...answer, status: 0 };
  }

  /**
   * Waits until `secrets` is served, then for every worker to have revalidated its open_file_cache
   * entry (1 s each) and for old workers to be gone, so the next row meets one set only.
   */
  async function settledOn(secrets: SecretsFile): Promise<void> {
    const restored = await eventually(async () => servedSet(secrets), 200);
    expect(staticValues(restored.body, target().mintedValues)).toEqual(secrets.clients['spa-demo']);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
  }

  it('reloads NGINX under steady load without failing a request', async () => {
    const load = startSteadyLoad(target().urls.secret, await target().mintToken());
    await new Promise((resolve) => setTimeout(resolve, 300));
    await target().reloadGate();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await target().reloadGate();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const outcomes = await load.stop();
    expect(outcomes.length).toBeGreaterThan(20);
    expect(
      failures(outcomes, target().mintedValues, demoSecrets.clients['spa-demo']!).slice(0, 3),
    ).toEqual([]);
  });

  it('rotates the secrets (new file, then a reload) under steady load with 0 failures, then serves only the new set', async () => {
    const rotated = rotatedSecrets();
    const load = startSteadyLoad(target().urls.secret, await target().mintToken());
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      await target().writeSecrets(rotated);
      await target().reloadGate();
      const fresh = await eventually(async () => servedSet(rotated), 200);
      expect(staticValues(fresh.body, target().mintedValues)).toEqual(rotated.clients['spa-demo']);
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      const outcomes = await load.stop();
      expect(outcomes.length).toBeGreaterThan(20);
      const old = demoSecrets.clients['spa-demo']!;
      expect(
        failures(outcomes, target().mintedValues, old, rotated.clients['spa-demo']!).slice(0, 3),
      ).toEqual([]);
      // Once every worker's open_file_cache entry has been revalidated (open_file_cache_valid, 1 s:
      // each worker keeps its own, so for that second workers may differ) and the old workers have
      // finished (half a second), only the new set is served.
      const firstNew = outcomes.find((o) => o.body.includes('-rotated'));
      expect(firstNew).toBeDefined();
      const settled = outcomes.filter((o) => o.sentAt > firstNew!.sentAt + 1_500);
      expect(settled.length).toBeGreaterThan(0);
      expect(
        failures(settled, target().mintedValues, rotated.clients['spa-demo']!).slice(0, 3),
      ).toEqual([]);
    } finally {
      await load.stop();
      await target().writeSecrets(demoSecrets);
      await target().reloadGate();
    }
    await settledOn(demoSecrets);
  });

  // How soon each generation shows is a figure of `npm run bench:rotation`, not a bound here: the
  // deadline only tells a watcher that never publishes from a slow machine.
  it('serves 20 rotations of the secrets file without a reload, each in time, with 0 failures under steady load', async () => {
    const generation = (n: number): SecretsFile => {
      const mark = (set: Record<string, string>) =>
        Object.fromEntries(Object.entries(set).map(([name, value]) => [name, `${value}-g${n}`]));
      return {
        default: mark(demoSecrets.default),
        clients: Object.fromEntries(
          Object.entries(demoSecrets.clients).map(([client, set]) => [client, mark(set)]),
        ),
      };
    };
    const token = await target().mintToken();
    const load = startSteadyLoad(target().urls.secret, token);
    const generations = Array.from({ length: 21 }, (_, n) => generation(n));
    try {
      for (let n = 1; n < generations.length; n++) {
        const next = generations[n]!;
        await target().writeSecrets(next);
        const started = performance.now();
        let served = await servedSet(next);
        while (served.status !== 200 && performance.now() - started < ROTATION_DEADLINE_MS) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          served = await servedSet(next);
        }
        expect(served.status, `generation ${n} served`).toBe(200);
      }
      const outcomes = await load.stop();
      expect(outcomes.length).toBeGreaterThan(20);
      const sets = generations.map((g) => g.clients['spa-demo']!);
      expect(
        failures(outcomes, target().mintedValues, demoSecrets.clients['spa-demo']!, ...sets).slice(
          0,
          3,
        ),
      ).toEqual([]);
    } finally {
      await load.stop();
      await target().writeSecrets(demoSecrets);
    }
    await settledOn(demoSecrets);
  });

  it('answers 503 with Retry-After and no secret while the verifier is down, 200 once it is back', async () => {
    const token = await target().mintToken();
    await target().stopService('verifier', 'SIGKILL');
    expectDenied(await call(target().urls.secret, token), 503);
    await target().startService('verifier');
    const answer = await eventually(() => call(target().urls.secret, token), 200);
    expect(answer.status).toBe(200);
  });

  it('keeps passing valid tokens while the IdP is down (keys are cached)', async () => {
    const token = await target().mintToken({ clientId: 'partner-app' });
    await target().stopService('idp');
    try {
      const answer = await call(target().urls.secret, token);
      expect(answer.status).toBe(200);
      expect(staticValues(answer.body, target().mintedValues)).toEqual(
        demoSecrets.clients['partner-app'],
      );
    } finally {
      await target().startService('idp');
    }
  });
}

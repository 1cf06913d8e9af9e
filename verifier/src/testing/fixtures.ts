// Test fixtures: fixed signing keys (keys.json, generated once for tests only), token minting, and
// a small JWKS server on loopback whose keys, availability and answers a test controls.
import { createPrivateKey, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { Writable } from 'node:stream';
import { base64url, importJWK, SignJWT, type JWK } from 'jose';
import type { JwtIssuer } from '../config/model.js';
import { ALWAYS_REFUSED } from '../config/presets.js';
import { createLogger, type Logger } from '../log.js';

export type KeyName = 'rsaA' | 'rsaB' | 'ec' | 'ecB' | 'attacker';

export const PRIVATE_JWKS = JSON.parse(
  readFileSync(new URL('./keys.json', import.meta.url), 'utf8'),
) as Record<KeyName, JWK & { kid: string; alg: string }>;

export const ISSUER = 'https://idp.test';
export const AUDIENCE = 'secret-gate-api';

/** The settings of the default `rfc9068` preset row as the issuer schema yields them. */
export const RFC9068_RULES = {
  preset: 'rfc9068',
  scopeClaims: ['scope', 'scp'],
  audienceClaim: 'aud',
  requireClaims: [],
  refuseClaims: [...ALWAYS_REFUSED],
  acrClaim: 'acr',
  amrClaim: 'amr',
  authTimeClaim: 'auth_time',
} as const satisfies Partial<JwtIssuer>;

export function publicJwk(name: KeyName): JWK {
  const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...pub } = PRIVATE_JWKS[name];
  return { ...pub, use: 'sig' };
}

export interface MintOptions {
  readonly key?: KeyName;
  /** Claims merged over the defaults; `undefined` values remove a default claim. */
  readonly claims?: Record<string, unknown>;
  /** Header parameters merged over `{ alg, kid, typ: 'at+jwt' }`. */
  readonly header?: Record<string, unknown>;
  /** Seconds since the epoch used for iat/exp defaults. */
  readonly now?: number;
}

/** Mints a signed access token like the dev IdP's: RS256, `at+jwt`, 5 minutes. */
export async function mintToken(options: MintOptions = {}): Promise<string> {
  const name = options.key ?? 'rsaA';
  const jwk = PRIVATE_JWKS[name];
  const now = options.now ?? Math.floor(Date.now() / 1000);
  const claims: Record<string, unknown> = {
    iss: ISSUER,
    aud: AUDIENCE,
    sub: 'user-1',
    azp: 'spa-demo',
    scope: 'openid secrets:read',
    iat: now,
    exp: now + 300,
    ...options.claims,
  };
  for (const [claim, value] of Object.entries(claims))
    if (value === undefined) delete claims[claim];
  const key = await importJWK(jwk, jwk.alg);
  return new SignJWT(claims)
    .setProtectedHeader({ alg: jwk.alg, kid: jwk.kid, typ: 'at+jwt', ...options.header })
    .sign(key);
}

/**
 * Signs any header with RS256 by hand, for tokens jose refuses to produce (e.g. an unknown `crit`).
 */
export function signRs256(
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  name: KeyName = 'rsaA',
): string {
  const input = `${base64url.encode(JSON.stringify(header))}.${base64url.encode(JSON.stringify(payload))}`;
  const key = createPrivateKey({ key: PRIVATE_JWKS[name] as never, format: 'jwk' });
  return `${input}.${base64url.encode(sign('sha256', Buffer.from(input), key))}`;
}

export interface JwksServer {
  readonly url: string;
  /** Number of JWKS requests answered (or refused) so far. */
  readonly hits: number;
  setKeys(names: readonly KeyName[]): void;
  /** While down, every request gets a 503. */
  setDown(down: boolean): void;
  /** Answers 302 to `location` instead of the key set. */
  setRedirect(location: string | undefined): void;
  setCacheControl(value: string | undefined): void;
  close(): Promise<void>;
}

export async function startJwksServer(
  initial: readonly KeyName[] = ['rsaA', 'ec'],
): Promise<JwksServer> {
  let keys = initial;
  let down = false;
  let redirect: string | undefined;
  let cacheControl: string | undefined;
  let hits = 0;
  const server: Server = createServer((_req, res) => {
    hits++;
    if (down) return void res.writeHead(503).end('down');
    if (redirect) return void res.writeHead(302, { location: redirect }).end();
    res.writeHead(200, {
      'content-type': 'application/json',
      ...(cacheControl ? { 'cache-control': cacheControl } : {}),
    });
    res.end(JSON.stringify({ keys: keys.map(publicJwk) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/jwks`,
    get hits() {
      return hits;
    },
    setKeys: (names) => void (keys = names),
    setDown: (value) => void (down = value),
    setRedirect: (location) => void (redirect = location),
    setCacheControl: (value) => void (cacheControl = value),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A logger whose JSON lines are kept in `lines` (synchronously), for assertions on log content. */
export function captureLogger(level = 'info'): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((line) => line.length > 0),
      );
      done();
    },
  });
  return { logger: createLogger(level, sink), lines };
}

/** A clock the test moves by hand; milliseconds since the epoch, like Date.now. */
export function manualClock(start = Date.UTC(2026, 0, 1, 12)): {
  now: () => number;
  advance: (seconds: number) => void;
  seconds: () => number;
} {
  let at = start;
  return {
    now: () => at,
    advance: (seconds) => void (at += seconds * 1000),
    seconds: () => Math.floor(at / 1000),
  };
}

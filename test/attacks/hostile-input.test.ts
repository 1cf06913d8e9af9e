// Hostile input against the real gate (NGINX + verifier + dev IdP as child processes): the attack
// token table, duplicate and misplaced credentials, path and method tricks. Every answer is the
// expected refusal with no secret and no 500, and at the end nothing leaked into bodies or logs.
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../stack/ports.js';
import { startAttackStack, type Answer, type AttackStack } from './attack-stack.js';
import { buildAttackTokens, createAttackerKey, type AttackCase } from './tokens.js';

let gate: AttackStack;
let attackerServer: Server;
let attackerHits = 0;
let valid: string;
let cases: AttackCase[];
const attacker = createAttackerKey();

const hasSecret = (answer: Answer) =>
  gate.canaries.values.some((value) => answer.body.includes(value));
const spaDemoKey = () => gate.canaries.sets['spa-demo']!['x-api-key']!;

beforeAll(async () => {
  // The attacker's own JWKS; `jku`/`x5u` rows point here and the gate must never come asking.
  const port = await freePort();
  attackerServer = createServer((_req, res) => {
    attackerHits += 1;
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ keys: [attacker.jwk] }));
  });
  await new Promise<void>((resolve) => attackerServer.listen(port, '127.0.0.1', resolve));

  gate = await startAttackStack();
  valid = await gate.stack.mintToken();
  const jwks = (await (await fetch(`${gate.stack.urls.issuer}/jwks`)).json()) as { keys: [] };
  cases = await buildAttackTokens(
    {
      issuer: gate.stack.urls.issuer,
      audience: 'secret-gate-api',
      jwks,
      valid,
      mint: (change) => gate.stack.mintToken({ ...change }),
      attackerJwksUrl: `http://127.0.0.1:${port}/jwks.json`,
      strictTyp: true,
    },
    attacker,
  );
}, 120_000);

afterAll(async () => {
  await gate?.stop();
  await new Promise((resolve) => attackerServer?.close(resolve));
});

describe('attack tokens at /secret', () => {
  it('the table holds at least 40 hostile tokens, each with a unique name', () => {
    expect(cases.filter((c) => c.outcome === 'refused').length).toBeGreaterThanOrEqual(40);
    expect(new Set(cases.map((c) => c.name)).size).toBe(cases.length);
  });

  it('answers every row as the table says: refusals with no secret, accepted forms with the caller set', async () => {
    const wrong: string[] = [];
    for (const row of cases) {
      const answer = await gate.send({
        path: '/secret',
        headers: { authorization: row.authorization },
        label: `attack: ${row.name}`,
        earned: row.outcome === 'accepted',
      });
      const problems: string[] = [];
      if (!row.statuses.includes(answer.status))
        problems.push(`status ${answer.status}, expected ${row.statuses.join('/')}`);
      if (row.outcome === 'refused' && hasSecret(answer)) problems.push('body holds a secret');
      if (
        row.outcome === 'refused' &&
        answer.status === 401 &&
        !answer.headers['www-authenticate']
      ) {
        problems.push('401 without WWW-Authenticate');
      }
      if (row.outcome === 'accepted' && !answer.body.includes(spaDemoKey()))
        problems.push('no spa-demo secret in the body');
      if (problems.length > 0) wrong.push(`${row.name}: ${problems.join('; ')}`);
    }
    expect(wrong.join('\n')).toBe('');
  });

  it('never fetches a key from a "jku" or "x5u" URL', () => {
    expect(attackerHits).toBe(0);
  });
});

describe('misplaced and duplicated credentials', () => {
  it.each([
    ['valid then garbage', () => [`Bearer ${valid}`, 'Bearer garbage.garbage.garbage']],
    ['garbage then valid', () => ['Bearer garbage.garbage.garbage', `Bearer ${valid}`]],
    ['the valid token twice', () => [`Bearer ${valid}`, `Bearer ${valid}`]],
    ['Basic then Bearer', () => ['Basic dXNlcjpwYXNz', `Bearer ${valid}`]],
  ])('refuses two Authorization headers (%s) with 400 and no secret', async (label, values) => {
    const answer = await gate.send({
      path: '/secret',
      headers: { authorization: values() },
      label: `two headers: ${label}`,
    });
    expect(answer.status).toBe(400);
    expect(hasSecret(answer)).toBe(false);
  });

  it('refuses a valid token in the query string: 400 before anything can log it, no secret', async () => {
    const answer = await gate.send({
      path: `/secret?access_token=${valid}`,
      label: 'token in query',
    });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toEqual({ error: 'bad_request' });
    expect(hasSecret(answer)).toBe(false);
  });

  it('keeps a query-string token out of every log line', () => {
    // The request above put the token in the URL; NGINX passes the URL on as X-Original-URI.
    const lines = gate
      .readLogs()
      .flatMap((log) =>
        log.text.split('\n').map((line, i) => ({ at: `${log.name}:${i + 1}`, line })),
      );
    expect(lines.filter(({ line }) => line.includes(valid)).map(({ at }) => at)).toEqual([]);
  });

  it('does not let a query-string token rescue a garbage header', async () => {
    const answer = await gate.send({
      path: `/secret?access_token=${valid}`,
      headers: { authorization: 'Bearer not.a.token' },
      label: 'token in query, garbage header',
    });
    expect(answer.status).toBe(400);
    expect(hasSecret(answer)).toBe(false);
  });

  it('ignores a token sent as a cookie or a form-like header', async () => {
    const answer = await gate.send({
      path: '/secret',
      headers: {
        cookie: `access_token=${valid}`,
        'x-access-token': valid,
        'x-forwarded-authorization': `Bearer ${valid}`,
      },
      label: 'token in cookie and custom headers',
    });
    expect(answer.status).toBe(401);
    expect(hasSecret(answer)).toBe(false);
  });

  it('does not trust a client-sent X-Original-URI or X-Original-Method', async () => {
    const answer = await gate.send({
      path: '/secret',
      headers: {
        'x-original-uri': '/hello',
        'x-original-method': 'OPTIONS',
        authorization: 'Bearer x.y.z',
      },
      label: 'spoofed X-Original-*',
    });
    expect(answer.status).toBe(401);
    expect(hasSecret(answer)).toBe(false);
  });
});

// Each trick is either gated (401 without a token, the secret with one) or refused outright; it
// never hands out a secret without a valid token and never answers 500.
const TRICKS: ReadonlyArray<{ method: string; path: string; verdict: 'gated' | 'refused' }> = [
  // A query string on /secret is refused (400) before anything can log it.
  { method: 'GET', path: '/secret?x=1', verdict: 'refused' },
  { method: 'GET', path: '/%73ecret?x=1', verdict: 'refused' },
  { method: 'GET', path: '//secret', verdict: 'gated' },
  { method: 'GET', path: '/./secret', verdict: 'gated' },
  { method: 'GET', path: '/hello/../secret', verdict: 'gated' },
  { method: 'GET', path: '/%73ecret', verdict: 'gated' },
  { method: 'GET', path: '/secret/', verdict: 'refused' },
  { method: 'GET', path: '/secret%2f', verdict: 'refused' },
  { method: 'GET', path: '/secret%2F..%2Fsecret', verdict: 'gated' },
  { method: 'GET', path: '/SECRET', verdict: 'refused' },
  { method: 'GET', path: '/secret;a', verdict: 'refused' },
  { method: 'GET', path: '/secret%00', verdict: 'refused' },
  { method: 'GET', path: '/_verify', verdict: 'refused' },
  { method: 'HEAD', path: '/secret', verdict: 'refused' },
  { method: 'POST', path: '/secret', verdict: 'refused' },
  { method: 'OPTIONS', path: '/secret', verdict: 'refused' },
  { method: 'PUT', path: '/secret', verdict: 'refused' },
  { method: 'TRACE', path: '/secret', verdict: 'refused' },
];

describe('path and method tricks against NGINX', () => {
  it.each(TRICKS)('$method $path is $verdict without a valid token', async ({ method, path }) => {
    for (const authorization of [undefined, 'Bearer garbage.garbage.garbage']) {
      const answer = await gate.send({
        method,
        path,
        headers: authorization ? { authorization } : {},
        label: `trick ${method} ${path} ${authorization ? 'garbage token' : 'no token'}`,
      });
      expect(answer.status).toBeLessThan(500);
      expect(answer.status).not.toBe(204);
      expect(hasSecret(answer)).toBe(false);
    }
  });

  it.each(TRICKS)(
    '$method $path with a valid token: the secret only where gated',
    async ({ method, path, verdict }) => {
      const answer = await gate.send({
        method,
        path,
        headers: { authorization: `Bearer ${valid}` },
        label: `trick ${method} ${path} valid token`,
        earned: verdict === 'gated',
      });
      expect(answer.status).toBeLessThan(500);
      if (verdict === 'gated') {
        expect(answer.status).toBe(200);
        expect(answer.body).toContain(spaDemoKey());
      } else {
        expect(hasSecret(answer)).toBe(false);
      }
    },
  );

  it('answers a gated form without a token with 401', async () => {
    for (const { method, path } of TRICKS.filter((t) => t.verdict === 'gated')) {
      const answer = await gate.send({ method, path, label: `gated ${path} no token` });
      expect(answer.status, `${method} ${path}`).toBe(401);
    }
  });
});

describe('never leaked', () => {
  it('no secret in any answer a valid token did not earn, no token in any log line, no 500', () => {
    const logs = gate.readLogs();
    expect(gate.watch.responseCount).toBeGreaterThan(100);
    expect(logs.some((log) => log.name.includes('access') && log.text.length > 0)).toBe(true);
    expect(gate.watch.scan(logs)).toEqual([]);
    expect(gate.serverErrors).toEqual([]);
  });
});

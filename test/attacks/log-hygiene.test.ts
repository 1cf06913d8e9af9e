// No token and no client query string in any NGINX log line, the error log included. NGINX's
// error log quotes the request line on limit_req, upstream and auth errors, so the gate must
// refuse such requests before anything can log them. A token hidden in the path itself (an
// encoded `?`, a segment that `..` removes again) or in the User-Agent reaches neither the access
// log nor the verifier's. Every log file is scanned at the end.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAttackStack, type AttackStack } from './attack-stack.js';

let gate: AttackStack;
let valid: string;

beforeAll(async () => {
  gate = await startAttackStack({
    env: { verifier: { VERIFIER_VERIFY_RATE: '1r/m', VERIFIER_VERIFY_BURST: '1' } },
  });
  valid = await gate.stack.mintToken();
}, 120_000);

afterAll(async () => {
  await gate?.stop();
});

const withQueryToken = (
  label: string,
  extra: { method?: string; headers?: Record<string, string> } = {},
) =>
  gate.send({
    path: `/secret?access_token=${valid}`,
    method: extra.method,
    headers: { authorization: `Bearer ${valid}`, ...extra.headers },
    label,
  });

describe('a token in the query string never reaches a log', () => {
  it('is refused with 400 while everything works', async () => {
    expect((await withQueryToken('query token, gate up')).status).toBe(400);
  });

  it('is refused with 400 while the verifier is down (upstream errors log their request line)', async () => {
    await gate.stack.stopService('verifier');
    try {
      expect((await withQueryToken('query token, verifier down')).status).toBe(400);
      const down = await gate.send({
        path: '/secret',
        headers: { authorization: `Bearer ${await gate.stack.mintToken()}` },
        label: 'verifier down',
      });
      expect(down.status).toBe(503);
    } finally {
      await gate.stack.startService('verifier');
    }
  });

  it('is refused with 400 when a large body comes with it (the body-size check logs its request line)', async () => {
    const answer = await withQueryToken('query token, large body', {
      headers: { 'content-length': '100000' },
    });
    expect([400, 413]).toContain(answer.status);
    const spa = await gate.send({
      path: `/?code=${valid}`,
      method: 'POST',
      headers: { 'content-length': '100000' },
      label: 'SPA path with a code and a large body',
    });
    expect(spa.status).toBe(413);
  });

  it('is refused with 400 when the verifier-call limit is reached (limit_req logs its request line)', async () => {
    for (let i = 0; i < 3; i++)
      await gate.send({
        path: '/secret',
        headers: { authorization: `Bearer garbage.x${i}.y` },
        label: 'fill the limit',
      });
    expect((await withQueryToken('query token, limited')).status).toBe(400);
  });

  it('leaves no token and no client query string in any log file, error log included', () => {
    const logs = gate.readLogs();
    expect(logs.map((log) => log.name)).toEqual(
      expect.arrayContaining(['nginx/access.log', 'nginx/error.log']),
    );
    expect(logs.find((log) => log.name === 'nginx/error.log')!.text.length).toBeGreaterThan(0);
    expect(gate.watch.scan(logs)).toEqual([]);
  });
});

describe('a token hidden in the path or a header never reaches a log', () => {
  // A gate of its own, with the suite-wide limits: every one of these reaches the verifier.
  let gate: AttackStack;
  let valid: string;
  beforeAll(async () => {
    gate = await startAttackStack();
    valid = await gate.stack.mintToken();
    // Start counting after a marked request of our own: the start-up probes' lines come before it.
    await gate.send({ path: '/hello', headers: { 'user-agent': 'log-mark' }, label: 'log mark' });
    for (let tries = 0; tries < 100; tries++) {
      const marked = accessLog().findIndex((line) => line.user_agent === 'log-mark');
      if (marked >= 0) {
        seenLines = marked + 1;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }, 120_000);
  afterAll(async () => {
    await gate?.stop();
  });
  /** An opaque token: no JWT shape for the scan to spot, so only its exact value can. */
  const opaque = () => randomBytes(30).toString('base64url');
  const accessLog = () =>
    gate
      .readLogs()
      .find((log) => log.name === 'nginx/access.log')!
      .text.split('\n')
      .filter((line) => line.length > 0)
      .map((line) => JSON.parse(line) as { path: string; user_agent: string });

  /** The access-log line of the request just answered (NGINX writes it after the answer). */
  let seenLines = 0;
  const nextAccessLine = async () => {
    const before = Date.now();
    for (;;) {
      const lines = accessLog();
      if (lines.length > seenLines || Date.now() - before > 2000) {
        seenLines = lines.length;
        return lines.at(-1)!;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  /** The `uri` of the verifier's latest "denied" line (its output may lag a little). */
  const lastDenialPath = async (): Promise<unknown> => {
    const before = Date.now();
    for (;;) {
      const lines = gate
        .readLogs()
        .find((log) => log.name === 'verifier')!
        .text.split('\n')
        .filter((line) => line.includes('"denied"'));
      const last = lines.at(-1);
      if ((last !== undefined && lines.length > denials) || Date.now() - before > 2000) {
        denials = lines.length;
        return last === undefined ? undefined : (JSON.parse(last) as { uri: unknown }).uri;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  let denials = 0;

  it.each([
    ['an encoded query', (token: string) => `/secret%3Faccess_token=${token}`, '/secret[cut]'],
    [
      'an encoded query, lower case',
      (token: string) => `/secret%3faccess_token=${token}`,
      '/secret[cut]',
    ],
    ['an encoded fragment', (token: string) => `/%23access_token=${token}`, '/[cut]'],
    ['a path segment that .. removes again', (token: string) => `/${token}/../secret`, '/[cut]'],
    ['a path segment of the SPA', (token: string) => `/callback/${token}`, '/callback/[cut]'],
  ])('keeps %s out of the access log and the verifier log', async (_title, pathOf, logged) => {
    for (const token of [opaque(), valid]) {
      gate.watch.recordToken(token);
      const answer = await gate.send({
        path: pathOf(token),
        headers: { authorization: 'Bearer not-a-valid-token' },
        label: `hidden token: ${logged}`,
      });
      expect([200, 400, 401]).toContain(answer.status);
      expect((await nextAccessLine()).path).toBe(logged);
      if (answer.status === 401) expect(await lastDenialPath()).toBe(logged);
    }
  });

  it('keeps a token in the User-Agent out of the access log', async () => {
    const token = opaque();
    gate.watch.recordToken(token);
    await gate.send({
      path: '/hello',
      headers: { 'user-agent': `curl/8.0 ${token}` },
      label: 'token in the User-Agent',
    });
    expect((await nextAccessLine()).user_agent).toBe('curl/8.0 [cut]');
  });

  it('logs ordinary paths and browsers unchanged', async () => {
    const agent =
      'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
    await gate.send({
      path: '/assets/index-3f2a9c.js',
      headers: { 'user-agent': agent },
      label: 'asset',
    });
    expect(await nextAccessLine()).toMatchObject({
      path: '/assets/index-3f2a9c.js',
      user_agent: agent,
    });
  });

  it('leaves none of them in any log file', () => {
    expect(gate.watch.scan(gate.readLogs())).toEqual([]);
  });
});

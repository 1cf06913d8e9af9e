// No token and no client query string in any NGINX log line, the error log included. NGINX's
// error log quotes the request line on limit_req, upstream and auth errors, so the gate must
// refuse such requests before anything can log them. Every log file is scanned at the end.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAttackStack, type AttackStack } from './attack-stack.js';

let gate: AttackStack;
let valid: string;

beforeAll(async () => {
  gate = await startAttackStack({
    env: { nginx: { SG_VERIFY_RATE: '1r/m', SG_VERIFY_BURST: '1' } },
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

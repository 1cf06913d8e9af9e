// An IPv6 client holds a whole /64 and can send every request from another address in it: the
// /secret rate limit and the verifier's per-client call limit must count it as one client. The
// real NGINX listens on [::1] and takes each request's client address from X-Forwarded-For
// (real_ip from ::1), so the addresses are parsed and printed by NGINX itself, every compressed
// shape included. The /secret limit runs without a verifier (an allowed request fails closed with
// 503, a limited one gets 429); the verifier's limit is checked by the key NGINX sends it
// (X-SG-Client), recorded by a stand-in.
import { createServer, type Server } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalNginx, type LocalNginx } from '../../stack/nginx/local-nginx.js';
import { localNginxEnv } from '../../stack/nginx/render.js';
import { freePort } from '../../stack/ports.js';

/** Each group is one client: the forms of one /64 (or one IPv4 address); groups are distinct. */
const CLIENTS: ReadonlyArray<readonly [string, readonly string[]]> = [
  [
    '2001:db8:1:2::/64',
    ['2001:db8:1:2::1', '2001:db8:1:2:aaaa:bbbb:cccc:dddd', '2001:0db8:0001:0002:0:0:0:7'],
  ],
  ['its neighbour 2001:db8:1:3::/64', ['2001:db8:1:3::1', '2001:db8:1:3:ffff::1']],
  ['2001:db8::/64 (zeros inside it)', ['2001:db8::1', '2001:db8::1:2:3:4', '2001:db8:0:0:1:0:0:1']],
  ['2001:db8:0:1::/64', ['2001:db8:0:1::5', '2001:db8:0:1:2:3:4:5', '2001:db8:0:1:ffff::']],
  ['2001::/64', ['2001::1', '2001:0:0:0:1:2:3:4', '2001::ffff:0:0:1']],
  ['2001:0:0:5::/64', ['2001:0:0:5:1:2:3:4', '2001::5:0:0:0:1']],
  ['0:0:0:5::/64', ['::5:6:7:8:9', '0:0:0:5::1', '0:0:0:5:ffff:ffff:ffff:ffff']],
  ['::/64', ['::2', '::1:2:3:4']],
  ['::ffff:203.0.113.7 (IPv4-mapped: whole)', ['::ffff:203.0.113.7']],
  ['::ffff:203.0.113.8', ['::ffff:203.0.113.8']],
  ['203.0.113.7', ['203.0.113.7']],
  ['203.0.113.8', ['203.0.113.8']],
];
const BURST = 2;

async function startGate(verifierPort?: number): Promise<{ nginx: LocalNginx; dir: string }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'sg-ipv6-limits-'));
  const port = await freePort();
  const env = {
    ...localNginxEnv({
      prefix: dir,
      listen: `[::1]:${port}`,
      // Without a stand-in nothing listens there: an allowed request gets 503.
      verifierAddr: `127.0.0.1:${verifierPort ?? (await freePort())}`,
      memoryDir: path.join(dir, 'memory'),
      externalOrigin: 'http://gate.test',
      ...(verifierPort === undefined
        ? { secretRate: '1r/m', secretBurst: BURST }
        : { secretRate: '100000r/s', secretBurst: 100000 }),
      workerProcesses: 1,
    }),
    SG_REAL_IP_FROM: '::1/128',
  };
  return { nginx: await startLocalNginx({ prefix: dir, env }), dir };
}

let sent = 0;
async function ask(gate: { nginx: LocalNginx }, address: string): Promise<number> {
  sent += 1;
  const answer = await fetch(`${gate.nginx.baseUrl}/secret`, {
    headers: { authorization: `Bearer opaque-${sent}`, 'x-forwarded-for': address },
  });
  await answer.arrayBuffer();
  return answer.status;
}

describe('the /secret rate limit', () => {
  let gate: { nginx: LocalNginx; dir: string };
  beforeAll(async () => {
    gate = await startGate();
  }, 30_000);
  afterAll(async () => {
    await gate?.nginx.stop();
    if (gate) await rm(gate.dir, { recursive: true, force: true });
  });

  it('listens on IPv6 loopback', () => {
    expect(gate.nginx.baseUrl).toMatch(/^http:\/\/\[::1\]:\d+$/);
  });

  it.each(CLIENTS)('counts %s as one client, apart from every other', async (_name, forms) => {
    // The bucket is fresh (no other group shares it) and takes BURST + 1 requests, from any form.
    const statuses: number[] = [];
    for (let i = 0; i <= BURST; i++) statuses.push(await ask(gate, forms[i % forms.length]!));
    expect(statuses).toEqual(Array.from({ length: BURST + 1 }, () => 503));
    for (const form of forms) expect(await ask(gate, form)).toBe(429);
  });
});

describe("the verifier's call limit key (X-SG-Client)", () => {
  let gate: { nginx: LocalNginx; dir: string };
  let verifier: Server;
  const keys: string[] = [];
  beforeAll(async () => {
    verifier = createServer((req, res) => {
      keys.push(String(req.headers['x-sg-client']));
      res.writeHead(401, { 'WWW-Authenticate': 'Bearer realm="secret-gate"' }).end();
    });
    const port = await freePort();
    await new Promise<void>((resolve) => verifier.listen(port, '127.0.0.1', resolve));
    gate = await startGate(port);
  }, 30_000);
  afterAll(async () => {
    await gate?.nginx.stop();
    verifier?.closeAllConnections();
    await new Promise((resolve) => verifier?.close(resolve));
    if (gate) await rm(gate.dir, { recursive: true, force: true });
  });

  it('names every form of one client by one key, and no two clients alike', async () => {
    const perClient: string[] = [];
    for (const [name, forms] of CLIENTS) {
      const start = keys.length;
      for (const form of forms) expect(await ask(gate, form)).toBe(401);
      const seen = new Set(keys.slice(start));
      expect(seen.size, name).toBe(1);
      perClient.push([...seen][0]!);
    }
    expect(new Set(perClient).size).toBe(CLIENTS.length);
    expect(perClient.at(-1)).toBe('203.0.113.8');
    expect(perClient[0]).toBe('2001:db8:1:2');
  });
});

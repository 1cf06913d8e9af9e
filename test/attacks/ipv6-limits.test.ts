// An IPv6 client holds a whole /64 and can send every request from another address in it: both
// rate limits must count it as one client. The real NGINX listens on [::1] and takes each
// request's client address from X-Forwarded-For (real_ip from ::1), so the addresses are parsed
// and printed by NGINX itself, every compressed shape included. No verifier runs: an allowed
// request fails closed with 503, a limited one gets 429.
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

async function startGate(zone: 'secret' | 'verify'): Promise<{ nginx: LocalNginx; dir: string }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'sg-ipv6-limits-'));
  const port = await freePort();
  const tight = { rate: '1r/m', burst: BURST };
  const loose = { rate: '100000r/s', burst: 100000 };
  const [secret, verify] = zone === 'secret' ? [tight, loose] : [loose, tight];
  const env = {
    ...localNginxEnv({
      prefix: dir,
      listen: `[::1]:${port}`,
      // Nothing listens there: an allowed request gets 503 and no verifier takes part.
      verifierAddr: `127.0.0.1:${await freePort()}`,
      memoryDir: path.join(dir, 'memory'),
      externalOrigin: 'http://gate.test',
      secretRate: secret.rate,
      secretBurst: secret.burst,
      verifyRate: verify.rate,
      verifyBurst: verify.burst,
      workerProcesses: 1,
    }),
    SG_REAL_IP_FROM: '::1/128',
  };
  return { nginx: await startLocalNginx({ prefix: dir, env }), dir };
}

describe.each(['secret', 'verify'] as const)('the %s rate limit', (zone) => {
  let gate: { nginx: LocalNginx; dir: string };
  let sent = 0;
  beforeAll(async () => {
    gate = await startGate(zone);
  }, 30_000);
  afterAll(async () => {
    await gate?.nginx.stop();
    if (gate) await rm(gate.dir, { recursive: true, force: true });
  });

  const ask = async (address: string): Promise<number> => {
    sent += 1;
    const answer = await fetch(`${gate.nginx.baseUrl}/secret`, {
      headers: { authorization: `Bearer opaque-${zone}-${sent}`, 'x-forwarded-for': address },
    });
    await answer.arrayBuffer();
    return answer.status;
  };

  it('listens on IPv6 loopback', () => {
    expect(gate.nginx.baseUrl).toMatch(/^http:\/\/\[::1\]:\d+$/);
  });

  it.each(CLIENTS)('counts %s as one client, apart from every other', async (_name, forms) => {
    // The bucket is fresh (no other group shares it) and takes BURST + 1 requests, from any form.
    const statuses: number[] = [];
    for (let i = 0; i <= BURST; i++) statuses.push(await ask(forms[i % forms.length]!));
    expect(statuses).toEqual(Array.from({ length: BURST + 1 }, () => 503));
    for (const form of forms) expect(await ask(form)).toBe(429);
  });
});

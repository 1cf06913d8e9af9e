// A store URL that names the wrong kind of server stops the verifier process at start with one line
// that says what is wrong (exit 2, as for any unusable configuration): a Cluster URL at a node not
// in cluster mode, a plain URL at a cluster node, a Sentinel URL at a plain node or with a master
// name the sentinels do not know, and the URL mistakes the schema finds on its own.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../stack/ports.js';
import { startRedisServer, type RedisServer } from '../support/redis-server.js';
import { startTopology, type RedisTopology } from '../support/redis-topologies.js';

const MAIN = fileURLToPath(new URL('../../verifier/src/main.ts', import.meta.url));

/**
 * Runs the verifier with its shared stores at `store` (set as `name`), DPoP on; resolves once it
 * exits, or once it listens (then it is stopped, and `listening` is true), or after 15 s.
 */
async function run(
  store: string,
  env: Record<string, string> = {},
  name = 'VERIFIER_REDIS_URL',
): Promise<{ code: number | null; stdout: string; stderr: string; listening: boolean }> {
  const listen = `127.0.0.1:${await freePort()}`;
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN], {
    env: {
      PATH: process.env.PATH ?? '',
      VERIFIER_ISSUER: 'https://idp.test',
      VERIFIER_AUDIENCE: 'api',
      VERIFIER_DPOP: 'required',
      VERIFIER_LISTEN: listen,
      [name]: store,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let listening = false;
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    if (!chunk.toString().includes('verifier listening')) return;
    listening = true;
    child.kill('SIGKILL');
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  return new Promise((resolve) =>
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, listening });
    }),
  );
}

let single: RedisServer;
let cluster: RedisTopology;
let sentinel: RedisTopology;
beforeAll(async () => {
  single = await startRedisServer();
  cluster = await startTopology('cluster');
  sentinel = await startTopology('sentinel');
}, 60_000);
afterAll(async () => {
  await single.stop();
  await cluster.stop();
  await sentinel.stop();
});

describe('a store URL that does not fit the server', { timeout: 30_000 }, () => {
  it.each([
    [
      'a cluster URL at a node not in cluster mode',
      () => `redis+cluster://127.0.0.1:${single.port}`,
      (port: number) =>
        `redis.url: 127.0.0.1:${port} is not in cluster mode; use redis:// (or rediss://) for a single node`,
    ],
    [
      'a plain URL at a cluster node',
      () => cluster.url.replace('redis+cluster://', 'redis://').replace(/,.*$/, ''),
      (port: number) =>
        `redis.url: 127.0.0.1:${port} is a cluster node; use redis+cluster:// (or rediss+cluster://)`,
    ],
    [
      'a Sentinel URL at a node that is no sentinel',
      () => `redis+sentinel://127.0.0.1:${single.port}/sg-primary`,
      (port: number) => `redis.url: 127.0.0.1:${port} is not a Redis Sentinel`,
    ],
    [
      'a Sentinel URL with a master name the sentinels do not know',
      () => sentinel.url.replace(/\/[^/]*$/, '/no-such-primary'),
      (port: number) =>
        `redis.url: the sentinel at 127.0.0.1:${port} knows no master "no-such-primary"`,
    ],
  ])('%s stops it with one line', async (_case, store, line) => {
    const url = store();
    const port = Number(/127\.0\.0\.1:(\d+)/.exec(url)![1]);
    const { code, stderr } = await run(url);
    expect(code).toBe(2);
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(line(port));
  });

  it.each([
    ['one node', () => `redis://127.0.0.1:${single.port}`],
    ['a Sentinel', () => sentinel.url],
    ['a Cluster', () => cluster.url],
  ])('the URL form that fits %s starts it', async (_case, store) => {
    const { listening, stderr } = await run(store());
    expect(stderr).toBe('');
    expect(listening).toBe(true);
  });

  it('stops it when a removed name is set, naming the setting that replaced it, never a value', async () => {
    const url = `redis://127.0.0.1:${single.port}`;
    const { code, listening, stderr } = await run(
      url,
      { VERIFIER_DPOP_REPLAY_PASSWORD: 'former-password' },
      'VERIFIER_DPOP_REPLAY_STORE',
    );
    expect(code).toBe(2);
    expect(listening).toBe(false);
    expect(stderr).toContain(
      'VERIFIER_DPOP_REPLAY_STORE: removed; use VERIFIER_REDIS_URL (it serves both stores)',
    );
    expect(stderr).toContain(
      'VERIFIER_DPOP_REPLAY_PASSWORD: removed; use VERIFIER_REDIS_PASSWORD (it serves both stores)',
    );
    expect(stderr).not.toContain('former-password');
    expect(stderr).not.toContain(url);
  });

  it.each([
    ['an unknown scheme', 'memcached://127.0.0.1:11211', 'unknown scheme "memcached://"'],
    ['no master name', 'redis+sentinel://127.0.0.1:26379', 'needs the master name'],
    ['no hosts', 'redis+cluster://', 'redis+cluster:// names no host'],
  ])('%s stops it with one line naming the setting', async (_case, url, problem) => {
    const { code, stderr } = await run(url);
    expect(code).toBe(2);
    const said = stderr.split('\n').filter((line) => line.includes('VERIFIER_REDIS_URL'));
    expect(said).toHaveLength(1);
    expect(said[0]).toContain(problem);
  });
});

// The three shapes a shared store takes, started from Debian's redis-server and redis-sentinel on
// free loopback ports for the replica suites: one node; a primary with two replicas watched by
// three sentinels (a failover in about two seconds); a cluster of three primaries. Each says the
// URL the verifier is given, kills its primary (Sentinel promotes a replica) and stops everything.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../../stack/ports.js';
import { startRedisServer, type RedisServer } from './redis-server.js';

export type TopologyName = 'single' | 'sentinel' | 'cluster';
export const TOPOLOGIES: readonly TopologyName[] = ['single', 'sentinel', 'cluster'];

export interface RedisTopology {
  readonly name: TopologyName;
  /** What `redis.url` (both stores) is set to. */
  readonly url: string;
  /** Sentinel only: SIGKILLs the primary, then resolves once a sentinel names another one. */
  killPrimary(): Promise<{ killed: number; promoted: number }>;
  /** Stops every server (SIGKILL: nothing is kept), sentinels last. */
  stop(): Promise<void>;
}

export const MASTER_NAME = 'sg-primary';

export function startTopology(name: TopologyName): Promise<RedisTopology> {
  if (name === 'sentinel') return startSentinel();
  if (name === 'cluster') return startCluster();
  return startSingle();
}

async function startSingle(): Promise<RedisTopology> {
  const server = await startRedisServer();
  return {
    name: 'single',
    url: server.url,
    killPrimary: () => Promise.reject(new Error('a single node has no replica to promote')),
    stop: () => server.stop('SIGKILL'),
  };
}

/** Asks one server and disconnects; `undefined` when it does not answer. */
async function ask(port: number, ...command: [string, ...string[]]): Promise<unknown> {
  const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, retryStrategy: null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await client.call(...command);
  } catch {
    return undefined;
  } finally {
    client.disconnect();
  }
}

async function eventually(what: string, check: () => Promise<boolean>, ms = 20_000) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function startSentinel(): Promise<RedisTopology> {
  const dir = await mkdtemp(join(tmpdir(), 'sg-sentinel-'));
  const nodes = new Map<number, RedisServer>();
  // Replicas sync at once rather than after diskless sync's default 5 s delay, and write the
  // copy they receive in the topology's directory.
  const sync = ['--repl-diskless-sync-delay', '0', '--dir', dir];
  const primary = await startRedisServer({ args: sync });
  nodes.set(primary.port, primary);
  for (let i = 0; i < 2; i++) {
    const replica = await startRedisServer({
      args: ['--replicaof', '127.0.0.1', String(primary.port), ...sync],
    });
    nodes.set(replica.port, replica);
  }
  await eventually(
    'two replicas in sync',
    async () =>
      (String(await ask(primary.port, 'INFO', 'replication')).match(/state=online/g) ?? [])
        .length === 2,
  );
  const sentinels: RedisServer[] = [];
  for (let i = 0; i < 3; i++) {
    const config = join(dir, `sentinel-${i}.conf`);
    await writeFile(
      config,
      [
        `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${primary.port} 2`,
        `sentinel down-after-milliseconds ${MASTER_NAME} 1000`,
        `sentinel failover-timeout ${MASTER_NAME} 5000`,
        `dir ${dir}`,
        '',
      ].join('\n'),
    );
    sentinels.push(await startRedisServer({ sentinelConfig: config }));
  }
  const [first] = sentinels;
  const primaryPort = async () => {
    const answer = await ask(first!.port, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', MASTER_NAME);
    return Array.isArray(answer) ? Number(answer[1]) : undefined;
  };
  await eventually('three sentinels that see each other and both replicas', async () => {
    const seen = await Promise.all(
      sentinels.map((at) => ask(at.port, 'SENTINEL', 'MASTER', MASTER_NAME)),
    );
    return seen.every((fields) => {
      const list = Array.isArray(fields) ? fields.map(String) : [];
      const field = (name: string) => list[list.indexOf(name) + 1];
      return field('num-other-sentinels') === '2' && field('num-slaves') === '2';
    });
  });
  return {
    name: 'sentinel',
    url: `redis+sentinel://${sentinels.map(({ port }) => `127.0.0.1:${port}`).join(',')}/${MASTER_NAME}`,
    async killPrimary() {
      const killed = (await primaryPort())!;
      await nodes.get(killed)!.stop('SIGKILL');
      nodes.delete(killed);
      let promoted: number | undefined;
      await eventually('a promoted replica', async () => {
        promoted = await primaryPort();
        return promoted !== undefined && promoted !== killed;
      });
      // The old primary comes back empty, as a replica of the new one (as an operator restarts it).
      const back = await startRedisServer({
        port: killed,
        args: ['--replicaof', '127.0.0.1', String(promoted), ...sync],
      });
      nodes.set(killed, back);
      return { killed, promoted: promoted! };
    },
    async stop() {
      for (const node of nodes.values()) await node.stop('SIGKILL');
      for (const sentinel of sentinels) await sentinel.stop('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function startCluster(): Promise<RedisTopology> {
  const dir = await mkdtemp(join(tmpdir(), 'sg-cluster-'));
  const nodes: RedisServer[] = [];
  for (let i = 0; i < 3; i++) {
    const args = [
      '--cluster-enabled',
      'yes',
      '--cluster-port',
      String(await freePort()),
      '--cluster-config-file',
      join(dir, `nodes-${i}.conf`),
      '--cluster-node-timeout',
      '2000',
      '--dir',
      dir,
    ];
    nodes.push(await startRedisServer({ args }));
  }
  const addresses = nodes.map(({ port }) => `127.0.0.1:${port}`);
  await new Promise<void>((resolve, reject) => {
    const create = spawn(
      '/usr/bin/redis-cli',
      ['--cluster', 'create', ...addresses, '--cluster-yes'],
      {
        stdio: 'ignore',
      },
    );
    create.once('error', reject);
    create.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`redis-cli --cluster create exited ${code}`)),
    );
  });
  await eventually('cluster_state:ok on every node', async () => {
    const states = await Promise.all(nodes.map(({ port }) => ask(port, 'CLUSTER', 'INFO')));
    return states.every((info) => /cluster_state:ok/.test(String(info)));
  });
  return {
    name: 'cluster',
    url: `redis+cluster://${addresses.join(',')}`,
    killPrimary: () => Promise.reject(new Error('the test cluster has no replicas to promote')),
    async stop() {
      for (const node of nodes) await node.stop('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface TlsRedis {
  /** `rediss://127.0.0.1:PORT`, the TLS port. */
  readonly url: string;
  /** PEM of the private CA that signed the server's certificate (for `redis.caFile`). */
  readonly ca: string;
  stop(): Promise<void>;
}

/**
 * One node that speaks TLS only to clients, with a certificate for 127.0.0.1 from a CA made for
 * it (openssl); its plain port, bound to loopback, serves only the start-up check.
 */
export async function startTlsRedis(): Promise<TlsRedis> {
  const dir = await mkdtemp(join(tmpdir(), 'sg-redis-tls-'));
  const at = (name: string) => join(dir, name);
  await writeFile(at('san.ext'), 'subjectAltName=IP:127.0.0.1\n');
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  for (const args of [
    [
      'req',
      '-x509',
      ...ec,
      '-keyout',
      at('ca.key'),
      '-out',
      at('ca.crt'),
      '-days',
      '1',
      '-subj',
      '/CN=secret-gate test CA',
    ],
    ['req', ...ec, '-keyout', at('server.key'), '-out', at('server.csr'), '-subj', '/CN=127.0.0.1'],
    [
      'x509',
      '-req',
      '-in',
      at('server.csr'),
      '-CA',
      at('ca.crt'),
      '-CAkey',
      at('ca.key'),
      '-CAcreateserial',
      '-out',
      at('server.crt'),
      '-days',
      '1',
      '-extfile',
      at('san.ext'),
    ],
  ]) {
    const made = spawnSync('/usr/bin/openssl', args, { stdio: 'ignore' });
    if (made.status !== 0) throw new Error(`openssl ${args[0]} failed`);
  }
  const tlsPort = await freePort();
  const server = await startRedisServer({
    args: [
      '--tls-port',
      String(tlsPort),
      '--tls-cert-file',
      at('server.crt'),
      '--tls-key-file',
      at('server.key'),
      '--tls-ca-cert-file',
      at('ca.crt'),
      '--tls-auth-clients',
      'no',
    ],
  });
  return {
    url: `rediss://127.0.0.1:${tlsPort}`,
    ca: await readFile(at('ca.crt'), 'utf8'),
    async stop() {
      await server.stop('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    },
  };
}

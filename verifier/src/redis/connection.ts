// The one connection layer of the shared stores (revocation, DPoP replays): a client for a single
// node, a primary found through Sentinel, or a Cluster (./url.ts has the URL forms), with the ACL
// user, password and TLS CA of the `redis` settings, writes acknowledged by replicas (`WAIT`), a
// scan over every primary, and a subscription that follows the node its channel lives on.
import { createRequire } from 'node:module';
import type * as IORedis from 'ioredis';
import type { ChainableCommander, Cluster, Redis, RedisOptions } from 'ioredis';
import type { RootSettings } from '../config/model.js';
import { parseRedisUrl, type RedisTarget, type Topology } from './url.js';

/** The `redis` settings as the stores need them, secrets read. */
export interface RedisSettings {
  /** The one Redis both stores use (./url.ts forms); undefined: each store is held in process. */
  readonly url: string | undefined;
  readonly username: string | undefined;
  readonly password: string | undefined;
  /** Sentinel's own `AUTH` password; unset, the sentinels are asked without one. */
  readonly sentinelPassword: string | undefined;
  /** PEM of the CAs that sign the servers' certificates (TLS forms); unset, the system's. */
  readonly ca: string | undefined;
  /** Replicas that must hold a write before it counts; undefined: 1 with Sentinel, else 0. */
  readonly waitReplicas: number | undefined;
  /** How long a write waits for them (seconds). */
  readonly waitTimeout: number;
}

/** The `redis` section as the stores need it: the one place either store reads its Redis from. */
export function redisSettingsOf({ redis }: Pick<RootSettings, 'redis'>): RedisSettings {
  return {
    url: redis.url,
    username: redis.username,
    password: redis.password,
    sentinelPassword: redis.sentinelPassword,
    ca: redis.caFile,
    waitReplicas: redis.waitReplicas,
    waitTimeout: redis.waitTimeout,
  };
}

export type SharedRedis = ReturnType<typeof openRedis>;

const requireModule = createRequire(import.meta.url);
let loaded: typeof IORedis | undefined;
/**
 * ioredis, loaded by the first connection or probe: with its dependencies it holds ~1.2 MB of
 * heap and its compiled code, which a verifier whose stores are held in process never needs.
 */
function ioredis(): typeof IORedis {
  return (loaded ??= requireModule('ioredis') as typeof IORedis);
}

/** Reconnect after 200 ms, 400 ms… never more rarely than every 2 s. */
const retryStrategy = (attempt: number) => Math.min(attempt * 200, 2000);

/**
 * Connects to the server(s) `url` names. Commands are never queued while disconnected and time
 * out (500 ms plus the replica wait), so an unreachable store answers at once with an error and
 * the caller decides whether that fails closed. `onError` gets connection trouble, never a key.
 */
export function openRedis(
  url: string,
  settings: Partial<RedisSettings>,
  onError: (message: string) => void,
) {
  const target = parseRedisUrl(url);
  if (typeof target === 'string') throw new Error(target);
  const { topology } = target;
  const waitReplicas = settings.waitReplicas ?? (topology === 'sentinel' ? 1 : 0);
  const waitMs = Math.max(1, Math.round((settings.waitTimeout ?? 0.2) * 1000));
  const node = nodeOptions(target, settings, 500 + (waitReplicas > 0 ? waitMs : 0));
  const client = createClient(target, settings, node);
  client.on('error', (error: Error) => onError(error.message));

  return {
    topology,
    client,
    /**
     * Sends `build`'s commands in one round trip to the node that holds their keys (in a
     * Cluster they must share a hash slot), then waits for `waitReplicas` replicas to hold them.
     * Resolves with each command's answer; rejects on any error or too few acknowledgements.
     */
    async write(build: (batch: ChainableCommander) => void): Promise<unknown[]> {
      const batch = client.pipeline();
      build(batch);
      if (waitReplicas > 0) batch.wait(waitReplicas, waitMs);
      const answers = (await batch.exec()) ?? [];
      const failed = answers.find(([error]) => error);
      if (failed) throw failed[0] as Error;
      if (waitReplicas > 0) {
        const held = Number(answers.pop()?.[1]);
        if (!(held >= waitReplicas))
          throw new Error(`${held} of ${waitReplicas} replica(s) acknowledged within ${waitMs} ms`);
      }
      return answers.map(([, answer]) => answer);
    },
    /** Batches of the keys matching `match` on every primary. */
    async *scan(match: string): AsyncIterable<string[]> {
      const nodes = client instanceof ioredis().Cluster ? client.nodes('master') : [client];
      for (const at of nodes)
        for await (const keys of at.scanStream({ match, count: 500 }) as AsyncIterable<string[]>)
          yield keys;
    },
    /**
     * Subscribes to `channels` on a connection of its own, again after every reconnection (in a
     * Cluster to one channel, on the node that now serves its slot, with sharded pub/sub):
     * `onUp` after each subscription, `onDown` when the connection is lost.
     */
    subscribe(
      channels: readonly [string, ...string[]],
      handlers: { onMessage(message: string): void; onUp(): void; onDown(): void },
    ) {
      return client instanceof ioredis().Cluster
        ? followShard(client, node, channels[0], handlers, onError)
        : follow(client, channels, handlers, onError);
    },
    /** PUBLISH, or SPUBLISH in a Cluster (where classic pub/sub would reach every node). */
    publishCommand: topology === 'cluster' ? 'SPUBLISH' : 'PUBLISH',
    isReady: () => client.status === 'ready',
    close: () => client.disconnect(),
  };
}

function nodeOptions(
  target: RedisTarget,
  settings: Partial<RedisSettings>,
  commandTimeout: number,
) {
  const tls = target.tls ? { tls: settings.ca === undefined ? {} : { ca: settings.ca } } : {};
  const username = settings.username ?? target.username;
  const password = settings.password ?? target.password;
  return {
    ...(username === undefined ? {} : { username }),
    ...(password === undefined ? {} : { password }),
    ...tls,
    db: target.db,
    connectTimeout: 2000,
    commandTimeout,
    maxRetriesPerRequest: 0,
  } satisfies RedisOptions;
}

function createClient(target: RedisTarget, settings: Partial<RedisSettings>, node: RedisOptions) {
  const [first] = target.hosts;
  if (target.topology === 'cluster')
    return new (ioredis().Cluster)([...target.hosts], {
      enableOfflineQueue: false,
      clusterRetryStrategy: retryStrategy,
      slotsRefreshTimeout: 1000,
      redisOptions: node,
      // Managed TLS endpoints (ElastiCache, Memorystore) present certificates for their names.
      ...(target.tls ? { dnsLookup: (address, callback) => callback(null, address) } : {}),
    });
  const common = { ...node, enableOfflineQueue: false, retryStrategy };
  if (target.topology === 'single') return new (ioredis().Redis)({ ...common, ...first });
  return new (ioredis().Redis)({
    ...common,
    sentinels: [...target.hosts],
    name: target.masterName,
    role: 'master',
    // A primary demoted under a live connection (a planned failover) answers READONLY: reconnect,
    // which asks the sentinels for the new one.
    reconnectOnError: (error: Error) => error.message.startsWith('READONLY'),
    sentinelRetryStrategy: retryStrategy,
    ...(settings.sentinelPassword === undefined
      ? {}
      : { sentinelPassword: settings.sentinelPassword }),
    ...(target.tls ? { enableTLSForSentinelMode: true, sentinelTLS: node.tls ?? {} } : {}),
  });
}

interface Handlers {
  onMessage(message: string): void;
  onUp(): void;
  onDown(): void;
}

/** A single node or a Sentinel primary: a duplicate connection that queues its SUBSCRIBE. */
function follow(
  client: Redis,
  channels: readonly string[],
  handlers: Handlers,
  onError: (message: string) => void,
) {
  const subscriber = client.duplicate({ enableOfflineQueue: true, commandTimeout: undefined });
  subscriber.on('error', (error: Error) => onError(error.message));
  subscriber.on('message', (_channel: string, message: string) => handlers.onMessage(message));
  subscriber.on('close', () => handlers.onDown());
  subscriber.on('ready', () => {
    subscriber.subscribe(...channels).then(
      () => handlers.onUp(),
      (error: Error) => onError(`subscription failed: ${error.message}`),
    );
  });
  return {
    isUp: () => subscriber.status === 'ready',
    /** PING on the subscribed connection: a half-open one never answers. */
    ping: () => subscriber.ping(),
    /** Drops the connection and opens a new one (which subscribes again). */
    reconnect: () => subscriber.disconnect(true),
    close: () => subscriber.disconnect(),
  };
}

/**
 * A Cluster: SSUBSCRIBE on a plain connection to the primary that serves the channel's slot,
 * found anew (after a slots refresh) whenever that connection is lost, so a failover or a
 * resharding moves the subscription with the slot.
 */
function followShard(
  cluster: Cluster,
  node: RedisOptions,
  channel: string,
  handlers: Handlers,
  onError: (message: string) => void,
) {
  let subscriber: Redis | undefined;
  let closed = false;
  let up = false;
  const again = () => {
    if (!closed) setTimeout(() => void open(), 1000).unref();
  };
  async function open(): Promise<void> {
    try {
      if (cluster.status !== 'ready') return again();
      const slot = Number(await cluster.cluster('KEYSLOT', channel));
      const owner = cluster.slots[slot]?.[0];
      if (owner === undefined) return again();
      const at = owner.lastIndexOf(':');
      const connection = new (ioredis().Redis)({
        ...node,
        host: owner.slice(0, at).replace(/^\[(.*)\]$/, '$1'),
        port: Number(owner.slice(at + 1)),
        commandTimeout: undefined,
        retryStrategy: null,
        enableOfflineQueue: true,
      });
      subscriber = connection;
      connection.on('error', (error: Error) => onError(error.message));
      connection.on('smessage', (_channel: string, message: string) => handlers.onMessage(message));
      connection.on('end', () => {
        if (up) handlers.onDown();
        up = false;
        // Where the slot went: the cluster client learns it from its next refresh.
        cluster.refreshSlotsCache();
        again();
      });
      await connection.ssubscribe(channel);
      up = true;
      handlers.onUp();
    } catch (error) {
      onError(`subscription failed: ${(error as Error).message}`);
      subscriber?.disconnect();
    }
  }
  if (cluster.status === 'ready') void open();
  else cluster.once('ready', () => void open());
  return {
    isUp: () => up && subscriber?.status === 'ready',
    ping: () => subscriber?.ping() ?? Promise.reject(new Error('not subscribed')),
    /** The connection's `end` opens the next one, on the slot's primary as the cluster now knows it. */
    reconnect: () => subscriber?.disconnect(),
    close() {
      closed = true;
      subscriber?.disconnect();
    },
  };
}

/**
 * Whether the server(s) `redis.url` names contradict the topology the URL claims, as one line
 * (`redis.url: 127.0.0.1:6379 is not in cluster mode; …`), or undefined.
 */
export async function storeTopologyProblem(
  config: Pick<RootSettings, 'redis'>,
): Promise<string | undefined> {
  const settings = redisSettingsOf(config);
  if (settings.url === undefined) return undefined;
  const problem = await topologyProblem(settings.url, settings);
  return problem === undefined ? undefined : `redis.url: ${problem}`;
}

/**
 * What the server(s) at `url` say about the topology the URL claims, for a check at start: a
 * `+cluster` URL at a node without cluster mode, a `+sentinel` URL at something that is no
 * sentinel or does not know the master name, a plain URL at a cluster node. Unreachable servers
 * are no misconfiguration (the stores then fail as documented), so they pass.
 */
export async function topologyProblem(
  url: string,
  settings: RedisSettings,
): Promise<string | undefined> {
  const target = parseRedisUrl(url);
  if (typeof target === 'string') return target;
  const base = nodeOptions(target, settings, 2000);
  // Sentinels have their own password (if any) and no database.
  const options: RedisOptions =
    target.topology === 'sentinel'
      ? {
          ...(base.tls === undefined ? {} : { tls: base.tls }),
          ...(settings.sentinelPassword === undefined
            ? {}
            : { password: settings.sentinelPassword }),
          connectTimeout: base.connectTimeout,
          commandTimeout: base.commandTimeout,
        }
      : base;
  for (const { host, port } of target.hosts) {
    const probe = new (ioredis().Redis)({
      ...options,
      host,
      port,
      lazyConnect: true,
      retryStrategy: null,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
    });
    probe.on('error', () => undefined);
    try {
      await probe.connect();
    } catch {
      probe.disconnect();
      continue;
    }
    try {
      return await describe(probe, target.topology, target.masterName, `${host}:${port}`);
    } finally {
      probe.disconnect();
    }
  }
  return undefined;
}

async function describe(
  probe: Redis,
  topology: Topology,
  masterName: string | undefined,
  where: string,
): Promise<string | undefined> {
  if (topology === 'sentinel') {
    const answer = await probe
      .call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', masterName ?? '')
      .catch((error: Error) => error);
    if (answer instanceof Error) return `${where} is not a Redis Sentinel (${answer.message})`;
    return answer === null ? `the sentinel at ${where} knows no master "${masterName}"` : undefined;
  }
  const info = await probe.info('cluster').catch((error: Error) => error);
  if (info instanceof Error) return undefined;
  const enabled = /cluster_enabled:1/.test(info);
  if (topology === 'cluster' && !enabled)
    return `${where} is not in cluster mode; use redis:// (or rediss://) for a single node`;
  if (topology === 'single' && enabled)
    return `${where} is a cluster node; use redis+cluster:// (or rediss+cluster://)`;
  return undefined;
}

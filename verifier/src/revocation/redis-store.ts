// The shared revocation store on a Redis (or Valkey) server, with the DPoP replay store's client
// settings (no offline queue, short command timeouts, reconnects every ≤ 2 s); docs/revocation.md,
// "Across a Redis outage", says what a user sees when it fails.
import { Redis } from 'ioredis';
import { createWatermarkView, RevocationStoreUnavailable, type RevocationStore } from './store.js';

export interface RedisRevocationStoreOptions {
  readonly url: string;
  /** Redis `AUTH` password read at start (the replay store's `dpop.replayPassword`); wins over one in the URL. */
  readonly password?: string | undefined;
  readonly maxEntries: number;
  /** The one lifetime of every remembered `jti` (seconds). */
  readonly replayTtl: number;
  readonly now: () => number;
  /** Connection trouble (never a key: keys hold subjects). */
  readonly onError?: (message: string) => void;
  /** Seconds one store command took, for the latency histogram. */
  readonly onLatency?: (operation: Operation, seconds: number) => void;
}

type Operation = 'revoke' | 'remember' | 'load';

const WATERMARK_PREFIX = 'sg:rev:wm:';
const REPLAY_PREFIX = 'sg:rev:jti:';
const CHANNEL = 'sg:rev:watermarks';

/** Keeps the higher watermark, extends the expiry, and tells the other replicas. */
const RAISE = `
local held = redis.call('GET', KEYS[1])
if held and tonumber(held) >= tonumber(ARGV[1]) then
  if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('PUBLISH', ARGV[3], ARGV[2] .. ' ' .. ARGV[1] .. ' ' .. ARGV[4])
return 1
`;

/**
 * Every replica keeps the watermarks in an in-process view, so the per-request check never waits
 * on the network: a write raises the key on the server (a script keeps the higher value) and
 * publishes it, and every replica's subscriber raises its view. While the subscriber is down the
 * view may be behind: `isCurrent()` says so, and `required` policies refuse.
 */
export function createRedisRevocationStore(options: RedisRevocationStoreOptions): RevocationStore {
  const { now } = options;
  const client = new Redis(options.url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 500,
    connectTimeout: 2000,
    retryStrategy: (attempt: number) => Math.min(attempt * 200, 2000),
    ...(options.password === undefined ? {} : { password: options.password }),
  });
  // A subscribed connection can run no other command, so the view is fed by a second one; it
  // queues its SUBSCRIBE until connected.
  const subscriber = client.duplicate({ enableOfflineQueue: true, commandTimeout: undefined });
  const view = createWatermarkView(options.maxEntries, now);
  let current = false;
  let closed = false;

  client.on('error', (error: Error) => options.onError?.(error.message));
  subscriber.on('error', (error: Error) => options.onError?.(error.message));
  subscriber.on('close', () => {
    current = false;
  });
  // "ttl at key": the key, which may hold spaces, is last.
  subscriber.on('message', (_channel: string, message: string) => {
    const [ttl, at, ...key] = message.split(' ');
    if (Number.isFinite(Number(ttl)) && Number.isFinite(Number(at)))
      view.raise(key.join(' '), Number(at), now() + Number(ttl));
  });
  subscriber.on('ready', () => void resync());

  /** One command; timed for the latency histogram, and any failure means the store is unavailable. */
  async function send<T>(operation: Operation | undefined, run: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await run();
    } catch (error) {
      throw new RevocationStoreUnavailable(
        `the revocation store did not answer (${(error as Error).message})`,
      );
    } finally {
      if (operation !== undefined)
        options.onLatency?.(operation, (performance.now() - started) / 1000);
    }
  }

  const raiseArgs = (key: string, at: number, ttl: number) =>
    [RAISE, 1, `${WATERMARK_PREFIX}${key}`, String(at), String(ttl), CHANNEL, key] as const;

  /**
   * After each (re)connection: subscribes first, then loads every watermark, so nothing published
   * meanwhile is missed and a restarted replica catches up. Then writes back what the view holds
   * above the server's (a server restarted empty or flushed), so replicas started later load it.
   */
  async function resync(): Promise<void> {
    try {
      await subscriber.subscribe(CHANNEL);
      /** Keys whose watermark the server holds at least as high as the view. */
      const held = new Set<string>();
      await send('load', async () => {
        const batches = client.scanStream({ match: `${WATERMARK_PREFIX}*`, count: 500 });
        for await (const keys of batches as AsyncIterable<string[]>) {
          if (keys.length === 0) continue;
          const batch = client.multi();
          for (const key of keys) batch.get(key).pttl(key);
          const answers = (await batch.exec()) ?? [];
          keys.forEach((key, i) => {
            const at = Number(answers[2 * i]?.[1]);
            const ttl = Number(answers[2 * i + 1]?.[1]);
            const name = key.slice(WATERMARK_PREFIX.length);
            if (!Number.isFinite(at) || ttl <= 0) return;
            view.raise(name, at, now() + ttl);
            if (at >= (view.get(name) ?? 0)) held.add(name);
          });
        }
      });
      const lost = view.entries().filter(({ key }) => !held.has(key));
      for (let i = 0; i < lost.length; i += 500) {
        const batch = client.pipeline();
        for (const { key, at, expires } of lost.slice(i, i + 500))
          batch.eval(...raiseArgs(key, at, Math.max(1, expires - now())));
        const failed = (await send('load', () => batch.exec()))?.find(([error]) => error);
        if (failed) throw failed[0] as Error;
      }
      current = subscriber.status === 'ready' && !closed;
    } catch (error) {
      options.onError?.(`revocation store reload failed: ${(error as Error).message}`);
      // The next reconnection retries; a failed reload on a live connection is retried here.
      if (!closed) setTimeout(() => void resync(), 1000).unref();
    }
  }

  return {
    revokedBefore: (key) => view.get(key),
    get size() {
      return view.size;
    },
    async revoke(key, at, ttlSeconds) {
      const ttl = Math.max(1, Math.ceil(ttlSeconds * 1000));
      await send('revoke', () => client.eval(...raiseArgs(key, at, ttl)));
      // This replica knows at once, whether or not its subscriber is connected.
      view.raise(key, at, now() + ttl);
    },
    async remember(key) {
      const ttl = Math.max(1, Math.ceil(options.replayTtl * 1000));
      const answer = await send('remember', () =>
        client.set(`${REPLAY_PREFIX}${key}`, '1', 'PX', ttl, 'NX'),
      );
      return answer === 'OK';
    },
    async forget(key) {
      await send(undefined, () => client.del(`${REPLAY_PREFIX}${key}`));
    },
    isCurrent: () => current && client.status === 'ready',
    close() {
      closed = true;
      current = false;
      client.disconnect();
      subscriber.disconnect();
      view.clear();
      return Promise.resolve();
    },
  };
}

// The revocation store: watermarks and the `jti`s of received logout tokens and SETs. Reads are
// synchronous from an in-process view, so the check costs a map lookup per request (cache hits
// included); with a Redis (or Valkey) URL, writes go to that server and every replica mirrors it.
// docs/revocation.md, "Across a Redis outage", says what a user sees when it fails.
import { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';
import { ReceiverError } from './event-token.js';

export type RevocationStore = ReturnType<typeof createRevocationStore>;

interface StoreOptions {
  /** The shared server; undefined keeps everything in this process. */
  readonly url: string | undefined;
  /** Redis `AUTH` password read at start (`dpop.replayPassword`); wins over one in the URL. */
  readonly password?: string | undefined;
  /** Bound of the watermark view (`revocation.viewMaxEntries`). */
  readonly viewMaxEntries: number;
  /** Bound of the in-process `jti` set (`revocation.replayMaxEntries`). */
  readonly replayMaxEntries: number;
  readonly now: () => number;
  /** Connection trouble, a full view (never a key: keys hold subjects). */
  readonly onError?: (message: string) => void;
  /** Seconds one store command took, for the latency histogram. */
  readonly onLatency?: (operation: Operation, seconds: number) => void;
}

type Operation = 'revoke' | 'remember' | 'load';

/** Values with their own expiry (ms), on the store's clock. */
type View = LRUCache<string, number>;

const WATERMARK_PREFIX = 'sg:rev:wm:';
const REPLAY_PREFIX = 'sg:rev:jti:';
const CHANNEL = 'sg:rev:watermarks';
/** The subscriber is PINGed this often; an answer later than the next PING marks it not current. */
const HEARTBEAT_MS = 1000;
/** While a watermark published by another replica is missing from the view, a reload this often. */
const OVERFLOW_RELOAD_MS = 10_000;

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

/** True when `key` can be raised: the view holds it, or has room (after dropping expired ones). */
function hasRoom(view: View, key: string): boolean {
  if (view.size < view.maxSize || view.has(key)) return true;
  view.purgeStale();
  return view.size < view.maxSize;
}

/**
 * Keeps the higher value and the later expiry, like RAISE. Full of live entries it refuses a new
 * key (false) rather than let the cache evict one: a forgotten watermark un-revokes tokens, a
 * forgotten `jti` admits a replay.
 */
function raise(view: View, key: string, at: number, ttl: number): boolean {
  if (!hasRoom(view, key)) return false;
  const held = view.get(key);
  const remaining = held === undefined ? 0 : view.getRemainingTTL(key);
  view.set(key, Math.max(at, held ?? at), { ttl: Math.max(ttl, remaining) });
  return true;
}

/**
 * Without `url`, one process: what it receives is what it checks, and it is never unreachable.
 * With one, a write raises the key on the server and publishes it, and every replica's subscriber
 * raises its view, so the per-request check never waits on the network. While the subscriber is
 * down the view may be behind: `isCurrent()` says so, and `required` policies refuse.
 */
export function createRevocationStore(options: StoreOptions) {
  // Bounded by a size of one per entry rather than `max`, which would allocate every slot up front.
  const newView = (maxSize: number): View =>
    new LRUCache({
      maxSize,
      sizeCalculation: () => 1,
      perf: { now: options.now },
      ttlResolution: 0,
    });
  const view = newView(options.viewMaxEntries);
  // In one process a remembered `jti` is an entry of its own that expires with the replay lifetime.
  const seen = newView(options.replayMaxEntries);
  const shared = options.url === undefined ? undefined : connect(options.url, view, options);
  const full = (what: string) => new ReceiverError('store_unavailable', `${what} is full`);
  return {
    /** The watermark of `key` in seconds since the epoch, or undefined. */
    revokedBefore: (key: string) => view.get(key),
    /** Number of watermarks in the view; 0 lets the check skip building keys. */
    get size() {
      return view.size;
    },
    /** The bound of the view (`viewMaxEntries`). */
    capacity: options.viewMaxEntries,
    /**
     * Raises the watermark of `key` to at least `at` for `ttlSeconds`. Rejects when unreachable,
     * and when this replica's view cannot hold it: never written, so never acknowledged, where it
     * would not be enforced (the sender retries once watermarks expire).
     */
    async revoke(key: string, at: number, ttlSeconds: number): Promise<void> {
      const ttl = Math.max(1, Math.ceil(ttlSeconds * 1000));
      if (!hasRoom(view, key)) throw full('the revocation view');
      await shared?.revoke(key, at, ttl);
      // This replica knows at once, subscriber connected or not. The view filled meanwhile (from
      // the other replicas): the server has it, this replica does not, and says so.
      if (raise(view, key, at, ttl)) return;
      shared?.lost();
      throw full('the revocation view');
    },
    /** True the first time `key` is seen within `ttlSeconds`, false for a replay. */
    async remember(key: string, ttlSeconds: number): Promise<boolean> {
      const replayTtl = Math.max(1, Math.ceil(ttlSeconds * 1000));
      if (shared !== undefined) return shared.remember(key, replayTtl);
      if (seen.has(key)) return false;
      if (!raise(seen, key, 0, replayTtl)) throw full('the in-process jti set');
      return true;
    },
    /** Forgets a remembered key (after the write it guarded failed). */
    async forget(key: string): Promise<void> {
      if (shared !== undefined) await shared.forget(key);
      else seen.delete(key);
    },
    /** False while the shared store is unreachable: the view may miss recent revocations. */
    isCurrent: () => shared?.isCurrent() ?? true,
    /**
     * False while a watermark the shared store holds is missing from the full view: a token the
     * view does not refuse may be revoked all the same (the check refuses it as unavailable).
     */
    isComplete: () => shared?.isComplete() ?? true,
    close(): Promise<void> {
      shared?.close();
      view.clear();
      seen.clear();
      return Promise.resolve();
    },
  };
}

/** The Redis side, with the DPoP replay store's client settings (no offline queue, short timeouts). */
function connect(url: string, view: View, options: StoreOptions) {
  const client = new Redis(url, {
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
  let current = false;
  let closed = false;
  /** Watermarks the view could not take so far; a reload with none lost clears `incomplete`. */
  let lostCount = 0;
  let incomplete = false;
  let reloadTimer: NodeJS.Timeout | undefined;

  /** A watermark of the server is not in the view: incomplete until a reload holds them all. */
  function lost(): void {
    lostCount++;
    if (!incomplete)
      options.onError?.(
        'the revocation view is full: a watermark of the shared store is missing here, so tokens are refused until it fits',
      );
    incomplete = true;
    reloadTimer ??= setTimeout(() => {
      reloadTimer = undefined;
      void resync();
    }, OVERFLOW_RELOAD_MS).unref();
  }

  for (const connection of [client, subscriber])
    connection.on('error', (error: Error) => options.onError?.(error.message));
  subscriber.on('close', () => (current = false));
  // "ttl at key": the key, which may hold spaces, is last.
  subscriber.on('message', (_channel: string, message: string) => {
    const [ttl, at, ...key] = message.split(' ');
    if (!Number.isFinite(Number(ttl)) || !Number.isFinite(Number(at))) return;
    if (!raise(view, key.join(' '), Number(at), Number(ttl))) lost();
  });
  subscriber.on('ready', () => void resync());

  // A half-open connection (a peer that stopped answering, a silent network drop) raises no
  // `close`: a PING not answered by the next beat marks the view not current and reconnects.
  let pingSent: number | undefined;
  const heartbeat = setInterval(() => {
    if (subscriber.status !== 'ready') return void (pingSent = undefined);
    if (pingSent === undefined) {
      const sent = (pingSent = performance.now());
      subscriber.ping().then(
        () => void (pingSent === sent && (pingSent = undefined)),
        () => undefined,
      );
      return;
    }
    if (performance.now() - pingSent < HEARTBEAT_MS) return;
    pingSent = undefined;
    current = false;
    options.onError?.('the revocation store did not answer PING in time; reconnecting');
    subscriber.disconnect(true);
  }, HEARTBEAT_MS).unref();

  /** One command; timed for the latency histogram, and any failure means the store is unavailable. */
  async function send<T>(operation: Operation | undefined, run: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await run();
    } catch (error) {
      const message = `the revocation store did not answer (${(error as Error).message})`;
      throw new ReceiverError('store_unavailable', message);
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
    const lostBefore = lostCount;
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
            if (!raise(view, name, at, ttl)) return lost();
            if (at >= (view.get(name) ?? 0)) held.add(name);
          });
        }
      });
      // One pipeline: ioredis writes it in chunks and the view holds at most `viewMaxEntries`.
      const missing = client.pipeline();
      for (const [key, at] of view.entries())
        if (!held.has(key))
          missing.eval(...raiseArgs(key, at, Math.max(1, Math.ceil(view.getRemainingTTL(key)))));
      const failed = (await send('load', () => missing.exec()))?.find(([error]) => error);
      if (failed) throw failed[0] as Error;
      current = subscriber.status === 'ready' && !closed;
      // Complete again once a whole reload lost nothing (neither loaded nor published meanwhile).
      if (lostCount === lostBefore) incomplete = false;
    } catch (error) {
      options.onError?.(`revocation store reload failed: ${(error as Error).message}`);
      // The next reconnection retries; a failed reload on a live connection is retried here.
      if (!closed) setTimeout(() => void resync(), 1000).unref();
    }
  }

  return {
    revoke: (key: string, at: number, ttl: number) =>
      send('revoke', () => client.eval(...raiseArgs(key, at, ttl))),
    lost,
    async remember(key: string, ttl: number) {
      const answer = await send('remember', () =>
        client.set(`${REPLAY_PREFIX}${key}`, '1', 'PX', ttl, 'NX'),
      );
      return answer === 'OK';
    },
    forget: (key: string) => send(undefined, () => client.del(`${REPLAY_PREFIX}${key}`)),
    isCurrent: () => current && client.status === 'ready',
    isComplete: () => !incomplete,
    close() {
      closed = true;
      current = false;
      clearInterval(heartbeat);
      clearTimeout(reloadTimer);
      client.disconnect();
      subscriber.disconnect();
    },
  };
}

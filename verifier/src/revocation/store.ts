// The revocation store: watermarks and the `jti`s of received logout tokens and SETs. Reads are
// synchronous from an in-process view, so the check costs a map lookup per request (cache hits
// included); with a Redis (or Valkey) URL, writes go to that server and every replica mirrors it.
// docs/revocation.md, "Across a Redis outage", says what a user sees when it fails.
import { LRUCache } from 'lru-cache';
import type { Clock } from '../clock.js';
import { openRedis, type RedisSettings } from '../redis/connection.js';
import { ReceiverError } from './receiver-error.js';

export type RevocationStore = ReturnType<typeof createRevocationStore>;

interface StoreOptions {
  /** The shared server; undefined keeps everything in this process. */
  readonly url: string | undefined;
  /** User, password (read at start; wins over one in the URL), CA, replica acknowledgement. */
  readonly redis?: Partial<RedisSettings>;
  /** Bound of the watermark view (`revocation.viewMaxEntries`). */
  readonly viewMaxEntries: number;
  /** Bound of the in-process `jti` set (`revocation.replayMaxEntries`). */
  readonly replayMaxEntries: number;
  readonly now: Clock;
  /** Connection trouble, a full view (never a key: keys hold subjects). */
  readonly onError?: (message: string) => void;
  /** A revocation this replica refused for lack of room (never a key); the caller throttles. */
  readonly onFull?: (message: string) => void;
  /** Seconds one store command took, for the latency histogram. */
  readonly onLatency?: (operation: Operation, seconds: number) => void;
}

type Operation = 'revoke' | 'remember' | 'load';

/** Values with their own expiry (ms), on the store's clock. */
type View = LRUCache<string, number>;

// Every watermark and their channel share the hash slot of `{rev}`, so in a Cluster one node
// holds them all: the script, the reload's MULTI and the write-back pipeline stay in one slot, and
// sharded pub/sub reaches every replica from that node. The `jti`s are one key per command.
const WATERMARK_PREFIX = 'sg:{rev}:wm:';
const REPLAY_PREFIX = 'sg:rev:jti:';
const CHANNEL = 'sg:{rev}:watermarks';
/**
 * The layout before Cluster support, for a rolling upgrade: its keys are loaded (and written back
 * under the new names) on reload, and outside a Cluster its channel is heard and told too.
 */
const LEGACY_PREFIX = 'sg:rev:wm:';
const LEGACY_CHANNEL = 'sg:rev:watermarks';
/** The subscriber is PINGed this often; an answer later than the next PING marks it not current. */
const HEARTBEAT_MS = 1000;
/** While a watermark published by another replica is missing from the view, a reload this often. */
const OVERFLOW_RELOAD_MS = 10_000;

/**
 * Keeps the higher watermark, extends the expiry, and tells the other replicas (ARGV[5]: PUBLISH,
 * or SPUBLISH in a Cluster; ARGV[6], if any, a second channel to PUBLISH on).
 */
const RAISE = `
local held = redis.call('GET', KEYS[1])
if held and tonumber(held) >= tonumber(ARGV[1]) then
  if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
local message = ARGV[2] .. ' ' .. ARGV[1] .. ' ' .. ARGV[4]
redis.call(ARGV[5], ARGV[3], message)
if ARGV[6] then redis.call('PUBLISH', ARGV[6], message) end
return 1
`;

/** Refused keys followed one by one; past this only the latest expiry is kept. */
const REFUSALS_TRACKED = 1024;

/**
 * The revocations this replica refused for lack of room, which it therefore does not enforce:
 * until each is recorded after all (the sender's retry) or every token it could match has expired
 * (its watermark's expiry), the view is not current, so `required` policies refuse.
 */
function createRefusals(nowMs: () => number) {
  const pending = new Map<string, number>();
  /** The latest expiry of a refusal not followed by key (more than REFUSALS_TRACKED at once). */
  let untracked = 0;
  /** The latest expiry of all pending refusals; 0 when none. */
  let until = 0;
  return {
    add(key: string, expiry: number): void {
      if (pending.has(key) || pending.size < REFUSALS_TRACKED)
        pending.set(key, Math.max(expiry, pending.get(key) ?? 0));
      else untracked = Math.max(untracked, expiry);
      until = Math.max(until, expiry);
    },
    recorded(key: string): void {
      if (!pending.delete(key)) return;
      until = untracked;
      for (const expiry of pending.values()) until = Math.max(until, expiry);
    },
    /** One comparison per request while nothing is pending. */
    active(): boolean {
      if (until === 0) return false;
      if (nowMs() < until) return true;
      pending.clear();
      until = untracked = 0;
      return false;
    },
  };
}

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
      // lru-cache counts in milliseconds; its clock follows ours, so a moved test clock expires too.
      perf: { now: () => options.now() * 1000 },
      ttlResolution: 0,
    });
  const view = newView(options.viewMaxEntries);
  // In one process a remembered `jti` is an entry of its own that expires with the replay lifetime.
  const seen = newView(options.replayMaxEntries);
  const shared = options.url === undefined ? undefined : connect(options.url, view, options);
  const full = (what: string) => new ReceiverError('store_unavailable', `${what} is full`);
  const refusals = createRefusals(() => options.now() * 1000);
  /** A revocation the view cannot hold: refused (503, never acknowledged) and not enforced here. */
  const overflow = (key: string, ttl: number): ReceiverError => {
    refusals.add(key, options.now() * 1000 + ttl);
    options.onFull?.(
      `the revocation view is full (${options.viewMaxEntries} watermarks): a revocation was refused, so policies that require revocation checks refuse every token until it is recorded or its tokens have expired; raise revocation.viewMaxEntries`,
    );
    return full('the revocation view');
  };
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
      if (!hasRoom(view, key)) throw overflow(key, ttl);
      await shared?.revoke(key, at, ttl);
      // This replica knows at once, subscriber connected or not. The view filled meanwhile (from
      // the other replicas): the server has it, this replica does not, and says so.
      if (raise(view, key, at, ttl)) return refusals.recorded(key);
      shared?.lost();
      throw overflow(key, ttl);
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
    /**
     * False while the shared store is unreachable (the view may miss recent revocations) and while
     * a revocation refused for lack of room is neither recorded nor expired (the view misses it).
     */
    isCurrent: () => !refusals.active() && (shared?.isCurrent() ?? true),
    /** True while a revocation refused for lack of room keeps the view from being current. */
    isOverflowing: () => refusals.active(),
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

/** The Redis side, through the connection layer both stores share (redis/connection.ts). */
function connect(url: string, view: View, options: StoreOptions) {
  const shared = openRedis(url, options.redis ?? {}, (message) => options.onError?.(message));
  const { client } = shared;
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
  // A subscribed connection can run no other command, so the view is fed by a second one.
  const cluster = shared.topology === 'cluster';
  const subscription = shared.subscribe(cluster ? [CHANNEL] : [CHANNEL, LEGACY_CHANNEL], {
    // "ttl at key": the key, which may hold spaces, is last.
    onMessage(message) {
      const [ttl, at, ...key] = message.split(' ');
      if (!Number.isFinite(Number(ttl)) || !Number.isFinite(Number(at))) return;
      if (!raise(view, key.join(' '), Number(at), Number(ttl))) lost();
    },
    onUp: () => void resync(),
    onDown: () => (current = false),
  });

  // A half-open connection (a peer that stopped answering, a silent network drop) raises no
  // `close`: a PING not answered by the next beat marks the view not current and reconnects.
  let pingSent: number | undefined;
  const heartbeat = setInterval(() => {
    if (!subscription.isUp()) return void (pingSent = undefined);
    if (pingSent === undefined) {
      const sent = (pingSent = performance.now());
      subscription.ping().then(
        () => void (pingSent === sent && (pingSent = undefined)),
        () => undefined,
      );
      return;
    }
    if (performance.now() - pingSent < HEARTBEAT_MS) return;
    pingSent = undefined;
    current = false;
    options.onError?.('the revocation store did not answer PING in time; reconnecting');
    subscription.reconnect();
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
    [
      RAISE,
      1,
      `${WATERMARK_PREFIX}${key}`,
      String(at),
      String(ttl),
      CHANNEL,
      key,
      shared.publishCommand,
      ...(cluster ? [] : [LEGACY_CHANNEL]),
    ] as const;

  /**
   * After each (re)subscription, so nothing published meanwhile is missed: loads every watermark,
   * so a restarted replica catches up. Then writes back what the view holds above the server's (a
   * server restarted empty or flushed, a replica promoted before it had them), so replicas started
   * later load it.
   */
  async function resync(): Promise<void> {
    const lostBefore = lostCount;
    try {
      /** Keys whose watermark the server holds at least as high as the view. */
      const held = new Set<string>();
      const prefixes = cluster ? [WATERMARK_PREFIX] : [WATERMARK_PREFIX, LEGACY_PREFIX];
      await send('load', async () => {
        for (const prefix of prefixes)
          for await (const keys of shared.scan(`${prefix}*`)) {
            if (keys.length === 0) continue;
            const batch = client.multi();
            for (const key of keys) batch.get(key).pttl(key);
            const answers = (await batch.exec()) ?? [];
            keys.forEach((key, i) => {
              const at = Number(answers[2 * i]?.[1]);
              const ttl = Number(answers[2 * i + 1]?.[1]);
              const name = key.slice(prefix.length);
              if (!Number.isFinite(at) || ttl <= 0) return;
              if (!raise(view, name, at, ttl)) return lost();
              if (prefix === WATERMARK_PREFIX && at >= (view.get(name) ?? 0)) held.add(name);
            });
          }
      });
      // One pipeline: ioredis writes it in chunks and the view holds at most `viewMaxEntries`.
      const missing = [...view.entries()].filter(([key]) => !held.has(key));
      if (missing.length > 0)
        await send('load', () =>
          shared.write((batch) => {
            for (const [key, at] of missing)
              batch.eval(...raiseArgs(key, at, Math.max(1, Math.ceil(view.getRemainingTTL(key)))));
          }),
        );
      current = subscription.isUp() && !closed;
      // Complete again once a whole reload lost nothing (neither loaded nor published meanwhile).
      if (lostCount === lostBefore) incomplete = false;
    } catch (error) {
      if (closed) return;
      options.onError?.(`revocation store reload failed: ${(error as Error).message}`);
      // The next reconnection retries; a failed reload on a live connection is retried here.
      setTimeout(() => void resync(), 1000).unref();
    }
  }

  return {
    revoke: (key: string, at: number, ttl: number) =>
      send('revoke', () => shared.write((batch) => batch.eval(...raiseArgs(key, at, ttl)))),
    lost,
    async remember(key: string, ttl: number) {
      const [answer] = await send('remember', () =>
        shared.write((batch) => batch.set(`${REPLAY_PREFIX}${key}`, '1', 'PX', ttl, 'NX')),
      );
      return answer === 'OK';
    },
    forget: (key: string) => send(undefined, () => client.del(`${REPLAY_PREFIX}${key}`)),
    isCurrent: () => current && shared.isReady(),
    isComplete: () => !incomplete,
    close() {
      closed = true;
      current = false;
      clearInterval(heartbeat);
      clearTimeout(reloadTimer);
      shared.close();
      subscription.close();
    },
  };
}

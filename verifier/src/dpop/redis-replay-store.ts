// The shared replay store: one `SET key 1 NX PX ttl` per proof on a Redis (or Valkey) server all
// replicas use, so a proof replayed to another replica within its `iat` window is refused too.
// Commands are never queued while disconnected and time out quickly: an unreachable store makes
// `remember` reject at once, and the caller fails closed for `dpop: required`.
import { Redis } from 'ioredis';
import { ReplayStoreUnavailable, type ReplayStore } from './replay-store.js';

export interface RedisReplayStoreOptions {
  /** `redis://[user:password@]host:port[/db]` or `rediss://…`. */
  readonly url: string;
  /** Redis `AUTH` password read from a file or variable at start; wins over one in the URL. */
  readonly password?: string | undefined;
  /** Milliseconds a command may take before the proof is treated as uncheckable. */
  readonly commandTimeoutMs?: number;
  /** Called on connection trouble (never with a key or a token). */
  readonly onError?: (message: string) => void;
}

const KEY_PREFIX = 'sg:dpop:';

export function createRedisReplayStore(options: RedisReplayStoreOptions): ReplayStore {
  let connectedOnce = false;
  const client = new Redis(options.url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: options.commandTimeoutMs ?? 500,
    connectTimeout: 2000,
    // Keep trying to reconnect, never more often than every 2 s.
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    ...(options.password === undefined ? {} : { password: options.password }),
  });
  client.on('ready', () => {
    connectedOnce = true;
  });
  client.on('error', (error: Error) => options.onError?.(error.message));

  return {
    kind: 'redis',
    async remember(key, ttlSeconds) {
      let answer: string | null;
      try {
        answer = await client.set(
          `${KEY_PREFIX}${key}`,
          '1',
          'PX',
          Math.max(1, Math.ceil(ttlSeconds * 1000)),
          'NX',
        );
      } catch (error) {
        throw new ReplayStoreUnavailable(
          `the replay store did not answer (${(error as Error).message})`,
        );
      }
      return answer === 'OK';
    },
    isReady: () => connectedOnce,
    close() {
      client.disconnect();
      return Promise.resolve();
    },
  };
}

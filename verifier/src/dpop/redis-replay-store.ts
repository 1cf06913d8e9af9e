// The shared replay store (./replay-store.ts has the contract and the in-process one).
import { Redis } from 'ioredis';

/**
 * One `SET sg:dpop:<key> 1 PX ttl NX` per proof, so a proof replayed to another replica within its
 * `iat` window is refused too. Commands are never queued while disconnected and time out after
 * 500 ms: an unreachable store makes `remember` reject at once.
 */
export function createRedisReplayStore(options: {
  /** `redis://[user:password@]host:port[/db]` or `rediss://…`. */
  readonly url: string;
  /** Redis `AUTH` password read from a file or variable at start; wins over one in the URL. */
  readonly password: string | undefined;
  /** Called on connection trouble (never with a key or a token). */
  readonly onError: (message: string) => void;
}) {
  let connectedOnce = false;
  const client = new Redis(options.url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 500,
    connectTimeout: 2000,
    // Keep trying to reconnect, never more often than every 2 s.
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    ...(options.password === undefined ? {} : { password: options.password }),
  });
  client.on('ready', () => (connectedOnce = true));
  client.on('error', (error: Error) => options.onError(error.message));
  return {
    async remember(key: string, ttlSeconds: number) {
      const answer = await client
        .set(`sg:dpop:${key}`, '1', 'PX', Math.ceil(ttlSeconds * 1000), 'NX')
        .catch((error: Error) => {
          throw new Error(`the replay store did not answer (${error.message})`);
        });
      return answer === 'OK';
    },
    isReady: () => connectedOnce,
    close: () => Promise.resolve(client.disconnect()),
  };
}

// The shared replay store (./replay-store.ts has the contract and the in-process one).
import type { Seconds } from '../clock.js';
import { openRedis, type RedisSettings } from '../redis/connection.js';

/**
 * One `SET sg:dpop:<key> 1 PX ttl NX` per proof, so a proof replayed to another replica within its
 * `iat` window is refused too; each key is its own hash slot's business, so a Cluster spreads them.
 * With replicas to wait for (`redis.waitReplicas`), a proof counts as seen only once they hold it,
 * so a failover cannot forget it. Commands are never queued while disconnected and time out: an
 * unreachable store makes `remember` reject at once.
 */
export function createRedisReplayStore(options: {
  /** One of the URL forms of ../redis/url.ts. */
  readonly url: string;
  /** User, password (read at start; wins over one in the URL), CA, replica acknowledgement. */
  readonly redis: RedisSettings;
  /** Called on connection trouble (never with a key or a token). */
  readonly onError: (message: string) => void;
}) {
  let connectedOnce = false;
  const shared = openRedis(options.url, options.redis, options.onError);
  shared.client.on('ready', () => (connectedOnce = true));
  return {
    async remember(key: string, ttlSeconds: Seconds) {
      // `PX`: milliseconds, so a fractional window is not cut to whole seconds.
      const ttl = Math.ceil(ttlSeconds * 1000);
      const [answer] = await shared
        .write((batch) => batch.set(`sg:dpop:${key}`, '1', 'PX', ttl, 'NX'))
        .catch((error: Error) => {
          throw new Error(`the replay store did not answer (${error.message})`);
        });
      return answer === 'OK';
    },
    isReady: () => connectedOnce,
    close: () => Promise.resolve(shared.close()),
  };
}

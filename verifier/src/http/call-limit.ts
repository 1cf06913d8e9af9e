// The per-client limit of /verify calls: a token bucket per client key, checked before any token
// work. Not in NGINX: its limit_req runs before proxy_cache, so it would count edge-cache hits
// too, while the verifier sees only misses and DPoP requests. State is per process: N replicas let
// a client through at up to N times the rate.
import { LRUCache } from 'lru-cache';
import { systemClock, type Clock, type EpochSeconds } from '../clock.js';
import type { VerifierConfig } from '../config/model.js';
import { EDGE_MARKERS } from '../refusals.js';
import type { VerifyAnswer } from './verify-answer.js';

/** A 403, as auth_request takes no 429: NGINX turns the mark into 429 + Retry-After. */
export const LIMITED: VerifyAnswer = {
  status: 403,
  headers: [['X-Auth-Challenge', EDGE_MARKERS.limited]],
};

// Callers without the header came around NGINX (a probe, a misrouted client): their socket address
// would not tell them apart (a unix socket, a pod address only NGINX should reach), so they share
// one bucket, all held together to one client's rate.
const DIRECT = '';

/** At most this many clients are remembered; a forgotten one starts again with a full bucket. */
const MAX_CLIENTS = 100_000;

/** `at`: the time of the last count. */
type Bucket = { tokens: number; at: EpochSeconds };

/**
 * `admit(key)`, true while the client's bucket holds a call (taking one): `burst` + 1 calls,
 * refilled at `rate` per second, what NGINX's `limit_req … burst=B nodelay` admits. At most
 * MAX_CLIENTS buckets live at once, the least recently seen going first, so a flood of distinct
 * addresses keeps memory bounded; a forgotten client starts again with a full bucket.
 */
export function createCallLimit(
  settings: VerifierConfig['callLimit'],
  now: Clock = systemClock,
  maxClients = MAX_CLIENTS,
): (clientKey: string | undefined) => boolean {
  const capacity = settings.burst + 1;
  // No TTL and no delete: how full a bucket is comes from `at` and `now` alone, so an old bucket is
  // a full one, overwritten in place. lru-cache 11 clears the whole cache (filling all `max` slots
  // of its arrays, ~700 µs at 100,000) whenever it deletes its last entry, which an expiring TTL
  // did on every call of a single busy client.
  const buckets = new LRUCache<string, Bucket>({ max: maxClients });
  // The last client's bucket kept at hand: a call of the same client as the one before finds it
  // with one string comparison. Exact: that client is the most recent in the LRU already, and
  // only a call of another client (another key here) can evict it.
  let lastKey: string | undefined;
  let last: Bucket | undefined;
  return function admit(clientKey) {
    const key = clientKey ?? DIRECT;
    const time = now();
    const bucket = key === lastKey ? last : buckets.get(key);
    const tokens =
      bucket === undefined
        ? capacity
        : Math.min(capacity, bucket.tokens + Math.max(0, time - bucket.at) * settings.rate);
    lastKey = key;
    last = bucket;
    if (tokens < 1) return false;
    if (bucket === undefined) buckets.set(key, (last = { tokens: tokens - 1, at: time }));
    else {
      // The same object updated: no allocation and no LRU write beyond the recency `get` gave.
      bucket.tokens = tokens - 1;
      bucket.at = time;
    }
    return true;
  };
}

// The per-client limit of /verify calls: a token bucket per client key, checked before any token
// work. Not in NGINX: its limit_req runs before proxy_cache, so it would count edge-cache hits
// too, while the verifier sees only misses and DPoP requests. State is per process: N replicas let
// a client through at up to N times the rate.
import { LRUCache } from 'lru-cache';
import { systemClock, type Clock, type EpochSeconds } from '../clock.js';
import type { VerifierConfig } from '../config/model.js';
import type { VerifyAnswer } from './verify-answer.js';

/** A 403, as auth_request takes no 429: NGINX turns the mark into 429 + Retry-After. */
export const LIMITED: VerifyAnswer = { status: 403, headers: [['X-Auth-Challenge', 'limited']] };

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
 * refilled at `rate` per second, what NGINX's `limit_req … burst=B nodelay` admits. An entry lives
 * only until its bucket would be full again (a missing entry *is* a full bucket), and at most
 * MAX_CLIENTS live at once, so a flood of distinct addresses keeps memory bounded.
 */
export function createCallLimit(
  settings: VerifierConfig['callLimit'],
  now: Clock = systemClock,
  maxClients = MAX_CLIENTS,
): (clientKey: string | undefined) => boolean {
  const capacity = settings.burst + 1;
  // The TTL is only for memory; how full a bucket is comes from `at` and `now` alone.
  const buckets = new LRUCache<string, Bucket>({ max: maxClients, ttlAutopurge: false });
  return function admit(clientKey) {
    const key = clientKey ?? DIRECT;
    const time = now();
    const bucket = buckets.get(key);
    const tokens =
      bucket === undefined
        ? capacity
        : Math.min(capacity, bucket.tokens + Math.max(0, time - bucket.at) * settings.rate);
    if (tokens < 1) return false;
    const left = tokens - 1;
    // lru-cache counts TTLs in milliseconds.
    const refilled = ((capacity - left) / settings.rate) * 1000;
    buckets.set(key, { tokens: left, at: time }, { ttl: Math.ceil(refilled) });
    return true;
  };
}

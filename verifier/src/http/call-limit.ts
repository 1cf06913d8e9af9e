// The per-client limit of /verify calls: a token bucket per client key, checked before any token
// work. It lives here and not in NGINX because NGINX's limit_req runs before proxy_cache looks up
// the edge cache, so a limit in /_verify would count edge-cache hits too; the verifier by
// construction sees only misses and DPoP requests. State is per process: each replica limits on
// its own, so N replicas let a client through at up to N times the rate.
import { LRUCache } from 'lru-cache';
import type { VerifierConfig } from '../config/model.js';
import type { ContractHeader } from './contract.js';
import type { VerifyAnswer } from './verify-answer.js';

/** The client key NGINX computes from `$remote_addr` after real_ip (an IPv6 client by its /64). */
export const CLIENT_KEY_HEADER: ContractHeader = {
  name: 'X-SG-Client',
  on: 'always',
  meaning:
    "the client key (the address after `real_ip`, an IPv6 client by its /64) the per-client call limit counts (`VERIFIER_VERIFY_RATE`); never part of a decision or of the edge cache's key",
};
/** Lower case, as both HTTP libraries look headers up. */
export const CLIENT_KEY = CLIENT_KEY_HEADER.name.toLowerCase();

/** The answer's row of the contract (docs/architecture.md). */
export const LIMITED_HEADER: ContractHeader = {
  name: 'X-Auth-Challenge',
  on: '403 (limited)',
  meaning:
    '`limited`: the per-client call limit refused before any token work; no `X-Accel-Expires`, so never stored at the edge; NGINX answers the client 429 + `Retry-After`',
};

/**
 * The refusal, as the NGINX limiter server answered before this module: a 403 marked `limited`
 * (auth_request understands only 2xx/401/403; NGINX turns the mark into 429 + Retry-After), with
 * no X-Accel-Expires, so the edge cache never stores it.
 */
export const LIMITED: VerifyAnswer = { status: 403, headers: [['X-Auth-Challenge', 'limited']] };

/**
 * A caller without the header reached the verifier without NGINX (a probe, a misrouted client):
 * all of them share one bucket. Their socket address would not tell them apart (the verifier
 * listens on a unix socket or a pod address NGINX alone should reach), and one shared bucket holds
 * all such callers together to one client's rate.
 */
const DIRECT = '';

/** At most this many clients are remembered; a forgotten one starts again with a full bucket. */
const MAX_CLIENTS = 100_000;

interface Bucket {
  tokens: number;
  /** Milliseconds since the epoch of the last count. */
  at: number;
}

/** `admit(key)` is true while the client's bucket holds a call, and takes one from it. */
export type CallLimit = (clientKey: string | undefined) => boolean;

/**
 * A bucket of `burst` + 1 calls per client, refilled at `rate` per second: what NGINX's
 * `limit_req … burst=B nodelay` admits (the call itself and B more at once). An entry lives only
 * until its bucket would be full again (a missing entry *is* a full bucket), and at most
 * MAX_CLIENTS live at once, so a flood of distinct addresses keeps memory bounded.
 */
export function createCallLimit(
  settings: VerifierConfig['callLimit'],
  now: () => number = Date.now,
  maxClients = MAX_CLIENTS,
): CallLimit {
  const capacity = settings.burst + 1;
  const perMs = settings.rate / 1000;
  // The TTL is only for memory; how full a bucket is comes from `at` and `now` alone.
  const buckets = new LRUCache<string, Bucket>({ max: maxClients, ttlAutopurge: false });
  return function admit(clientKey) {
    const key = clientKey ?? DIRECT;
    const time = now();
    const bucket = buckets.get(key);
    const tokens =
      bucket === undefined
        ? capacity
        : Math.min(capacity, bucket.tokens + Math.max(0, time - bucket.at) * perMs);
    if (tokens < 1) return false;
    const left = tokens - 1;
    const ttl = Math.ceil((capacity - left) / perMs);
    if (bucket === undefined) buckets.set(key, { tokens: left, at: time }, { ttl });
    else {
      bucket.tokens = left;
      bucket.at = time;
      buckets.set(key, bucket, { ttl });
    }
    return true;
  };
}

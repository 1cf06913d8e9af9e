// The decision cache: verified tokens remembered per policy so a repeat request costs one SHA-256
// and one LRU lookup instead of a signature check.
//
// Invariants (each has a test in decision-cache.test.ts / authorize.test.ts):
// 1. Key = SHA-256 over the policy name and the token. The token itself is never stored.
// 2. An entry's TTL never reaches past the token's `exp`, nor past `maxTtl`.
// 3. `exp` and `nbf` are re-checked against the clock on every hit; a hit outside the window is
//    dropped and the token goes through full verification again.
// 4. Bounded by entry count and by (estimated) bytes; least recently used entries go first.
// 5. Concurrent misses for one key share one verification (`share`).
// 6. When a key leaves an issuer's JWKS, every entry verified with that `kid` is dropped.
// 7. Only outcomes of a verified token are stored (allow, and 403 for missing scopes); 401s are
//    never cached, so a key that appears later is picked up at once. Grants (CloudFront cookies)
//    are never stored: they are added after the cache on every allowed request.
// 8. A cached entry never satisfies a policy it was not checked against: the policy is part of
//    the key, is stored in the entry, and `get` answers only when the asking policy is that one.
// 9. A hit past its issuer's trust horizon (the key set's last good fetch + `maxStale`) is a miss:
//    with the IdP down that long a fresh token gets `keys_unavailable`, and so does a cached one.
import { LRUCache } from 'lru-cache';
import { shared, type Decision } from './decision.js';
import type { Identity } from '../token/identity.js';
import { createInterner } from '../intern.js';
import type { SessionClaims } from '../revocation/subjects.js';

/** One outcome to cache: a decision about a verified token, the policy it was checked against,
 *  and the token's time window and key id. */
export interface CacheEntry {
  readonly policy: string;
  readonly decision: Decision & { readonly identity: Identity };
  /** Seconds since the epoch. */
  readonly exp: number;
  /** Seconds since the epoch, tolerance applied; undefined when the token has none. */
  readonly nbf: number | undefined;
  readonly kid: string | undefined;
  /** Seconds since the epoch: `exp`, or earlier when the key's trust ends first. */
  readonly reusableUntil?: number | undefined;
}

/**
 * A decision minus its subject: what thousands of cached tokens have in common, stored once.
 */
interface Shape {
  readonly policy: string;
  readonly outcome: Decision['outcome'];
  readonly reason: Decision['reason'];
  readonly client: string;
  readonly scopes: readonly string[];
  readonly issuer: string;
  readonly requiredScopes: readonly string[];
}

/**
 * What is stored: the subject and a shared Shape instead of the decision's objects, since
 * 100,000 of these must fit a small memory budget (about 200 bytes each, keys and LRU included).
 */
interface StoredEntry {
  readonly sub: string;
  /** `cnf.jkt` of a DPoP-bound token; its proof is still checked on every request. */
  readonly jkt: string | undefined;
  /** `iat`/`sid`/`email` for the revocation check on every hit; one shared object when empty. */
  readonly session: SessionClaims | undefined;
  readonly shape: Shape;
  readonly exp: number;
  readonly nbf: number | undefined;
  readonly kid: string | undefined;
  readonly until: number;
}

const sharedShape = createInterner<Shape>(10_000);
const NO_GRANTS: readonly never[] = Object.freeze([]);

function shapeOf(policy: string, decision: CacheEntry['decision']): Shape {
  const { identity } = decision;
  const key = JSON.stringify([
    policy,
    decision.reason,
    identity.client,
    identity.scopes,
    identity.issuer,
    decision.requiredScopes,
  ]);
  return sharedShape(key, () => ({
    policy: shared(policy),
    outcome: decision.outcome,
    reason: decision.reason,
    client: identity.client,
    scopes: identity.scopes,
    issuer: identity.issuer,
    requiredScopes: decision.requiredScopes,
  }));
}

/** The decision a stored entry stands for; built per cache hit (a few short-lived objects). */
function decisionOf(entry: StoredEntry): Decision {
  const { shape } = entry;
  const identity = {
    sub: entry.sub,
    client: shape.client,
    scopes: shape.scopes,
    issuer: shape.issuer,
  };
  const common = {
    identity,
    grants: NO_GRANTS,
    requiredScopes: shape.requiredScopes,
    reusableUntil: entry.until,
    // Only a bound token's decision carries `jkt`; a bearer token's stays the plain shape.
    ...(entry.jkt === undefined ? {} : { jkt: entry.jkt }),
    ...(entry.session === undefined ? {} : { session: entry.session }),
  };
  return shape.outcome === 'allow'
    ? { outcome: 'allow', reason: 'allowed', ...common, expires: entry.exp }
    : {
        outcome: 'deny',
        reason: shape.reason as Exclude<Decision['reason'], 'allowed'>,
        ...common,
        expires: undefined,
      };
}

export interface DecisionCacheOptions {
  readonly maxEntries: number;
  readonly maxBytes: number;
  /** Seconds. */
  readonly maxTtl: number;
  /** Milliseconds since the epoch. */
  readonly now: () => number;
  /**
   * Milliseconds since the epoch until which an issuer's keys are trusted; undefined for an
   * issuer without a key set (introspection, user-info), whose entries only `exp` bounds.
   */
  readonly trustedUntil?: ((issuer: string) => number | undefined) | undefined;
}

export interface DecisionCache {
  /**
   * The decision cached for `policy`, or undefined: missing, stored for another policy, or outside
   * its time window (then dropped).
   */
  get(key: string, policy: string): Decision | undefined;
  set(key: string, entry: CacheEntry): void;
  /** Runs `produce` once for concurrent callers with the same key. */
  share<T>(key: string, produce: () => Promise<T>): Promise<T>;
  /** Drops entries of `issuer` verified with one of `kids`, and its entries without a `kid`. */
  dropKeys(issuer: string, kids: ReadonlySet<string | undefined>): number;
  readonly size: number;
  readonly bytes: number;
  clear(): void;
}

/**
 * Heap bytes per entry besides its key and subject (stored entry, LRU bookkeeping), measured on
 * Node 20 with 100,000 entries.
 */
const ENTRY_OVERHEAD_BYTES = 160;
/** The session claims object (three fields) on top of its strings. */
const SESSION_OVERHEAD_BYTES = 40;

function estimateBytes(entry: StoredEntry, key: string): number {
  const session = entry.session;
  const sessionBytes =
    session === undefined
      ? 0
      : SESSION_OVERHEAD_BYTES + (session.sid?.length ?? 0) + (session.email?.length ?? 0);
  return (
    ENTRY_OVERHEAD_BYTES + key.length + entry.sub.length + (entry.jkt?.length ?? 0) + sessionBytes
  );
}

export function createDecisionCache(options: DecisionCacheOptions): DecisionCache {
  const { now, trustedUntil } = options;
  const lru = new LRUCache<string, StoredEntry>({
    max: options.maxEntries,
    maxSize: options.maxBytes,
    sizeCalculation: estimateBytes,
    // lru-cache's TTL clock follows ours, so a moved test clock expires entries too.
    perf: { now },
    ttlResolution: 0,
  });
  const pending = new Map<string, Promise<unknown>>();

  return {
    get(key, policy) {
      const entry = lru.get(key);
      if (entry === undefined || entry.shape.policy !== policy) return undefined;
      const at = now();
      const seconds = at / 1000;
      if (
        seconds >= entry.exp ||
        (entry.nbf !== undefined && seconds < entry.nbf) ||
        // The key set trusts its keys up to and including the horizon (key-set.ts).
        at > (trustedUntil?.(entry.shape.issuer) ?? Infinity)
      ) {
        lru.delete(key);
        return undefined;
      }
      return decisionOf(entry);
    },
    set(key, { policy, decision, exp, nbf, kid, reusableUntil }) {
      const ttl = Math.min(exp * 1000 - now(), options.maxTtl * 1000);
      if (ttl < 1) return;
      const stored = {
        sub: decision.identity.sub,
        jkt: decision.jkt,
        session: decision.session,
        shape: shapeOf(policy, decision),
        exp,
        nbf,
        kid,
        until: Math.min(exp, reusableUntil ?? exp),
      };
      lru.set(key, stored, { ttl: Math.floor(ttl) });
    },
    share<T>(key: string, produce: () => Promise<T>): Promise<T> {
      const running = pending.get(key) as Promise<T> | undefined;
      if (running) return running;
      const started = produce().finally(() => pending.delete(key));
      pending.set(key, started);
      return started;
    },
    dropKeys(issuer, kids) {
      const doomed: string[] = [];
      for (const [key, entry] of lru.entries()) {
        if (entry.shape.issuer !== issuer) continue;
        // A token without `kid` may have matched any key, so it goes whenever a key goes.
        if (entry.kid === undefined || kids.has(entry.kid)) doomed.push(key);
      }
      for (const key of doomed) lru.delete(key);
      return doomed.length;
    },
    get size() {
      return lru.size;
    },
    get bytes() {
      return lru.calculatedSize;
    },
    clear() {
      lru.clear();
    },
  };
}

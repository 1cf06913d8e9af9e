// Verified tokens remembered, so a repeat request costs one SHA-256 and one LRU lookup instead of
// a signature check. It holds what a token proved, never what a policy made of it: authorize.ts
// evaluates the policy on every request. Invariants (tests here and in authorize.test.ts):
// 1. Key = SHA-256 of the token after the opaque verifier that read it and the key epoch, if any;
//    the token is not stored.
// 2. An entry's TTL never reaches past the token's `exp`, nor past `maxTtl`.
// 3. `exp`, `nbf` and the issuer's trust horizon (last good JWKS fetch + `maxStale`) are re-checked
//    on every hit; a hit outside them is dropped and the token is verified afresh (so with the IdP
//    down that long a cached token gets `keys_unavailable` like a fresh one).
// 4. Bounded by entry count and by (estimated) bytes; least recently used entries go first.
// 5. Concurrent misses for one token (and policy) share one verification (token-verifier.ts).
// 6. When a key leaves an issuer's JWKS, every entry verified with that `kid` is dropped.
// 7. Only verified tokens are stored: never a refusal (a key that appears later is picked up at
//    once), nor a grant (a plugin's cookies).
// 8. A configuration reload that changes an issuer's settings drops that issuer's entries (all of
//    them when the step-up claims start or stop being read) and starts a new key epoch, so a
//    verification in flight under the old settings is never found (token-verifier.ts); a policy
//    change drops nothing.
import { LRUCache } from 'lru-cache';
import type { Clock, EpochSeconds } from '../clock.js';
import type { VerifierConfig } from '../config/model.js';
import { createInterner } from '../intern.js';
import type { Identity } from './identity.js';
import type { VerifiedToken } from './verified-token.js';

/**
 * The subject and a shared identity shape (client, scopes, issuer) instead of the token's objects:
 * 100,000 entries must fit a small memory budget (about 200 bytes each, keys and LRU included).
 */
interface StoredEntry extends Omit<VerifiedToken, 'identity'> {
  readonly sub: string;
  readonly shape: Omit<Identity, 'sub'>;
}

// One copy of what thousands of tokens share (JSON.parse gives each token strings of its own).
const sharedShape = createInterner<Omit<Identity, 'sub'>>(10_000);
const sharedKid = createInterner<string>(10_000);

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** The `cache` section's bounds (`maxTtl` in seconds), the clock and the keys' trust. */
type CacheBounds = Pick<VerifierConfig['cache'], 'maxEntries' | 'maxBytes' | 'maxTtl'>;
interface TokenCacheOptions extends CacheBounds {
  readonly now: Clock;
  /** Until when an issuer's keys are trusted; undefined for opaque issuers (no keys). */
  readonly trustedUntilSeconds?: ((issuer: string) => EpochSeconds | undefined) | undefined;
}

export type TokenCache = ReturnType<typeof createTokenCache>;

/** Heap bytes per entry besides its key and strings (entry, LRU bookkeeping), on Node 20. */
const ENTRY_OVERHEAD_BYTES = 160;
/** The session claims object (three fields) on top of its strings. */
const SESSION_OVERHEAD_BYTES = 40;
/** The step-up claims object and its two arrays, on top of their strings. */
const AUTHENTICATION_OVERHEAD_BYTES = 100;

function estimateBytes({ sub, jkt, session, authentication }: StoredEntry, key: string): number {
  let bytes = ENTRY_OVERHEAD_BYTES + key.length + sub.length + (jkt?.length ?? 0);
  if (authentication !== undefined)
    bytes += [...authentication.acr, ...authentication.amr].reduce(
      (sum, word) => sum + word.length,
      AUTHENTICATION_OVERHEAD_BYTES,
    );
  if (session === undefined) return bytes;
  return bytes + SESSION_OVERHEAD_BYTES + (session.sid?.length ?? 0) + (session.email?.length ?? 0);
}

export function createTokenCache(options: TokenCacheOptions) {
  const { now, trustedUntilSeconds } = options;
  /**
   * The current operation's reading of our clock, taken when lru-cache or this cache first asks:
   * a hit reads the system clock once for lru-cache's TTL and the window checks, a miss not at all.
   * Every operation below starts by forgetting the last one's.
   */
  let reading: EpochSeconds | undefined;
  const clock = (): EpochSeconds => (reading ??= now());
  /**
   * The shared shape of an identity. A run of tokens of one client and scope list (the scope list
   * shared by identity.ts, so compared by reference) reuses the last shape with no key built; any
   * other is found by a JSON array, one spelling per shape whatever characters a scope holds.
   */
  let lastShape: StoredEntry['shape'] | undefined;
  function shapeOf(issuer: string, client: string, scopes: readonly string[]) {
    const last = lastShape;
    if (
      last !== undefined &&
      last.scopes === scopes &&
      last.client === client &&
      last.issuer === issuer
    )
      return last;
    return (lastShape = sharedShape(JSON.stringify([issuer, client, scopes]), () => ({
      client,
      scopes,
      issuer,
    })));
  }
  const lru = new LRUCache<string, StoredEntry>({
    max: options.maxEntries,
    maxSize: options.maxBytes,
    sizeCalculation: estimateBytes,
    // lru-cache's TTL clock (milliseconds) follows ours, so a moved test clock expires entries too.
    perf: { now: () => clock() * 1000 },
    ttlResolution: 0,
  });

  return {
    /** The verified token under `key`; undefined when missing or outside its window (dropped). */
    get(key: string): VerifiedToken | undefined {
      reading = undefined;
      const entry = lru.get(key);
      if (entry === undefined) return undefined;
      const at = clock();
      if (
        at >= entry.exp ||
        (entry.nbf !== undefined && at < entry.nbf) ||
        // The key set trusts its keys up to and including the horizon (key-set.ts).
        at > (trustedUntilSeconds?.(entry.shape.issuer) ?? Infinity)
      ) {
        lru.delete(key);
        return undefined;
      }
      // Built field by field, not by rest and spread: one object shape for every hit, and no
      // copy loop over the entry's keys on the cached path.
      const { shape } = entry;
      return {
        identity: {
          sub: entry.sub,
          client: shape.client,
          scopes: shape.scopes,
          issuer: shape.issuer,
        },
        exp: entry.exp,
        nbf: entry.nbf,
        kid: entry.kid,
        keyTrustedUntil: entry.keyTrustedUntil,
        jkt: entry.jkt,
        session: entry.session,
        authentication: entry.authentication,
      };
    },
    /**
     * Remembers what `token` proved under `key`; its session claims only `withSession` (what a
     * revocation receiver reads), so the caller never copies the token to leave them out.
     */
    set(key: string, token: VerifiedToken, withSession = true): void {
      reading = undefined;
      // lru-cache counts TTLs in milliseconds.
      const ttl = Math.min(token.exp - clock(), options.maxTtl) * 1000;
      if (ttl < 1) return;
      const { identity, kid } = token;
      const { client, scopes, issuer } = identity;
      const stored: Mutable<StoredEntry> = {
        sub: identity.sub,
        shape: shapeOf(issuer, client, scopes),
        exp: token.exp,
        nbf: token.nbf,
        kid: kid === undefined ? undefined : sharedKid(kid, () => kid),
        keyTrustedUntil: token.keyTrustedUntil,
      };
      // Added only when present: a bearer token's entry holds no DPoP, session or step-up fields
      // (step-up claims are read only for a gate with a step-up policy, which checks them on
      // every hit: decision/step-up.ts), and every such entry keeps the one object shape.
      if (token.jkt !== undefined) stored.jkt = token.jkt;
      if (withSession && token.session !== undefined) stored.session = token.session;
      if (token.authentication !== undefined) stored.authentication = token.authentication;
      lru.set(key, stored, { ttl: Math.floor(ttl) });
    },
    /** Drops entries of `issuer` verified with one of `kids`, and its entries without a `kid`. */
    dropKeys(issuer: string, kids: ReadonlySet<string | undefined>): number {
      reading = undefined;
      const doomed: string[] = [];
      for (const [key, entry] of lru.entries()) {
        if (entry.shape.issuer !== issuer) continue;
        // A token without `kid` may have matched any key, so it goes whenever a key goes.
        if (entry.kid === undefined || kids.has(entry.kid)) doomed.push(key);
      }
      for (const key of doomed) lru.delete(key);
      return doomed.length;
    },
    /**
     * Drops every entry verified by one of `issuers` (their settings changed in a reload: what a
     * token proved under the old ones proves nothing under the new); `all` drops every entry.
     */
    dropIssuers(issuers: ReadonlySet<string> | 'all'): number {
      if (issuers === 'all') {
        const dropped = lru.size;
        lru.clear();
        return dropped;
      }
      reading = undefined;
      const doomed: string[] = [];
      for (const [key, entry] of lru.entries())
        if (issuers.has(entry.shape.issuer)) doomed.push(key);
      for (const key of doomed) lru.delete(key);
      return doomed.length;
    },
    get size() {
      return lru.size;
    },
    get bytes() {
      return lru.calculatedSize;
    },
  };
}

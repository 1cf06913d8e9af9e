// Prometheus metrics (prom-client) in a registry of our own. The hot path only bumps plain numbers;
// they are handed to prom-client when /metrics is scraped, because prom-client hashes the label set
// on every inc() and a cached allow should cost less than that.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { statusFor, type DenyCode } from './errors.js';
import type { JwksFetchOutcome } from './token/key-set.js';

export type Metrics = ReturnType<typeof createMetrics>;

export type RevocationChannel = 'backchannel_logout' | 'ssf_push' | 'ssf_poll';

// Label sets of the per-request counters, built on the first use of a key (not per request).
const lookupLabels = (outcome: string) => ({ outcome });
const noLabels = () => ({});
const decisionLabels = (reason: 'allowed' | DenyCode) => ({
  result: reason === 'allowed' ? 'allow' : `deny_${statusFor(reason)}`,
  reason,
});

export function createMetrics(options: { defaultMetrics?: boolean } = {}) {
  const registry = new Registry();
  if (options.defaultMetrics !== false)
    collectDefaultMetrics({ register: registry, prefix: 'verifier_' });

  /** A counter the hot path bumps as a plain number per label set; prom-client sees it on scrape. */
  function pendingCounter(name: string, help: string, labelNames: readonly string[] = []) {
    const counts = new Map<string, { labels: Record<string, string>; pending: number }>();
    new Counter({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        for (const count of counts.values()) {
          if (count.pending > 0) this.inc(count.labels, count.pending);
          count.pending = 0;
        }
      },
    });
    return <K extends string>(key: K, labelsOf: (key: K) => Record<string, string>) => {
      let count = counts.get(key);
      if (count === undefined) counts.set(key, (count = { labels: labelsOf(key), pending: 0 }));
      count.pending++;
    };
  }
  /** A gauge read when scraped; left alone while `read` has nothing to say. */
  function readGauge(name: string, help: string, read: () => number | undefined) {
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        const value = read();
        if (value !== undefined) this.set(value);
      },
    });
  }

  const countDecision = pendingCounter(
    'verifier_decisions_total',
    'Answers of /verify by result (allow, deny_401, deny_403) and reason.',
    ['result', 'reason'],
  );
  const countLookup = pendingCounter(
    'verifier_cache_lookups_total',
    'Decision cache lookups by outcome (hit, miss).',
    ['outcome'],
  );
  let readCache: () => { entries: number; bytes: number } = () => ({ entries: 0, bytes: 0 });
  readGauge('verifier_cache_entries', 'Decisions currently cached.', () => readCache().entries);
  readGauge(
    'verifier_cache_bytes',
    'Estimated bytes held by the decision cache.',
    () => readCache().bytes,
  );
  const jwksFetches = new Counter({
    name: 'verifier_jwks_fetches_total',
    help: 'JWKS fetches by issuer and outcome (ok, error, invalid).',
    labelNames: ['issuer', 'outcome'] as const,
    registers: [registry],
  });
  let readKeySets: () => ReadonlyArray<{ issuer: string; ready: boolean }> = () => [];
  new Gauge({
    name: 'verifier_jwks_ready',
    help: '1 while the issuer has a usable key set.',
    labelNames: ['issuer'] as const,
    registers: [registry],
    collect() {
      for (const { issuer, ready } of readKeySets()) this.set({ issuer }, ready ? 1 : 0);
    },
  });
  const verification = new Histogram({
    name: 'verifier_verification_seconds',
    help: 'Time of one full token verification (cache misses only).',
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1, 5],
    registers: [registry],
  });

  const revocations = {
    received: new Counter({
      name: 'verifier_revocations_received_total',
      help: 'Logout tokens and SETs received, by channel (backchannel_logout, ssf_push, ssf_poll).',
      labelNames: ['channel'] as const,
      registers: [registry],
    }),
    applied: new Counter({
      name: 'verifier_revocations_applied_total',
      help: 'Logout tokens and SETs verified and acted on, by channel and event type.',
      labelNames: ['channel', 'event'] as const,
      registers: [registry],
    }),
    refused: new Counter({
      name: 'verifier_revocations_refused_total',
      help: 'Logout tokens and SETs refused, by channel and reason.',
      labelNames: ['channel', 'reason'] as const,
      registers: [registry],
    }),
    store: new Histogram({
      name: 'verifier_revocation_store_seconds',
      help: 'Time of one shared revocation store command, by operation.',
      labelNames: ['operation'] as const,
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1],
      registers: [registry],
    }),
  };
  const countUnchecked = pendingCounter(
    'verifier_revocation_unchecked_total',
    'Tokens served while the shared revocation store was unreachable (`checked` policies).',
  );
  let readRevocation: (() => { watermarks: number; current: boolean }) | undefined;
  readGauge(
    'verifier_revocation_watermarks',
    'Revocation watermarks held (per subject, session or e-mail address).',
    () => readRevocation?.().watermarks,
  );
  readGauge(
    'verifier_revocation_store_current',
    '1 while the revocation view is current (0: the shared store is unreachable).',
    () => (readRevocation === undefined ? undefined : readRevocation().current ? 1 : 0),
  );

  return {
    registry,
    /** One answer of /verify. */
    decision: (reason: 'allowed' | DenyCode) => countDecision(reason, decisionLabels),
    cacheHit: () => countLookup('hit', lookupLabels),
    cacheMiss: () => countLookup('miss', lookupLabels),
    jwksFetch: (issuer: string, outcome: JwksFetchOutcome) =>
      jwksFetches.labels(issuer, outcome).inc(),
    /** Seconds spent in one full (uncached) verification. */
    observeVerification: (seconds: number) => verification.observe(seconds),
    /** Reads cache size and bytes when scraped. */
    watchCache(read: typeof readCache) {
      readCache = read;
    },
    /** Reads key-set readiness when scraped. */
    watchKeySets(read: typeof readKeySets) {
      readKeySets = read;
    },
    /** Pushed revocation (revocation/): one logout token or SET arrived on `channel`. */
    revocationReceived: (channel: RevocationChannel) => revocations.received.labels(channel).inc(),
    /** It was verified and acted on (`event`: backchannel-logout, session-revoked, …). */
    revocationApplied: (channel: RevocationChannel, event: string) =>
      revocations.applied.labels(channel, event).inc(),
    /** It was refused (`reason`: the error code answered or logged). */
    revocationRefused: (channel: RevocationChannel, reason: string) =>
      revocations.refused.labels(channel, reason).inc(),
    /** A token served without a current revocation view (shared store unreachable, `checked`). */
    revocationUnchecked: () => countUnchecked('', noLabels),
    /** Seconds one shared-store command took. */
    observeRevocationStore: (operation: string, seconds: number) =>
      revocations.store.labels(operation).observe(seconds),
    /** Reads the store's watermark count and whether its view is current, when scraped. */
    watchRevocation(read: NonNullable<typeof readRevocation>) {
      readRevocation = read;
    },
    render: () => registry.metrics(),
  };
}

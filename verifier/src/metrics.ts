// Prometheus metrics (prom-client) in a registry of our own. The hot path only bumps plain numbers;
// they are handed to prom-client when /metrics is scraped, because prom-client hashes the label set
// on every inc() and a cached allow should cost less than that.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { statusFor, type DenyCode } from './errors.js';
import type { JwksFetchOutcome } from './token/key-set.js';

export interface Metrics {
  readonly registry: Registry;
  /** One answer of /verify. */
  decision(reason: 'allowed' | DenyCode): void;
  cacheHit(): void;
  cacheMiss(): void;
  jwksFetch(issuer: string, outcome: JwksFetchOutcome): void;
  /** Seconds spent in one full (uncached) verification. */
  observeVerification(seconds: number): void;
  setTransport(name: 'uws' | 'node'): void;
  /** Reads cache size and bytes when scraped. */
  watchCache(read: () => { entries: number; bytes: number }): void;
  /** Reads key-set readiness when scraped. */
  watchKeySets(read: () => ReadonlyArray<{ issuer: string; ready: boolean }>): void;
  /** Pushed revocation (revocation/): one logout token or SET arrived on `channel`. */
  revocationReceived(channel: RevocationChannel): void;
  /** It was verified and acted on (`event`: backchannel-logout, session-revoked, …). */
  revocationApplied(channel: RevocationChannel, event: string): void;
  /** It was refused (`reason`: the error code answered or logged). */
  revocationRefused(channel: RevocationChannel, reason: string): void;
  /** A token served without a current revocation view (shared store unreachable, `checked`). */
  revocationUnchecked(): void;
  /** Seconds one shared-store command took. */
  observeRevocationStore(operation: string, seconds: number): void;
  /** Reads the store's watermark count and whether its view is current, when scraped. */
  watchRevocation(read: () => { watermarks: number; current: boolean }): void;
  render(): Promise<string>;
}

export type RevocationChannel = 'backchannel_logout' | 'ssf_push' | 'ssf_poll';

export function createMetrics(options: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics !== false)
    collectDefaultMetrics({ register: registry, prefix: 'verifier_' });
  const decisionCounts = new Map<
    string,
    { labels: { result: string; reason: string }; pending: number }
  >();
  new Counter({
    name: 'verifier_decisions_total',
    help: 'Answers of /verify by result (allow, deny_401, deny_403) and reason.',
    labelNames: ['result', 'reason'] as const,
    registers: [registry],
    collect() {
      for (const count of decisionCounts.values()) {
        if (count.pending > 0) this.inc(count.labels, count.pending);
        count.pending = 0;
      }
    },
  });
  const lookups = { hit: 0, miss: 0 };
  new Counter({
    name: 'verifier_cache_lookups_total',
    help: 'Decision cache lookups by outcome (hit, miss).',
    labelNames: ['outcome'] as const,
    registers: [registry],
    collect() {
      for (const outcome of ['hit', 'miss'] as const) {
        if (lookups[outcome] > 0) this.inc({ outcome }, lookups[outcome]);
        lookups[outcome] = 0;
      }
    },
  });
  let readCache: () => { entries: number; bytes: number } = () => ({ entries: 0, bytes: 0 });
  new Gauge({
    name: 'verifier_cache_entries',
    help: 'Decisions currently cached.',
    registers: [registry],
    collect() {
      this.set(readCache().entries);
    },
  });
  new Gauge({
    name: 'verifier_cache_bytes',
    help: 'Estimated bytes held by the decision cache.',
    registers: [registry],
    collect() {
      this.set(readCache().bytes);
    },
  });
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
  const transport = new Gauge({
    name: 'verifier_transport_info',
    help: 'The HTTP transport in use (1 for the active one).',
    labelNames: ['transport'] as const,
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
  let unchecked = 0;
  new Counter({
    name: 'verifier_revocation_unchecked_total',
    help: 'Tokens served while the shared revocation store was unreachable (`checked` policies).',
    registers: [registry],
    collect() {
      if (unchecked > 0) this.inc(unchecked);
      unchecked = 0;
    },
  });
  let readRevocation: (() => { watermarks: number; current: boolean }) | undefined;
  new Gauge({
    name: 'verifier_revocation_watermarks',
    help: 'Revocation watermarks held (per subject, session or e-mail address).',
    registers: [registry],
    collect() {
      if (readRevocation) this.set(readRevocation().watermarks);
    },
  });
  new Gauge({
    name: 'verifier_revocation_store_current',
    help: '1 while the revocation view is current (0: the shared store is unreachable).',
    registers: [registry],
    collect() {
      if (readRevocation) this.set(readRevocation().current ? 1 : 0);
    },
  });

  return {
    registry,
    decision(reason) {
      let count = decisionCounts.get(reason);
      if (count === undefined) {
        const result = reason === 'allowed' ? 'allow' : `deny_${statusFor(reason)}`;
        count = { labels: { result, reason }, pending: 0 };
        decisionCounts.set(reason, count);
      }
      count.pending++;
    },
    cacheHit: () => void lookups.hit++,
    cacheMiss: () => void lookups.miss++,
    jwksFetch: (issuer, outcome) => jwksFetches.labels(issuer, outcome).inc(),
    observeVerification: (seconds) => verification.observe(seconds),
    setTransport(name) {
      transport.reset();
      transport.labels(name).set(1);
    },
    watchCache(read) {
      readCache = read;
    },
    watchKeySets(read) {
      readKeySets = read;
    },
    revocationReceived: (channel) => revocations.received.labels(channel).inc(),
    revocationApplied: (channel, event) => revocations.applied.labels(channel, event).inc(),
    revocationRefused: (channel, reason) => revocations.refused.labels(channel, reason).inc(),
    revocationUnchecked: () => void unchecked++,
    observeRevocationStore: (operation, seconds) =>
      revocations.store.labels(operation).observe(seconds),
    watchRevocation(read) {
      readRevocation = read;
    },
    render: () => registry.metrics(),
  };
}

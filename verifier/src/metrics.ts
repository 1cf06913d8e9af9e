// Prometheus metrics (prom-client) in a registry of our own. The hot path only bumps plain numbers,
// handed to prom-client when /metrics is scraped: prom-client hashes the label set on every inc(),
// and a cached allow should cost less than that.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { statusFor, type DenyCode } from './errors.js';
import { createPlainHistogram } from './plain-histogram.js';
import type { JwksFetchOutcome } from './token/key-set.js';

export type Metrics = ReturnType<typeof createMetrics>;

export type RevocationChannel = 'backchannel_logout' | 'ssf_push' | 'ssf_poll';

const BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1];

/** The verifier's metrics; the decision cache and the key sets are read when scraped. */
export function createMetrics(
  cache: { readonly size: number; readonly bytes: number },
  keySets: ReadonlyMap<string, { isReady(): boolean }>,
  defaultMetrics = true,
) {
  const registry = new Registry();
  const registers = [registry];
  if (defaultMetrics) collectDefaultMetrics({ register: registry, prefix: 'verifier_' });

  /** A counter bumped as a plain number per key; a key's label set is built on its first use. */
  function pendingCounter<K extends string>(
    name: string,
    help: string,
    labelsOf: (key: K) => Record<string, string>,
    labelNames: string[] = [],
  ) {
    const counts = new Map<K, { labels: Record<string, string>; pending: number }>();
    new Counter({
      name,
      help,
      labelNames,
      registers,
      collect() {
        for (const count of counts.values()) {
          if (count.pending > 0) this.inc(count.labels, count.pending);
          count.pending = 0;
        }
      },
    });
    // The last key's count kept at hand: a run of one outcome (cached allows, cache hits) bumps a
    // number after one comparison of the same interned string, with no Map lookup.
    let lastKey: K | undefined;
    let last = { labels: {}, pending: 0 };
    return (key: K) => {
      if (key !== lastKey) {
        let count = counts.get(key);
        if (count === undefined) counts.set(key, (count = { labels: labelsOf(key), pending: 0 }));
        lastKey = key;
        last = count;
      }
      last.pending++;
    };
  }
  /**
   * pendingCounter for two labels: the count of (`a`, `b`) found in two small maps, with no key
   * string built per bump (the revocation receivers count every junk push).
   */
  function pendingCounter2<A extends string, B extends string>(
    name: string,
    help: string,
    labelNames: readonly [string, string],
  ) {
    type Count = { labels: Record<string, string>; pending: number };
    const counts = new Map<A, Map<B, Count>>();
    new Counter({
      name,
      help,
      labelNames: [...labelNames],
      registers,
      collect() {
        for (const byB of counts.values())
          for (const count of byB.values()) {
            if (count.pending > 0) this.inc(count.labels, count.pending);
            count.pending = 0;
          }
      },
    });
    return (a: A, b: B) => {
      let byB = counts.get(a);
      if (byB === undefined) counts.set(a, (byB = new Map<B, Count>()));
      let count = byB.get(b);
      if (count === undefined)
        byB.set(b, (count = { labels: { [labelNames[0]]: a, [labelNames[1]]: b }, pending: 0 }));
      count.pending++;
    };
  }
  /** A gauge read when scraped. */
  const gauge = (name: string, help: string, read: () => number) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        this.set(read());
      },
    });
  /** A counter bumped with its label values in `labelNames` order (off the hot path). */
  function counter<V extends string[]>(name: string, help: string, labelNames: string[]) {
    const metric = new Counter({ name, help, labelNames, registers });
    return (...values: V) => metric.labels(...values).inc();
  }

  const countUnchecked = pendingCounter(
    'verifier_revocation_unchecked_total',
    'Tokens served while the shared revocation store was unreachable (`checked` policies).',
    () => ({}),
  );
  gauge('verifier_cache_entries', 'Decisions currently cached.', () => cache.size);
  gauge('verifier_cache_bytes', 'Estimated bytes held by the decision cache.', () => cache.bytes);
  new Gauge({
    name: 'verifier_jwks_ready',
    help: '1 while the issuer has a usable key set.',
    labelNames: ['issuer'],
    registers,
    collect() {
      for (const [issuer, keySet] of keySets) this.set({ issuer }, keySet.isReady() ? 1 : 0);
    },
  });
  const store = new Histogram({
    name: 'verifier_revocation_store_seconds',
    help: 'Time of one shared revocation store command, by operation.',
    labelNames: ['operation'],
    buckets: BUCKETS,
    registers,
  });
  let readRevocation:
    | (() => { watermarks: number; current: boolean; capacity: number; complete: boolean })
    | undefined;
  gauge(
    'verifier_revocation_watermarks',
    'Revocation watermarks held (per subject, session or e-mail address).',
    () => readRevocation?.().watermarks ?? 0,
  );
  gauge(
    'verifier_revocation_store_current',
    '1 while the revocation view is current (0: the shared store is unreachable).',
    () => (readRevocation?.().current ? 1 : 0),
  );
  gauge(
    'verifier_revocation_view_capacity',
    'Bound of the revocation view (`revocation.viewMaxEntries`): at it, new revocations are refused with 503.',
    () => readRevocation?.().capacity ?? 0,
  );
  gauge(
    'verifier_revocation_view_complete',
    '0 while the full view misses a watermark of the shared store: tokens it cannot clear are refused.',
    () => (readRevocation === undefined || readRevocation().complete ? 1 : 0),
  );

  const configInfo = new Gauge({
    name: 'verifier_config_info',
    help: 'The live configuration: 1 for its generation (1 at start, one more per applied reload) and the SHA-256 of its file (first 16 hex digits; `env` without a file).',
    labelNames: ['generation', 'digest'],
    registers,
  });

  return {
    registry,
    /** The configuration now deciding requests: the one series of `verifier_config_info`. */
    configVersion(generation: number, digest: string) {
      configInfo.reset();
      configInfo.set({ generation: String(generation), digest }, 1);
    },
    configReload: counter<[outcome: 'applied' | 'refused']>(
      'verifier_config_reloads_total',
      'Changes of the configuration file seen by the verifier, by outcome (applied, refused: invalid, or a setting only a restart applies; the running configuration kept).',
      ['outcome'],
    ),
    decision: pendingCounter(
      'verifier_decisions_total',
      'Answers of /verify by result (allow, deny_401, deny_403) and reason.',
      (reason: 'allowed' | DenyCode) => ({
        result: reason === 'allowed' ? 'allow' : `deny_${statusFor(reason)}`,
        reason,
      }),
      ['result', 'reason'],
    ),
    cacheLookup: pendingCounter(
      'verifier_cache_lookups_total',
      'Decision cache lookups by outcome (hit, miss).',
      (outcome: 'hit' | 'miss') => ({ outcome }),
      ['outcome'],
    ),
    jwksFetch: counter<[issuer: string, outcome: JwksFetchOutcome]>(
      'verifier_jwks_fetches_total',
      'JWKS fetches by issuer and outcome (ok, error, invalid).',
      ['issuer', 'outcome'],
    ),
    /** One full (uncached) verification's seconds: plain numbers, as a miss observes each. */
    verification: createPlainHistogram({
      name: 'verifier_verification_seconds',
      help: 'Time of one full token verification (cache misses only).',
      buckets: [...BUCKETS, 5],
      registry,
    }),
    // Pushed revocation (revocation/): per logout token or SET, by the channel it came on.
    // Bumped as plain numbers, as the decisions are: a flood of junk pushes counts every one.
    revocationReceived: pendingCounter(
      'verifier_revocations_received_total',
      'Logout tokens and SETs received, by channel (backchannel_logout, ssf_push, ssf_poll).',
      (channel: RevocationChannel) => ({ channel }),
      ['channel'],
    ),
    revocationApplied: pendingCounter2<RevocationChannel, string>(
      'verifier_revocations_applied_total',
      'Logout tokens and SETs verified and acted on, by channel and event type.',
      ['channel', 'event'],
    ),
    revocationRefused: pendingCounter2<RevocationChannel, string>(
      'verifier_revocations_refused_total',
      "Logout tokens and SETs refused (`rate_limited`: a forgery past its key's budget of failed signature checks), or acknowledged and ignored, by channel and reason.",
      ['channel', 'reason'],
    ),
    revocationUnchecked: () => countUnchecked(''),
    observeRevocationStore: (operation: string, seconds: number) =>
      store.observe({ operation }, seconds),
    /** Reads the view's size, bound and state when scraped. */
    watchRevocation(read: NonNullable<typeof readRevocation>) {
      readRevocation = read;
    },
    render: () => registry.metrics(),
  };
}

// The issuers' parts a decision reads: a key set per JWT issuer (loaded and refreshed in the
// background) and a verifier per issuer. Built at start, and again for a reloaded configuration:
// an issuer whose key-set settings did not change keeps its key set (no refetch, no gap), one whose
// settings changed loses what the token cache holds for it.
import { isDeepStrictEqual } from 'node:util';
import type { Clock } from '../clock.js';
import type { IssuerConfig, VerifierConfig } from '../config/model.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { createEndpointResolver } from './discovery.js';
import { createJwtVerifier, type JwtVerifier } from './jwt-verifier.js';
import { createKeySet, type KeySet } from './key-set.js';
import { createOpaqueVerifier, type OpaqueVerifier } from './opaque-verifier.js';
import type { TokenCache } from './token-cache.js';

type Settings = Pick<VerifierConfig, 'issuers' | 'policies' | 'fetchTimeout' | 'jwks'>;

/** One configuration's issuers, built and not yet live: `commit` makes them so. */
export interface PreparedIssuers {
  readonly verifiers: ReadonlyMap<string, JwtVerifier | OpaqueVerifier>;
  /** Every JWT issuer's key set, the kept ones and the new ones. */
  readonly keySets: ReadonlyMap<string, KeySet>;
  /** Issuers whose cached tokens may no longer be reused ('all': the cached claims changed). */
  readonly stale: ReadonlySet<string> | 'all';
  /**
   * The token cache's key epoch (token-verifier.ts): a new one whenever `stale` is not empty, so
   * what an old verification still in flight stores is never read under these settings.
   */
  readonly keyEpoch: string;
  /** What the next reload is compared with, once this is live. */
  readonly settings: IssuersInUse;
  /** Loads the new key sets (failures leave them unready, as at start). */
  start(): Promise<void>;
  /** Stops the new key sets of a configuration that will not go live. */
  discard(): void;
}

interface IssuersInUse {
  readonly issuers: ReadonlyMap<string, IssuerConfig>;
  /** Whether the verifiers read (and the cache keeps) the step-up claims. */
  readonly authentication: boolean;
}

/** Step-up claims are read (and cached) only when some policy checks them. */
export const readsAuthentication = (config: Pick<VerifierConfig, 'policies'>) =>
  [...config.policies.values()].some(
    (policy) => policy.acrValues ?? policy.amrValues ?? policy.maxAge,
  );

/** What decides whether a key set can be kept: where its keys come from. */
const keySource = (issuer: IssuerConfig) =>
  issuer.type === 'jwt' ? { jwksUri: issuer.jwksUri, allowHttp: issuer.allowHttp } : undefined;

export function createIssuerRuntime(deps: {
  /** The live key sets, changed in place on commit: whoever holds the map sees the live ones. */
  readonly keySets: Map<string, KeySet>;
  readonly cache: TokenCache;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly now: Clock;
}) {
  const { keySets, cache, metrics, logger, now } = deps;
  let live: IssuersInUse | undefined;
  let epoch = 0;

  function newKeySet(config: Settings, settings: IssuerConfig & { type: 'jwt' }): KeySet {
    const { issuer } = settings;
    const log = logger.child({ issuer });
    const fetching = { issuer, timeout: config.fetchTimeout, allowHttp: settings.allowHttp };
    return createKeySet({
      ...fetching,
      ...config.jwks,
      resolveUri: createEndpointResolver(fetching, settings.jwksUri, 'jwks_uri'),
      now,
      onFetch(outcome, detail) {
        metrics.jwksFetch(issuer, outcome);
        if (outcome === 'ok') log.debug('key set loaded');
        else log.warn({ outcome, detail }, 'key set fetch failed; keeping the last good set');
      },
      onKeysRemoved(kids) {
        const dropped = cache.dropKeys(issuer, kids);
        log.info({ kids: [...kids], dropped }, 'keys left the key set; cached decisions dropped');
      },
    });
  }

  return {
    /** The issuers of `config` built beside the live ones; nothing live changes until `commit`. */
    prepare(config: Settings): PreparedIssuers {
      const authentication = readsAuthentication(config);
      const verifiers = new Map<string, JwtVerifier | OpaqueVerifier>();
      const next = new Map<string, KeySet>();
      const fresh: KeySet[] = [];
      const stale = new Set<string>();
      for (const settings of config.issuers.values()) {
        const { issuer } = settings;
        const before = live?.issuers.get(issuer);
        if (before !== undefined && !isDeepStrictEqual(before, settings)) stale.add(issuer);
        if (settings.type !== 'jwt') {
          verifiers.set(issuer, createOpaqueVerifier(settings, now, { authentication }));
          continue;
        }
        const kept = keySets.get(issuer);
        const keySet =
          kept !== undefined && before && isDeepStrictEqual(keySource(before), keySource(settings))
            ? kept
            : newKeySet(config, settings);
        if (keySet !== kept) fresh.push(keySet);
        next.set(issuer, keySet);
        verifiers.set(issuer, createJwtVerifier(settings, keySet, now, { authentication }));
      }
      for (const issuer of live?.issuers.keys() ?? [])
        if (!config.issuers.has(issuer)) stale.add(issuer);
      const dropped = live !== undefined && live.authentication !== authentication ? 'all' : stale;
      const nextEpoch = dropped === 'all' || dropped.size > 0 ? epoch + 1 : epoch;
      return {
        verifiers,
        keySets: next,
        stale: dropped,
        keyEpoch: nextEpoch === 0 ? '' : `${nextEpoch}\u0001`,
        settings: { issuers: config.issuers, authentication },
        start: async () => void (await Promise.all(fresh.map((keySet) => keySet.start()))),
        discard: () => fresh.forEach((keySet) => keySet.stop()),
      };
    },
    /**
     * Makes `prepared` live: its key sets replace the live ones (a replaced or removed one stops
     * refreshing) and the token cache forgets what the changed issuers proved. Returns how many
     * cached tokens were dropped.
     */
    commit(prepared: PreparedIssuers): number {
      for (const [issuer, keySet] of keySets)
        if (prepared.keySets.get(issuer) !== keySet) {
          keySet.stop();
          keySets.delete(issuer);
        }
      for (const [issuer, keySet] of prepared.keySets) keySets.set(issuer, keySet);
      live = prepared.settings;
      if (prepared.keyEpoch !== '') epoch = Number.parseInt(prepared.keyEpoch, 10);
      const { stale } = prepared;
      return stale === 'all' || stale.size > 0 ? cache.dropIssuers(stale) : 0;
    },
    /** Stops refreshing every live key set. */
    stop(): void {
      for (const keySet of keySets.values()) keySet.stop();
    },
  };
}

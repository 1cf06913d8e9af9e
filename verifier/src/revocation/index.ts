// Pushed revocation for the verifier: builds the store, the per-request check and the receivers
// from the configuration. Parts: store.ts / redis-store.ts (watermarks and `jti`s), check.ts (per
// request), revocation.ts (writing watermarks), event-token.ts (verifying logout tokens and
// Shared Signals SETs), set-events.ts (what a SET asks for), receiver.ts (the endpoints),
// poller.ts (RFC 8936 poll). The transmitter's keys come only from the `jwks_uri` of its
// `/.well-known/ssf-configuration` (SSF 1.0 §7.1), which must name it as `issuer`.
import type { VerifierConfig } from '../config/model.js';
import { createEndpointResolver } from '../token/discovery.js';
import { createKeySet, type KeySet } from '../token/key-set.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { Answer, ReceivedRequest, RevocationCheck } from '../decision/plugins.js';
import { createRevocationCheck } from './check.js';
import { createLogoutTokenVerifier, createSetVerifier } from './event-token.js';
import { createPoller, type Poller } from './poller.js';
import { createLogoutReceiver, createPushReceiver, createSetProcessor } from './receiver.js';
import { createRedisRevocationStore } from './redis-store.js';
import { createRevocationApplier, tokenLifetimes } from './revocation.js';
import { createMemoryRevocationStore, type RevocationStore } from './store.js';

export interface RevocationRuntime {
  readonly store: RevocationStore;
  readonly check: RevocationCheck;
  /** POST /backchannel-logout; undefined when no issuer lists logout audiences. */
  readonly receiveLogout: ((request: ReceivedRequest) => Promise<Answer>) | undefined;
  /** POST /ssf/events; undefined without a transmitter or with push off. */
  readonly receivePush: ((request: ReceivedRequest) => Promise<Answer>) | undefined;
  readonly poller: Poller | undefined;
  /** The transmitter's key set, loaded with the issuers' ones. */
  readonly transmitterKeys: KeySet | undefined;
  /** Cap on NGINX's reuse of an answer: the latency bound minus NGINX's rounding second. */
  readonly edgeTtl: number;
  /** True when the view is current, or no policy has to refuse without it. */
  isReady(): boolean;
  /** Why /readyz is not a plain `ok`, or undefined. */
  note(): string | undefined;
  start(): void;
  close(): Promise<void>;
}

/** True when anything can push a revocation here: the whole feature is off otherwise. */
export function revocationEnabled(config: VerifierConfig): boolean {
  return (
    config.revocation.ssf.transmitter !== undefined ||
    [...config.issuers.values()].some((i) => i.type === 'jwt' && i.logoutAudiences.length > 0)
  );
}

export function createRevocationRuntime(
  config: VerifierConfig,
  deps: {
    readonly keySets: ReadonlyMap<string, KeySet>;
    readonly metrics: Metrics;
    readonly logger: Logger;
    readonly now: () => number;
  },
): RevocationRuntime {
  const { metrics, logger, now } = deps;
  const settings = config.revocation;
  const replayTtl = settings.logoutTokenMaxAge * 2;
  let lastStoreWarning = 0;
  const store =
    settings.store === 'memory'
      ? createMemoryRevocationStore({ maxEntries: settings.replayMaxEntries, replayTtl, now })
      : createRedisRevocationStore({
          url: settings.store,
          password: config.dpop.replayPassword,
          maxEntries: settings.replayMaxEntries,
          replayTtl,
          now,
          onError(message) {
            if (now() - lastStoreWarning < 1000) return;
            lastStoreWarning = now();
            logger.warn({ err: message }, 'revocation store unreachable');
          },
          onLatency: (operation, seconds) => metrics.observeRevocationStore(operation, seconds),
        });
  const parts = {
    store,
    apply: createRevocationApplier(store, tokenLifetimes(config), now),
    metrics,
    logger,
    now,
  };
  const verifyLogout = createLogoutTokenVerifier(config, deps.keySets, now);

  const { ssf } = settings;
  let transmitterKeys: KeySet | undefined;
  let receivePush: RevocationRuntime['receivePush'];
  let poller: Poller | undefined;
  if (ssf.transmitter !== undefined && ssf.audience !== undefined) {
    const transmitter = ssf.transmitter;
    transmitterKeys = createKeySet({
      issuer: transmitter,
      resolveUri: createEndpointResolver(
        { issuer: transmitter, timeout: config.fetchTimeout, allowHttp: ssf.allowHttp },
        undefined,
        'jwks_uri',
        'ssf-configuration',
      ),
      ...config.jwks,
      timeout: config.fetchTimeout,
      allowHttp: ssf.allowHttp,
      now,
      onFetch(outcome, detail) {
        metrics.jwksFetch(transmitter, outcome);
        if (outcome !== 'ok')
          logger.warn({ transmitter, outcome, detail }, 'SSF key set fetch failed');
      },
    });
    const processSet = createSetProcessor(
      parts,
      createSetVerifier(transmitter, ssf.audience, transmitterKeys, now),
      transmitter,
    );
    if (ssf.push) receivePush = createPushReceiver(processSet);
    if (ssf.pollEndpoint !== undefined)
      poller = createPoller({
        endpoint: ssf.pollEndpoint,
        interval: ssf.pollInterval,
        token: ssf.pollToken,
        timeout: config.fetchTimeout,
        allowHttp: ssf.allowHttp,
        processSet,
        logger,
      });
  }

  const required = [...config.policies.values()].some((p) => p.revocation === 'required');
  metrics.watchRevocation(() => ({ watermarks: store.size, current: store.isCurrent() }));
  return {
    store,
    check: createRevocationCheck(store, () => metrics.revocationUnchecked()),
    receiveLogout: verifyLogout && createLogoutReceiver(parts, verifyLogout),
    receivePush,
    poller,
    transmitterKeys,
    edgeTtl: Math.max(0, Math.min(config.cache.edgeTtl, settings.maxLatency - 1)),
    isReady: () => !required || store.isCurrent(),
    note: () =>
      store.isCurrent()
        ? undefined
        : required
          ? 'revocation store unreachable: policies that require revocation checks refuse'
          : 'revocation store unreachable: tokens served without revocation checks',
    start() {
      void transmitterKeys?.start();
      poller?.start();
    },
    async close() {
      poller?.stop();
      transmitterKeys?.stop();
      await store.close();
    },
  };
}

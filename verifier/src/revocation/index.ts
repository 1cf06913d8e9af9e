// Pushed revocation (docs/revocation.md): builds the store, the per-request check, the receivers
// and the poller from the configuration. The transmitter's keys come only from the `jwks_uri` of
// its `/.well-known/ssf-configuration` (SSF 1.0 §7.1), which must name it as `issuer`.
import type { VerifierConfig } from '../config/model.js';
import { createEndpointResolver } from '../token/discovery.js';
import { createKeySet, type KeySet } from '../token/key-set.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { Receiver, RevocationCheck } from '../decision/plugins.js';
import { createLogoutTokenVerifier } from './event-token.js';
import { createPoller, type Poller } from './poller.js';
import { createEventProcessor, createLogoutReceiver, createPushReceiver } from './receiver.js';
import { createRedisRevocationStore } from './redis-store.js';
import { createSetVerifier } from './set-events.js';
import { createMemoryRevocationStore, type RevocationStore } from './store.js';
import { createRevocationApplier, createRevocationCheck, tokenLifetimes } from './watermarks.js';

export interface RevocationRuntime {
  readonly store: RevocationStore;
  readonly check: RevocationCheck;
  /** POST /backchannel-logout (an issuer lists logout audiences), /ssf/events (push is on). */
  readonly receivers: ReadonlyMap<string, Receiver>;
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

/**
 * The runtime when anything can push a revocation here (an issuer with `logoutAudiences`, or a
 * transmitter); undefined otherwise, and then the gate connects to no revocation store at all.
 */
export function createRevocationRuntime(
  config: VerifierConfig,
  deps: {
    readonly keySets: ReadonlyMap<string, KeySet>;
    readonly metrics: Metrics;
    readonly logger: Logger;
    readonly now: () => number;
  },
): RevocationRuntime | undefined {
  const { metrics, logger, now } = deps;
  const settings = config.revocation;
  const { ssf } = settings;
  const verifyLogout = createLogoutTokenVerifier(config, deps.keySets, now);
  if (verifyLogout === undefined && ssf.transmitter === undefined) return undefined;

  const common = {
    maxEntries: settings.replayMaxEntries,
    replayTtl: settings.logoutTokenMaxAge * 2,
    now,
  };
  let lastStoreWarning = 0;
  const store =
    settings.store === 'memory'
      ? createMemoryRevocationStore(common)
      : createRedisRevocationStore({
          ...common,
          url: settings.store,
          password: config.dpop.replayPassword,
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
  };

  const receivers = new Map<string, Receiver>();
  if (verifyLogout !== undefined) {
    const processLogout = createEventProcessor(parts, verifyLogout, 'bcl');
    receivers.set('/backchannel-logout', createLogoutReceiver(processLogout));
  }
  let transmitterKeys: KeySet | undefined;
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
    const verifySet = createSetVerifier(transmitter, ssf.audience, transmitterKeys, now);
    const processSet = createEventProcessor(parts, verifySet, 'set');
    if (ssf.push) receivers.set('/ssf/events', createPushReceiver(processSet));
    poller = createPoller(config, processSet, logger);
  }

  const required = [...config.policies.values()].some((p) => p.revocation === 'required');
  metrics.watchRevocation(() => ({ watermarks: store.size, current: store.isCurrent() }));
  return {
    store,
    check: createRevocationCheck(store, () => metrics.revocationUnchecked()),
    receivers,
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

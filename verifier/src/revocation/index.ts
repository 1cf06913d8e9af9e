// Pushed revocation (docs/revocation.md): builds the store, the per-request check, the receivers
// and the poller from the configuration. The transmitter's keys come only from the `jwks_uri` of
// its `/.well-known/ssf-configuration` (SSF 1.0 §7.1), which must name it as `issuer`.
import type { VerifierConfig } from '../config/model.js';
import type { Receiver } from '../decision/decision.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { redisSettingsOf } from '../redis/connection.js';
import { createEndpointResolver } from '../token/discovery.js';
import { createKeySet, type KeySet } from '../token/key-set.js';
import { createLogoutTokenVerifier, createSetVerifier } from './event-token.js';
import { createLogoutReceiver, createPoller, createPushReceiver } from './receiver.js';
import { createRevocationStore } from './store.js';
import { createRevocationApplier, createRevocationCheck } from './watermarks.js';

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
) {
  const { metrics, logger, now } = deps;
  const { revocation: settings } = config;
  const { transmitter, audience, allowHttp } = settings.ssf;
  const verifyLogout = createLogoutTokenVerifier(config, deps.keySets, now);
  if (verifyLogout === undefined && transmitter === undefined) return undefined;

  let lastStoreWarning = 0;
  const store = createRevocationStore({
    url: settings.store === 'memory' ? undefined : settings.store,
    redis: redisSettingsOf(config),
    maxEntries: settings.replayMaxEntries,
    replayTtl: settings.logoutTokenMaxAge * 2,
    now,
    onError(message) {
      if (now() - lastStoreWarning < 1000) return;
      lastStoreWarning = now();
      logger.warn({ err: message }, 'revocation store unreachable');
    },
    onLatency: (operation, seconds) => metrics.observeRevocationStore(operation, seconds),
  });
  // How long a token of each issuer can stay valid: JWTs the longest accepted lifetime plus the
  // tolerance; opaque tokens their answer cache (after it the IdP is asked again).
  const lifetimes = new Map(
    [...config.issuers.values()].map((issuer) => [
      issuer.issuer,
      issuer.type === 'jwt' ? issuer.maxTokenAge + issuer.clockTolerance : issuer.cacheTtl,
    ]),
  );
  const apply = createRevocationApplier(store, lifetimes, now);
  const parts = { store, apply, metrics, logger };

  /** POST /backchannel-logout (an issuer lists logout audiences), /ssf/events (push is on). */
  const receivers = new Map<string, Receiver>();
  if (verifyLogout !== undefined)
    receivers.set('/backchannel-logout', createLogoutReceiver(parts, verifyLogout));
  let transmitterKeys: KeySet | undefined;
  let poller: ReturnType<typeof createPoller>;
  if (transmitter !== undefined && audience !== undefined) {
    const fetching = { issuer: transmitter, timeout: config.fetchTimeout, allowHttp };
    transmitterKeys = createKeySet({
      resolveUri: createEndpointResolver(fetching, undefined, 'jwks_uri', 'ssf-configuration'),
      ...config.jwks,
      ...fetching,
      now,
      onFetch(outcome, detail) {
        metrics.jwksFetch(transmitter, outcome);
        if (outcome !== 'ok')
          logger.warn({ transmitter, outcome, detail }, 'SSF key set fetch failed');
      },
    });
    const verifySet = createSetVerifier(transmitter, audience, transmitterKeys, now);
    if (settings.ssf.push) receivers.set('/ssf/events', createPushReceiver(parts, verifySet));
    poller = createPoller(config, parts, verifySet);
  }

  const required = [...config.policies.values()].some((p) => p.revocation === 'required');
  metrics.watchRevocation(() => ({ watermarks: store.size, current: store.isCurrent() }));
  return {
    store,
    check: createRevocationCheck(store, () => metrics.revocationUnchecked()),
    receivers: receivers as ReadonlyMap<string, Receiver>,
    poller,
    /** Loaded with the issuers' key sets. */
    transmitterKeys,
    /** Cap on NGINX's reuse of an answer: the latency bound minus NGINX's rounding second. */
    edgeTtl: Math.max(0, Math.min(config.cache.edgeTtl, settings.maxLatency - 1)),
    /** True when the view is current, or no policy has to refuse without it. */
    isReady: () => !required || store.isCurrent(),
    /** Why /readyz is not a plain `ok`, or undefined. */
    note: () =>
      store.isCurrent()
        ? undefined
        : required
          ? 'revocation store unreachable: policies that require revocation checks refuse'
          : 'revocation store unreachable: tokens served without revocation checks',
    start() {
      void transmitterKeys?.start();
      void poller?.start();
    },
    close() {
      poller?.stop();
      transmitterKeys?.stop();
      return store.close();
    },
  };
}

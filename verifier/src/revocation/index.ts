// Pushed revocation (docs/revocation.md): builds the store, the per-request check, the receivers
// and the poller from the configuration. What every part of the gate shares is wired by the
// service's root and handed in: the key sets (the issuers' and the transmitter's), the budget of
// failed signature checks, metrics and logs.
import type { Clock } from '../clock.js';
import type { VerifierConfig } from '../config/model.js';
import type { Receiver } from '../decision/decision.js';
import type { Logger } from '../log.js';
import type { Metrics, RevocationChannel } from '../metrics.js';
import { redisSettingsOf } from '../redis/connection.js';
import type { KeySet } from '../token/key-set.js';
import {
  createLogoutTokenVerifier,
  createSetVerifier,
  SET_CLOCK_TOLERANCE,
} from './event-token.js';
import { createLogThrottle } from './log-throttle.js';
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
    /**
     * The Shared Signals transmitter's keys (`revocation.ssf.transmitter`), started and stopped
     * by the service with the issuers' sets; undefined without a transmitter.
     */
    readonly transmitterKeys: KeySet | undefined;
    readonly metrics: Metrics;
    readonly logger: Logger;
    readonly now: Clock;
    /**
     * Makes the budget of failed signature checks per sender key (`receiverRate`,
     * `receiverBurst`): true while the key may fail once more; the service wires a token bucket
     * of http/ here. Called only when a receiver exists: the bucket preallocates its slots.
     */
    readonly createSpendFailure: () => (key: string) => boolean;
  },
) {
  const { metrics, logger, now } = deps;
  const { revocation: settings } = config;
  const { transmitter, audience } = settings.ssf;
  const verifyLogout = createLogoutTokenVerifier(config, deps.keySets, now);
  if (verifyLogout === undefined && transmitter === undefined) return undefined;

  let lastStoreWarning = -Infinity;
  const throttle = createLogThrottle(now);
  const redis = redisSettingsOf(config);
  const store = createRevocationStore({
    url: redis.url,
    redis,
    viewMaxEntries: settings.viewMaxEntries,
    replayMaxEntries: settings.replayMaxEntries,
    now,
    onError(message) {
      // At most one line a second.
      if (now() - lastStoreWarning < 1) return;
      lastStoreWarning = now();
      logger.warn({ err: message }, 'revocation store trouble');
    },
    onFull(message) {
      // An error: a logout is not enforced here. At most one line a second, with the count.
      const suppressed = throttle('view_full');
      if (suppressed !== undefined) logger.error({ err: message, suppressed }, 'revocation lost');
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
  // A `jti` is kept as long as its token could be accepted again: from an `iat` up to the
  // tolerance ahead of our clock until its age and the tolerance have passed.
  const tolerance = Math.max(
    0,
    ...[...config.issuers.values()].map((i) => (i.type === 'jwt' ? i.clockTolerance : 0)),
  );
  const logoutReplayTtl = Math.max(
    2 * settings.logoutTokenMaxAge,
    settings.logoutTokenMaxAge + 2 * tolerance,
  );
  const setReplayTtl = settings.setMaxAge + 2 * SET_CLOCK_TOLERANCE;
  const parts = {
    store,
    apply,
    metrics,
    logger,
    throttle,
    replayTtl: (channel: RevocationChannel) =>
      channel === 'backchannel_logout' ? logoutReplayTtl : setReplayTtl,
    // Spent only by signatures that did not verify (event-token.ts): past it, a forgery under
    // that key gets 429 + Retry-After and no log line; a real logout never asks it.
    spendFailure: deps.createSpendFailure(),
    retryAfter: String(Math.max(1, Math.ceil(1 / settings.receiverRate))),
  };

  /** POST /backchannel-logout (an issuer lists logout audiences), /ssf/events (push is on). */
  const receivers = new Map<string, Receiver>();
  if (verifyLogout !== undefined)
    receivers.set('/backchannel-logout', createLogoutReceiver(parts, verifyLogout));
  const { transmitterKeys } = deps;
  let poller: ReturnType<typeof createPoller>;
  if (transmitter !== undefined && audience !== undefined && transmitterKeys !== undefined) {
    const verifySet = createSetVerifier(transmitter, audience, transmitterKeys, now, {
      maxAge: settings.setMaxAge,
      emailIssuer: settings.ssf.emailIssuer,
    });
    if (settings.ssf.push) receivers.set('/ssf/events', createPushReceiver(parts, verifySet));
    poller = createPoller(config, parts, verifySet);
  }

  if (redis.url === undefined && receivers.size > 0)
    logger.warn(
      { receivers: [...receivers.keys()] },
      'revocation receivers use the in-memory store: a revocation is enforced only by the replica that received it; with more than one replica set VERIFIER_REDIS_URL',
    );
  const required = [...config.policies.values()].some((p) => p.revocation === 'required');
  metrics.watchRevocation(() => ({
    watermarks: store.size,
    current: store.isCurrent(),
    capacity: store.capacity,
    complete: store.isComplete(),
  }));
  return {
    store,
    check: createRevocationCheck(store, () => metrics.revocationUnchecked()),
    receivers: receivers as ReadonlyMap<string, Receiver>,
    poller,
    transmitterKeys,
    /** Cap on NGINX's reuse of an answer: the latency bound minus NGINX's rounding second. */
    edgeTtl: Math.max(0, Math.min(config.cache.edgeTtl, settings.maxLatency - 1)),
    /**
     * True when the view is current (or no policy has to refuse without it) and complete (a view
     * that overflowed refuses every token it cannot clear).
     */
    isReady: () => (!required || store.isCurrent()) && store.isComplete(),
    /** Why /readyz is not a plain `ok`, or undefined. */
    note(): string | undefined {
      if (!store.isComplete())
        return 'revocation view overflowed: tokens it cannot clear are refused until it holds every watermark';
      if (store.isOverflowing())
        return required
          ? 'revocation view full: a revocation could not be recorded, so policies that require revocation checks refuse until it is or its tokens expired'
          : 'revocation view full: a revocation could not be recorded; tokens served without revocation checks until it is or its tokens expired';
      if (!store.isCurrent())
        return required
          ? 'revocation store unreachable: policies that require revocation checks refuse'
          : 'revocation store unreachable: tokens served without revocation checks';
      if (store.size >= store.capacity)
        return 'revocation view full: new revocations are refused (503) until watermarks expire';
      return undefined;
    },
    start() {
      void poller?.start();
    },
    close() {
      poller?.stop();
      return store.close();
    },
  };
}

// Builds a running verifier from a configuration: key sets, verifiers, cache, metrics, routes and
// a transport. main.ts calls this; tests and the benchmark call it too, in-process.
import { createAuthorizer } from './decision/authorize.js';
import { createCloudFrontGrant } from './cloudfront/gate-decorator.js';
import type { Listen, VerifierConfig } from './config/model.js';
import { createDecisionCache } from './decision/decision-cache.js';
import type { Grant } from './decision/plugins.js';
import { createEndpointResolver } from './token/discovery.js';
import { createDpopRuntime } from './dpop/index.js';
import { createJwtVerifier, type JwtVerifier } from './token/jwt-verifier.js';
import { createKeySet, type KeySet } from './token/key-set.js';
import type { Logger } from './log.js';
import { createMetrics } from './metrics.js';
import { createOpaqueVerifier, type OpaqueVerifier } from './token/opaque-verifier.js';
import { createRevocationRuntime } from './revocation/index.js';
import { createCallLimit } from './http/call-limit.js';
import { createRoutes } from './http/routes.js';
import { createTransport, loadUws } from './http/transport.js';

export type VerifierService = ReturnType<typeof createVerifierService>;

export interface ServiceOptions {
  readonly logger: Logger;
  /** Milliseconds since the epoch; injectable for tests. */
  readonly now?: () => number;
  readonly defaultMetrics?: boolean;
}

export function createVerifierService(config: VerifierConfig, options: ServiceOptions) {
  const { logger } = options;
  const now = options.now ?? Date.now;
  const metrics = createMetrics({ defaultMetrics: options.defaultMetrics ?? true });
  const keySets = new Map<string, KeySet>();
  const cache = createDecisionCache({
    ...config.cache,
    now,
    trustedUntil: (issuer) => keySets.get(issuer)?.trustedUntil(),
  });
  const jwtVerifiers = new Map<string, JwtVerifier>();
  const opaqueVerifiers = new Map<string, OpaqueVerifier>();

  for (const issuer of config.issuers.values()) {
    if (issuer.type !== 'jwt') {
      opaqueVerifiers.set(issuer.issuer, createOpaqueVerifier(issuer, now));
      continue;
    }
    const keySet = createKeySet({
      issuer: issuer.issuer,
      resolveUri: createEndpointResolver(
        { issuer: issuer.issuer, timeout: config.fetchTimeout, allowHttp: issuer.allowHttp },
        issuer.jwksUri,
        'jwks_uri',
      ),
      ...config.jwks,
      timeout: config.fetchTimeout,
      allowHttp: issuer.allowHttp,
      now,
      onFetch(outcome, detail) {
        metrics.jwksFetch(issuer.issuer, outcome);
        if (outcome === 'ok') logger.debug({ issuer: issuer.issuer }, 'key set loaded');
        else
          logger.warn(
            { issuer: issuer.issuer, outcome, detail },
            'key set fetch failed; keeping the last good set',
          );
      },
      onKeysRemoved(kids) {
        const dropped = cache.dropKeys(issuer.issuer, kids);
        logger.info(
          { issuer: issuer.issuer, kids: [...kids], dropped },
          'keys left the key set; cached decisions dropped',
        );
      },
    });
    keySets.set(issuer.issuer, keySet);
    jwtVerifiers.set(issuer.issuer, createJwtVerifier(issuer, keySet, now));
  }

  const grants = new Map<string, Grant>();
  for (const policy of config.policies.values()) {
    if (policy.cloudfront === undefined) continue;
    const policyLogger = logger.child({ policy: policy.name });
    grants.set(policy.name, createCloudFrontGrant(policy.cloudfront, policyLogger));
  }

  // Only built when a policy reads DPoP, so a bearer-only gate never connects to a replay store.
  const dpop = [...config.policies.values()].some((policy) => policy.dpop !== 'off')
    ? createDpopRuntime(config.dpop, { now, logger })
    : undefined;
  const revocation = createRevocationRuntime(config, { keySets, metrics, logger, now });
  const isReady = () =>
    [...keySets.values()].every((keySet) => keySet.isReady()) &&
    (dpop?.store.isReady() ?? true) &&
    (revocation?.isReady() ?? true);
  const authorize = createAuthorizer({
    dpop,
    config,
    jwtVerifiers,
    opaqueVerifiers,
    cache,
    logger,
    metrics,
    grants,
    // With a receiver on, NGINX may reuse an answer only within the revocation latency bound.
    edgeTtl: revocation?.edgeTtl ?? config.cache.edgeTtl,
    revocation: revocation?.check,
    now,
  });
  const routes = createRoutes({
    authorize,
    admit: createCallLimit(config.callLimit, now),
    isReady,
    metrics,
    metricsOnMain: config.metricsListen === undefined,
    receivers: revocation?.receivers,
    readinessNote: () => revocation?.note(),
  });
  metrics.watchCache(() => ({ entries: cache.size, bytes: cache.bytes }));
  metrics.watchKeySets(() =>
    [...keySets.values()].map((keySet) => ({ issuer: keySet.issuer, ready: keySet.isReady() })),
  );
  let transport: ReturnType<typeof createTransport> | undefined;
  let metricsListener: typeof transport;

  return {
    authorize,
    routes,
    cache,
    keySets: keySets as ReadonlyMap<string, KeySet>,
    metrics,
    /** Pushed revocation; undefined when no receiver is configured. */
    revocation,
    isReady,
    /** Loads every key set (failures leave the service unready, not dead) and starts refreshing. */
    async start(): Promise<void> {
      revocation?.start();
      await Promise.all([...keySets.values()].map((keySet) => keySet.start()));
    },
    /**
     * Starts the HTTP transport (and the metrics listener when `metricsListen` is set); resolves
     * with the TCP ports (0 on a unix socket).
     */
    async listen(listen: Listen = config.listen, metricsListen = config.metricsListen) {
      const uws = loadUws();
      transport = createTransport(uws, routes);
      const port = await transport.listen(listen);
      let metricsPort: number | undefined;
      if (metricsListen !== undefined) {
        // Its own port, so a scrape port can be opened to monitoring while /verify stays NGINX's.
        metricsListener = createTransport(uws, routes.metricsOnly);
        metricsPort = await metricsListener.listen(metricsListen);
      }
      return { port, metricsPort };
    },
    /** Stops accepting, lets in-flight requests finish (up to `graceMs`), stops refreshing. */
    async stop(graceMs = 4000): Promise<void> {
      for (const keySet of keySets.values()) keySet.stop();
      await Promise.all([transport?.close(graceMs), metricsListener?.close(0)]);
      await dpop?.close();
      await revocation?.close();
    },
  };
}
